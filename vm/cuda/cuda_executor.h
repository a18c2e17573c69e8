// vm/cuda/cuda_executor.h: the GPU VM's executor (CUDA; the same source builds for HIP). It copies
// a ProgramImage to the device once (weights, KV caches, activations with their shared pages,
// instruction table, queues), then each launch uploads only the step block and runs the
// persistent kernel under a host watchdog. Timeout and device errors name the task, exactly like
// the CPU VM, and leave the executor usable.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"
#include "loader/loader.h"
#include "targets/gpu_vendor.h"
#include "vm/executor.h"

namespace amk::vm {
// CUDA and HIP builds of this executor link side by side: vendor-named symbols (targets/gpu_vendor.h).
inline namespace AMK_GPU_VENDOR_NS {

/// Knobs of the GPU executor (defaults are what a Session uses).
struct GpuOptions {
  /// > 0: the loader warp warms L2 with each task's weights when it stages the task (only when the
  /// weight ring is off): -1 = the program's config.pipelining_depth (2 when absent), 0 = off. The
  /// env var AMK_PREFETCH=0 also turns it off. The loader stages pipelining_depth tasks ahead
  /// (1..4) either way.
  int prefetch_depth = -1;
  /// Tasks the loader warp stages ahead of the compute warps (instruction, operands, counter
  /// wait), 1..4: -1 = the program's config.pipelining_depth (2 when absent). The env var
  /// AMK_STAGED_TASKS overrides both (a measuring knob). Always 1 on HIP (no loader wavefront).
  int staged_tasks = -1;
  /// Which worker's queue each block of the persistent kernel runs: block b runs worker
  /// block_workers[b]. Empty = the identity (or the testing knob AMK_BLOCK_WORKERS); otherwise
  /// a permutation of the program's workers, else InvalidArgument. Any permutation computes the
  /// same results; it decides which queue runs on which SM, so that a schedule's heavier queues
  /// can go to the SMs that stream faster (vm/cuda/block_workers.h, docs/SM_BALANCE.md). At
  /// most kMaxParamWorkers (160) workers.
  std::vector<int32_t> block_workers;
  /// For a program whose schedule gives some SMs wider tiles (ScheduleConfig::fast_sms > 0): how
  /// fast each SM streams, by hardware SM id (vm/cuda/sm_speed.h, measure_sm_speeds). Empty =
  /// measured when the executor is made (a few ms). The executor then runs the heavier queues on
  /// the faster SMs: after every launch it reads where each worker ran and, if the placement
  /// moved, hands the next launch a new block_workers table (gpuvm::SmBalancer). Not used when
  /// block_workers or AMK_BLOCK_WORKERS fixes the table; AMK_SM_BALANCE=0 turns it off (a
  /// measuring knob: the wide tiles then run wherever the identity puts them).
  std::vector<double> sm_speeds;
};

/// Resources of the compiled persistent kernel as launched for one image.
struct GpuKernelReport {
  std::string device;
  int workers = 0, sm_count = 0, blocks_per_sm = 0, threads_per_block = 0;
  int regs_per_thread = 0, local_bytes_per_thread = 0, static_smem_bytes = 0, dyn_smem_bytes = 0;
  int prefetch_depth = 0;
  int loader_warps = 0;   ///< warps that stage tasks and stream weights instead of computing
  int staged_tasks = 0;   ///< tasks the loader stages ahead of the compute warps
  /// Whether the loader stages a task while the one before it still waits for its counters
  /// (env AMK_STAGE_WHILE_POLLING=1, a measuring knob; by default it waits until that one is
  /// published, docs/PERFORMANCE.md row 89).
  bool stage_while_polling = false;
  /// When the loader polls the next task's counters: 1 (default) once and then only after the
  /// task before it has finished, 0 at any time, 2 only after that (env AMK_POLL_GATE, a
  /// measuring knob; KernelArgs::poll_gate).
  int poll_gate = 1;
  /// Whether the workers' queue bounds come with the launch (KernelArgs::queue_offsets: at most
  /// kMaxParamWorkers workers; env AMK_QUEUE_BOUNDS_IN_ARGS=0 turns it off, a measuring knob).
  bool queue_bounds_in_args = false;
  /// Which queue each block runs (KernelArgs::block_workers): "identity", the AMK_BLOCK_WORKERS
  /// text, or "set by GpuOptions".
  std::string block_workers = "identity";
  /// The balancing of GpuOptions::sm_speeds: "off", or how many fast SMs the speeds show against
  /// the schedule's fast_sms (updated as launches move tables: see balance_moves).
  std::string sm_balance = "off";
  int balance_moves = 0;  ///< block -> worker tables the balancing has handed out so far
  /// The kernels claim their queues by the SM each block lands on (a build with -DAMK_SM_CLAIM):
  /// with balancing on, the heavy queues then follow the fast SMs in every launch and the table
  /// is only the fallback.
  bool sm_claims = false;
  int ring_slots = 0, ring_slot_bytes = 0;  ///< shared-memory weight ring (0 = off)
  int ring_offset = 0;  ///< bytes from the aligned dynamic shared memory base to the ring (dyn_smem_layout.h)
  /// Most chunks the ring holds unconsumed while a streamed task runs (KernelArgs::ring_streaming_cap;
  /// 0 or >= ring_slots: no cap).
  int ring_streaming_cap = 0;
  int ring_idle_cap = 0;  ///< the same while no streamed task runs (KernelArgs::ring_idle_cap)
  int streamed_tasks = 0;                   ///< queue slots whose weights ride the ring
  bool fold_streams = false;  ///< RMSNORM_MLP_FOLD tasks may ride it (the fold kernel, on sm_90)
  /// Which persistent kernel runs the program (persistent_kernel.h, KernelEntry): "attention" for
  /// programs with ATTENTION_GEMV_ADD, "fold" for those with RMSNORM_MLP_FOLD tasks, "rope" for
  /// those with step-position GEMVs (FUSED recipes 10-12), "default" otherwise.
  std::string kernel = "default";
  int task_blob_bytes = 0;                  ///< host-decoded operands per queue slot (task_blob.h)
  /// One line for logs.
  std::string summary() const;
};

/// A GPU executor over `image` (which must outlive it). Unsupported when the workers cannot all be
/// co-resident (a persistent grid would deadlock) or the device lacks cooperative launch.
Result<std::unique_ptr<Executor>> make_cuda_executor(loader::ProgramImage& image, const GpuOptions& options = {});

/// The kernel report of an executor made by make_cuda_executor (nullptr for other executors).
const GpuKernelReport* gpu_kernel_report(const Executor& executor);

/// Device address of buffer `index` of an executor made by make_cuda_executor (nullptr for other
/// executors or an index out of range). For benchmarks that run other code on the same weights.
const void* gpu_device_buffer(const Executor& executor, int32_t index);

/// The median device time of `launches` cooperative launches (after 20 untimed) of an empty kernel
/// with the geometry of `executor`'s persistent kernel (a GPU executor): what any launch of it
/// costs before it does anything (amk-bench launch prints it beside the empty program).
Status gpu_empty_launch_us(const Executor& executor, int launches, double* median_us);

/// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)", or why there is none.
std::string cuda_device_name();

}  // namespace AMK_GPU_VENDOR_NS
}  // namespace amk::vm
