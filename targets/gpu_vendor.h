// targets/gpu_vendor.h: which GPU vendor this translation unit is compiled for, as a namespace
// name. One binary may link both GPU VMs (amk_vm_cuda and amk_vm_hip, built from the same
// sources), so every symbol those sources define must differ between the two builds: each file
// that declares such symbols opens `inline namespace AMK_GPU_VENDOR_NS` inside its own namespace
// (amk::gpu, amk::vm::gpuvm, the executor in amk::vm). Code keeps writing gpu::lane_id() and
// gpuvm::kernel_launch(); only the mangled names change (vendor_cuda / vendor_hip).
// Each file must open the inline namespace itself: reopening `namespace amk::gpu` does not extend
// an `amk::vendor_x::gpu` declared elsewhere with clang (hipcc), although GCC and nvcc do.
// Includes nothing, so plain host headers can use it.
#pragma once

#if defined(AMK_USE_HIP) || defined(__HIPCC__)
/// The inline namespace that holds this vendor's symbols.
#define AMK_GPU_VENDOR_NS vendor_hip
#else
#define AMK_GPU_VENDOR_NS vendor_cuda
#endif  // AMK_USE_HIP
