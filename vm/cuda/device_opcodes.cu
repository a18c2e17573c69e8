// vm/cuda/device_opcodes.cu: the opcode table of the device dispatch, as this build's device
// compiler saw it (nvcc for CudaVm, hipcc for HipVm: the same source, vm/gpu_vendor_vm.h). The
// table comes from the AMK_DEVICE_OPCODES list that also generates device_execute's switch, and
// device_dispatch.cuh static_asserts it complete in every compile pass; exporting it lets a host
// test compare what each linked GPU VM was built with against ir/opcodes.def, without a GPU.
#include <iterator>

#include "instructions/device_dispatch.cuh"
#include "vm/gpu_vendor_vm.h"

namespace amk::vm {
namespace {
#ifdef AMK_USE_HIP
using ThisVm = HipVm;
#else
using ThisVm = CudaVm;
#endif  // AMK_USE_HIP
}  // namespace

std::vector<int32_t> ThisVm::device_opcodes() {
  return std::vector<int32_t>(std::begin(instructions::kDeviceOpcodes), std::end(instructions::kDeviceOpcodes));
}

}  // namespace amk::vm
