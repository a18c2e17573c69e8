// vm/cuda/cuda_executor.cpp: the GPU executor (host side; CUDA or HIP through targets/gpu.h).
// Upload once: buffers whose host ranges overlap (shared pages, one base pointer) are placed in one
// device range so they share a device base too; weights stay on the device; the tables go in one
// control allocation. Per launch: one small async copy of [step | error slot | progress], the
// cooperative launch, one copy of the error slot back, then a watchdog polls the stream until the
// deadline. Counters climb across launches (epoch thresholds); they are zeroed only after an
// abort or error, on reset_state, and before the epoch product could overflow.
#include "vm/cuda/cuda_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#include "instructions/cpu_dispatch.h"
#include "instructions/device_limits.cuh"
#include "instructions/gemv_like.h"
#include "ir/enums.h"
#include "targets/gpu.h"
#include "vm/cuda/block_workers.h"
#include "vm/cuda/sm_speed.h"
#include "vm/cuda/dyn_smem_layout.h"
#include "vm/cuda/persistent_kernel.h"

namespace amk::vm {
namespace {

using gpuvm::KernelArgs;
using gpuvm::KernelResources;

constexpr size_t kAlign = 256;
inline size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/// Whether the measuring knob `name` is set to exactly `value` (any other setting is ignored).
bool env_is(const char* name, const char* value) {
  const char* env = std::getenv(name);
  return env != nullptr && std::strcmp(env, value) == 0;
}

/// AMK_KERNEL's choice: the named kernel, if it runs every recipe the program has (only the
/// attention kernel runs ATTENTION_GEMV_ADD; only the rope and fold kernels the step-position
/// GEMVs). `attention_row` / `step_gemv`: the program's first instruction of each, or -1. Folds
/// run on every kernel (the plain path where it does not stream them).
Status force_kernel(const char* name, int32_t attention_row, int32_t step_gemv, gpuvm::KernelEntry* kernel) {
  const gpuvm::KernelEntry choices[] = {gpuvm::default_kernel(), gpuvm::fold_kernel(), gpuvm::attention_kernel(),
                                        gpuvm::step_gemv_kernel()};
  const std::string wanted = name;
  std::string names;  // this build's kernels, for the refusal (HIP's four entries are one "default")
  for (const gpuvm::KernelEntry& k : choices)
    if (names.find(k.name) == std::string::npos) names += (names.empty() ? "" : ", ") + std::string(k.name);
  for (const gpuvm::KernelEntry& k : choices) {
    if (wanted != k.name) continue;
    // HIP's four entries are all its one kernel ("default"), which runs every recipe.
    if (attention_row >= 0 && std::strcmp(k.name, gpuvm::attention_kernel().name) != 0)
      return Status(StatusCode::Unsupported, "AMK_KERNEL=" + wanted + ": instruction " + std::to_string(attention_row) +
                                                 " is FUSED ATTENTION_GEMV_ADD, which that kernel does not run");
    if (step_gemv >= 0 && !k.streams_step_gemv)
      return Status(StatusCode::Unsupported, "AMK_KERNEL=" + wanted + ": instruction " + std::to_string(step_gemv) +
                                                 " is FUSED RMSNORM_GEMV_ROPE / _APPEND / _ROPE_APPEND, which that "
                                                 "kernel does not run");
    *kernel = k;
    return Status::ok();
  }
  return Status(StatusCode::InvalidArgument, "AMK_KERNEL=" + wanted + ": not a kernel of this build (" + names + ")");
}

/// Host mirror of the per-launch block the device reads first: [step | error | progress...].
struct StageHeader {
  amk_step_t step;
  amk_error_slot_t error;
};
static_assert(sizeof(StageHeader) % 4 == 0, "progress follows the header as int32");

class CudaExecutor final : public Executor {
 public:
  explicit CudaExecutor(loader::ProgramImage& image) : image_(image) {}
  ~CudaExecutor() override {
    if (stream_ != nullptr) (void)gpu::stream_sync(stream_);
    if (stream_ != nullptr) (void)gpu::stream_destroy(stream_);
    if (ev_begin_ != nullptr) (void)gpu::event_destroy(ev_begin_);
    if (ev_end_ != nullptr) (void)gpu::event_destroy(ev_end_);
    if (d_trace_ != nullptr) (void)gpu::free_device(d_trace_);
    if (d_chunk_trace_ != nullptr) (void)gpu::free_device(d_chunk_trace_);
    if (d_worker_sm_ != nullptr) (void)gpu::free_device(d_worker_sm_);
    if (d_claims_ != nullptr) (void)gpu::free_device(d_claims_);
    if (d_arena_ != nullptr) (void)gpu::free_device(d_arena_);
    if (d_ctrl_ != nullptr) (void)gpu::free_device(d_ctrl_);
    if (d_stream_ != nullptr) (void)gpu::free_device(d_stream_);
    if (h_pinned_ != nullptr) (void)gpu::host_free(h_pinned_);
    if (h_worker_sm_ != nullptr) (void)gpu::host_free(h_worker_sm_);
  }

  Status init(const GpuOptions& options) {
    const amk_program_t& prog = image_.view();
    workers_ = std::max(1, prog.n_sms);
    if (prog.n_sms < 1) return Status(StatusCode::InvalidArgument, "the image has no workers");
    int dev = 0;
    AMK_GPU_TRY(gpu::get_device(&dev));
    gpu::DeviceProps props{};
    AMK_GPU_TRY(gpu::device_props(&props, dev));
    report_.device = props.name;
    AMK_GPU_TRY(gpu::stream_create(&stream_));
    AMK_GPU_TRY(gpu::event_create(&ev_begin_));
    AMK_GPU_TRY(gpu::event_create(&ev_end_));
    for (int32_t c = 0; c < prog.n_counters; ++c) max_producers_ = std::max(max_producers_, prog.counter_producers[c]);

    Status s = choose_launch_shape(options);
    if (!s) return s;
    s = upload_buffers();
    if (!s) return s;
    return upload_tables();
  }

#ifdef AMK_USE_HIP
  std::string name() const override { return "hip"; }
#else
  std::string name() const override { return "cuda"; }
#endif  // AMK_USE_HIP
  bool supports_trace() const override { return true; }
  const void* device_buffer(int32_t index) const {
    return index >= 0 && static_cast<size_t>(index) < d_ptr_.size() ? d_ptr_[static_cast<size_t>(index)] : nullptr;
  }
  const GpuKernelReport& report() const { return report_; }

  Status launch(int32_t pos, const LaunchOptions& options, LaunchStats* stats) override {
    if (max_producers_ > 0 &&
        static_cast<uint64_t>(epoch_ + 1) * max_producers_ >= std::numeric_limits<uint32_t>::max() / 2) {
      Status z = zero_counters();
      if (!z) return z;
    }
    ++epoch_;
    StageHeader* hdr = stage_header();
    hdr->step = amk_step_t{};
    hdr->step.pos = pos;
    hdr->step.epoch = epoch_;
    hdr->error = amk_error_slot_t{};
    std::memset(stage_progress(), 0, sizeof(int32_t) * static_cast<size_t>(workers_));
    *reinterpret_cast<volatile int32_t*>(h_abort_) = 0;

    KernelArgs args = args_;
    args.step = hdr->step;
    if (options.trace != nullptr) {
      Status t = prepare_trace();
      if (!t) return t;
      args.trace = d_trace_;
      args.chunk_trace = d_chunk_trace_;
      args.chunk_trace_per_worker = d_chunk_trace_ != nullptr ? chunks_per_worker_ : 0;
      args.worker_sm = d_worker_sm_;
    }
    if (balancing_) args.worker_sm = d_worker_sm_;  // one store per block: where each worker ran
    const auto t0 = std::chrono::steady_clock::now();
    AMK_GPU_TRY(gpu::memcpy_h2d_async(d_stage_, h_stage_, stage_bytes_, stream_));
    AMK_GPU_TRY(gpu::event_record(ev_begin_, stream_));
    Status s = kernel_.launch(args, workers_, dyn_smem_, stream_);
    if (!s) {
      (void)zero_counters();
      return s;
    }
    AMK_GPU_TRY(gpu::event_record(ev_end_, stream_));
    AMK_GPU_TRY(gpu::memcpy_d2h_async(h_error_out_, d_error_, sizeof(amk_error_slot_t), stream_));
    if (balancing_)
      AMK_GPU_TRY(gpu::memcpy_d2h_async(h_worker_sm_, d_worker_sm_, sizeof(int32_t) * static_cast<size_t>(workers_), stream_));

    bool timed_out = false;
    s = wait_stream(t0 + options.deadline, &timed_out);
    if (!s) return s;
    if (timed_out) {
      *reinterpret_cast<volatile int32_t*>(h_abort_) = 1;  // the spinning waits poll it
      bool drained_timeout = false;
      s = wait_stream(std::chrono::steady_clock::now() + std::chrono::seconds(20), &drained_timeout);
      if (!s) return s;
      if (drained_timeout)
        return Status(StatusCode::Timeout, "launch exceeded its " + std::to_string(options.deadline.count()) +
                                               " ms deadline and did not stop within 20 s of the abort; the "
                                               "device context may be unusable");
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (stats != nullptr) {
      stats->wall_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
      float ms = 0.0f;
      if (!timed_out) AMK_GPU_TRY(gpu::event_elapsed_ms(&ms, ev_begin_, ev_end_));
      stats->device_us = timed_out ? -1.0 : 1000.0 * static_cast<double>(ms);
    }
    if (options.trace != nullptr) {  // also after a timeout: the records say which tasks ran
      Status t = collect_trace(pos, options.trace);
      if (!t) return t;
    }

    if (timed_out) {
      std::string unfinished;
      s = describe_unfinished(&unfinished);
      if (!s) return s;
      Status z = zero_counters();
      if (!z) return z;
      return Status(StatusCode::Timeout,
                    "launch exceeded its " + std::to_string(options.deadline.count()) + " ms deadline; " + unfinished);
    }
    const amk_error_slot_t err = *h_error_out_;
    if (err.code != 0) {
      Status z = zero_counters();
      if (!z) return z;
      return Status(StatusCode::DeviceError, task_name(err.task) + " failed: " +
                                                 instructions::device_error_name(err.code) + " (worker " +
                                                 std::to_string(err.detail) + ")");
    }
    if (balancing_) return rebalance();
    return Status::ok();
  }

  Status read_buffer(int32_t index, void* dst, size_t bytes) override {
    Status s = check_buffer(index, bytes);
    if (!s) return s;
    if (bytes == 0) return Status::ok();
    AMK_GPU_TRY(gpu::memcpy_d2h_async(dst, d_ptr_[static_cast<size_t>(index)], bytes, stream_));
    AMK_GPU_TRY(gpu::stream_sync(stream_));
    return Status::ok();
  }

  Status write_buffer(int32_t index, const void* src, size_t bytes) override {
    Status s = check_buffer(index, bytes);
    if (!s) return s;
    if (bytes == 0) return Status::ok();
    AMK_GPU_TRY(gpu::memcpy_h2d_async(d_ptr_[static_cast<size_t>(index)], src, bytes, stream_));
    AMK_GPU_TRY(gpu::stream_sync(stream_));  // the source may be pageable and reused at once
    return Status::ok();
  }

  Status reset_state() override {
    const auto& bufs = image_.program().buffers;
    for (size_t i = 0; i < bufs.size() && i < d_ptr_.size(); ++i) {
      if (bufs[i].kind == ir::BufferKind::Weight || bufs[i].kind == ir::BufferKind::Const) continue;
      if (bytes_[i] > 0) AMK_GPU_TRY(gpu::memset_async(d_ptr_[i], 0, bytes_[i], stream_));
    }
    image_.clear_state();
    return zero_counters();
  }

 private:
  /// The device trace buffer (one TaskTiming per queue slot), allocated on first use and zeroed
  /// before each traced launch (t_end == 0 marks a task that never ran).
  Status prepare_trace() {
    const amk_program_t& prog = image_.view();
    const size_t n = static_cast<size_t>(std::max(prog.sm_queue_offsets[prog.n_sms], 1));
    if (d_trace_ == nullptr) AMK_GPU_TRY(gpu::malloc_device(reinterpret_cast<void**>(&d_trace_), n * sizeof(TaskTiming)));
    AMK_GPU_TRY(gpu::memset_async(d_trace_, 0, n * sizeof(TaskTiming), stream_));
    const size_t workers = static_cast<size_t>(std::max(prog.n_sms, 1));
    if (d_worker_sm_ == nullptr)
      AMK_GPU_TRY(gpu::malloc_device(reinterpret_cast<void**>(&d_worker_sm_), workers * sizeof(int32_t)));
    AMK_GPU_TRY(gpu::memset_async(d_worker_sm_, 0xff, workers * sizeof(int32_t), stream_));  // -1: not started
    if (args_.stream != nullptr && chunks_per_worker_ > 0) {
      const size_t c = chunk_records();
      if (d_chunk_trace_ == nullptr)
        AMK_GPU_TRY(gpu::malloc_device(reinterpret_cast<void**>(&d_chunk_trace_), c * sizeof(ChunkTiming)));
      AMK_GPU_TRY(gpu::memset_async(d_chunk_trace_, 0, c * sizeof(ChunkTiming), stream_));
    }
    return Status::ok();
  }

  /// Copy the records back; slots of tasks that never ran get their task and worker filled in.
  Status collect_trace(int32_t pos, LaunchTrace* trace) {
    const amk_program_t& prog = image_.view();
    const size_t n = static_cast<size_t>(prog.sm_queue_offsets[prog.n_sms]);
    trace->pos = pos;
    trace->clock = "globaltimer";
    trace->records.assign(n, TaskTiming{});
    if (n > 0) {
      AMK_GPU_TRY(gpu::memcpy_d2h_async(trace->records.data(), d_trace_, n * sizeof(TaskTiming), stream_));
      AMK_GPU_TRY(gpu::stream_sync(stream_));
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int32_t w = 0; w < prog.n_sms; ++w) {
      for (int32_t q = prog.sm_queue_offsets[w]; q < prog.sm_queue_offsets[w + 1]; ++q) {
        TaskTiming& r = trace->records[static_cast<size_t>(q)];
        r.task = prog.sm_queue[q];
        r.worker = w;
        if (r.t_end == 0) continue;
        lo = std::min(lo, r.t_wait_begin);
        hi = std::max(hi, r.t_end);
      }
    }
    trace->worker_sm.assign(static_cast<size_t>(std::max(prog.n_sms, 0)), -1);
    if (d_worker_sm_ != nullptr && !trace->worker_sm.empty()) {
      AMK_GPU_TRY(gpu::memcpy_d2h_async(trace->worker_sm.data(), d_worker_sm_, trace->worker_sm.size() * sizeof(int32_t),
                                        stream_));
      AMK_GPU_TRY(gpu::stream_sync(stream_));
    }
    // HIP does not read the SM id: no placement rather than a column of -1s.
    if (std::all_of(trace->worker_sm.begin(), trace->worker_sm.end(), [](int32_t v) { return v < 0; }))
      trace->worker_sm.clear();
    trace->t_launch_begin = lo == UINT64_MAX ? 0 : lo;  // the device clock has no host view
    trace->t_launch_end = hi;
    trace->chunks.clear();
    trace->chunks_per_worker = 0;
    trace->ring_slots = 0;
    if (d_chunk_trace_ != nullptr) {
      trace->chunks.resize(chunk_records());
      AMK_GPU_TRY(gpu::memcpy_d2h_async(trace->chunks.data(), d_chunk_trace_, trace->chunks.size() * sizeof(ChunkTiming),
                                        stream_));
      AMK_GPU_TRY(gpu::stream_sync(stream_));
      trace->chunks_per_worker = chunks_per_worker_;
      trace->ring_slots = ring_slots_;
    }
    return Status::ok();
  }

  /// Chunk records of a traced streaming launch: chunks_per_worker_ per worker.
  size_t chunk_records() const {
    return static_cast<size_t>(image_.view().n_sms) * static_cast<size_t>(chunks_per_worker_);
  }

  /// Dynamic shared memory from the program's largest GEMV K and attention head, the prefetch
  /// depth, and the co-residency check.
  Status choose_launch_shape(const GpuOptions& options) {
    const amk_program_t& prog = image_.view();
    bool has_fold = false;
    int32_t attention_row = -1;  // the first FUSED ATTENTION_GEMV_ADD, if any
    int32_t step_gemv = -1;  // the first FUSED recipe 10-12, if any
    int64_t want = 4096;  // floats: 16 KiB floor
    const int64_t warps = instructions::kComputeWarps;  // the warps that run micro-kernels
    for (int32_t t = 0; t < prog.n_instructions; ++t) {
      const amk_instruction_t& in = prog.instructions[t];
      if (in.op == AMK_OP_GEMV_TILE || in.op == AMK_OP_GEMM_TILE || in.op == AMK_OP_FUSED)
        want = std::max<int64_t>(want, align_up(static_cast<size_t>(std::max(in.params.K, 0)), 8));
      // The fold keeps its tile's activations (N_tile) beside x, on the weight stream and on the
      // plain path (mlp_fold_run) alike.
      if (in.op == AMK_OP_FUSED && instructions::fused_recipe(in) == instructions::kRecipeMlpFold) {
        has_fold = true;
        want = std::max<int64_t>(want, align_up(static_cast<size_t>(std::max(in.params.K, 0)) +
                                                    static_cast<size_t>(std::max<int64_t>(in.params.N_tile, 0)),
                                                8));
      }
      // ATTENTION_GEMV_ADD: on the weight stream x, the rotated q rows and the fresh rows
      // (attention_row.cuh); off it, its halves beside the row and their table (fused.cuh).
      if (in.op == AMK_OP_FUSED && instructions::fused_recipe(in) == instructions::kRecipeAttentionGemvAdd) {
        if (attention_row < 0) attention_row = t;
        const int64_t hd = std::min<int64_t>(std::max(in.params.head_dim, 0), instructions::kDeviceMaxHeadDim);
        const int64_t K = std::max(in.params.K, 0), n_kv = std::max(in.params.n_kv_heads, 0);
        const int64_t streamed = 2 * K + 2 * n_kv * hd;  // attention_row_floats
        const int64_t halves = instructions::attention_smem_floats(hd, warps) + instructions::attention_gemv_tail_floats(in.params);
        want = std::max<int64_t>(want, align_up(static_cast<size_t>(std::max(streamed, halves)), 8));
      }
      if (in.op == AMK_OP_FUSED && instructions::recipe_is_step_gemv(instructions::fused_recipe(in))) {
        if (step_gemv < 0) step_gemv = t;
        // A rotating tile on the weight stream keeps its rows' fp32 sums beside x until the last
        // chunk (gemv_stream_rotate_after).
        if (instructions::fused_recipe(in) != instructions::kRecipeRmsNormGemvAppend)
          want = std::max<int64_t>(want, align_up(static_cast<size_t>(std::max(in.params.K, 0)) +
                                                      static_cast<size_t>(std::max<int64_t>(in.params.N_tile, 0)),
                                                  8));
      }
      if (in.op == AMK_OP_ATTENTION_TILE ||
          (in.op == AMK_OP_FUSED && instructions::fused_recipe(in) == instructions::kRecipeRopeAttention))
        want = std::max<int64_t>(want, instructions::attention_smem_floats(
                                           std::min<int64_t>(std::max(in.params.head_dim, 0), instructions::kDeviceMaxHeadDim),
                                           warps));
    }
    want = std::max<int64_t>(want, 2 * gpu::kMaxWarps);
    // The fold kernel only for programs with folds, the attention kernel for every program with
    // ATTENTION_GEMV_ADD (only it runs that recipe; its folds then run the plain path): the default
    // one runs every other program faster (persistent_kernel.h, KernelEntry).
    // The rope kernel for programs with step-position GEMVs (the fold kernel runs them too).
    kernel_ = attention_row >= 0 ? gpuvm::attention_kernel()
              : has_fold        ? gpuvm::fold_kernel()
              : step_gemv >= 0  ? gpuvm::step_gemv_kernel()
                                : gpuvm::default_kernel();
    // AMK_KERNEL=NAME (a measuring knob): run the program on another kernel, to time a kernel's
    // code apart from the schedule (docs/PERFORMANCE.md row 187). Refused where that kernel lacks
    // a path the program needs, so a wrong setting fails at load instead of mid-launch.
    if (const char* env = std::getenv("AMK_KERNEL"); env != nullptr && *env != '\0') {
      Status forced = force_kernel(env, attention_row, step_gemv, &kernel_);
      if (!forced) return forced;
    }
    // The CUDA attention kernel runs no step-position GEMV (persistent_kernel.cu, kStepGemvStream;
    // no lowering puts the two together): refused here rather than as BAD_PARAMS mid-launch.
    if (attention_row >= 0 && step_gemv >= 0 && !kernel_.streams_step_gemv)
      return Status(StatusCode::Unsupported,
                    "instruction " + std::to_string(step_gemv) +
                        ": FUSED RMSNORM_GEMV_ROPE / _APPEND / _ROPE_APPEND cannot run in a program with FUSED "
                        "ATTENTION_GEMV_ADD on CUDA (the attention kernel has no step-position GEMVs)");
    KernelResources res;
    Status s = kernel_.resources(0, &res);
    if (!s) return s;
    // Rounded up to whole 32-byte units like the work area itself (11 compute warps: 3096 floats).
    const auto min_floats = static_cast<int64_t>(
        align_up(static_cast<size_t>(instructions::attention_smem_floats(instructions::kDeviceMaxHeadDim, warps)), 8));
    // The work area and the alignment slack must fit without a ring (dyn_smem_layout.h).
    int64_t floats = std::min<int64_t>(std::max(want, min_floats), (res.max_dyn_smem_bytes - gpuvm::kDynSmemSlack) / 4);
    floats = floats / 8 * 8;
    if (floats < min_floats)
      return Status(StatusCode::Unsupported, "the device allows only " + std::to_string(res.max_dyn_smem_bytes) +
                                                 " bytes of dynamic shared memory per block; the VM needs " +
                                                 std::to_string(min_floats * 4));
    const size_t work_bytes = static_cast<size_t>(floats) * 4;
    choose_ring(res, work_bytes);
    const gpuvm::DynSmemLayout layout = gpuvm::dyn_smem_layout(static_cast<int64_t>(work_bytes), ring_skew_, ring_slots_, ring_slot_bytes_);
    dyn_smem_ = static_cast<size_t>(layout.bytes);
    // AMK_SMEM_PAD_KIB=k: k KiB more dynamic shared memory that nothing uses, i.e. that much less
    // L1 for the same kernel (measuring what a larger shared area costs, docs/PERFORMANCE.md row 118).
    if (const char* env = std::getenv("AMK_SMEM_PAD_KIB"); env != nullptr && std::atoi(env) > 0)
      dyn_smem_ += size_t{1024} * static_cast<size_t>(std::atoi(env));
    s = kernel_.resources(dyn_smem_, &res);
    if (!s) return s;
    if (!res.cooperative)
      return Status(StatusCode::Unsupported, "device " + report_.device + " does not support cooperative launch");
    const int64_t resident = static_cast<int64_t>(res.blocks_per_sm) * res.sm_count;
    if (resident < workers_)
      return Status(StatusCode::Unsupported,
                    "the program needs " + std::to_string(workers_) + " co-resident workers but " + report_.device +
                        " fits " + std::to_string(res.blocks_per_sm) + " block(s) of " +
                        std::to_string(gpuvm::kBlockThreads) + " threads with " + std::to_string(dyn_smem_) +
                        " B shared memory on each of " + std::to_string(res.sm_count) +
                        " SMs; a persistent grid that is not fully resident can deadlock, so it is not launched. "
                        "hint: schedule for at most " + std::to_string(resident) + " workers");

    // pipelining_depth: how many tasks the loader warp stages ahead (instruction, operands,
    // counter wait) and, with the ring off, warms the weights of in L2.
    const auto& cfg = image_.program().config;
    const int pipeline = cfg ? static_cast<int>(std::clamp<int64_t>(cfg->pipelining_depth, 0, 8)) : 2;
    int depth = options.prefetch_depth >= 0 ? options.prefetch_depth : pipeline;
    if (env_is("AMK_PREFETCH", "0")) depth = 0;
    int staged = std::clamp(options.staged_tasks >= 1 ? options.staged_tasks : pipeline, 1, gpuvm::kMaxStagedTasks);
    if (const char* env = std::getenv("AMK_STAGED_TASKS"); env != nullptr)  // a measuring knob
      staged = std::clamp(std::atoi(env), 1, gpuvm::kMaxStagedTasks);
    if (instructions::kLoaderWarps == 0) staged = 1;  // HIP: the compute wavefronts stage each task

    report_.kernel = kernel_.name;
    report_.workers = workers_;
    report_.sm_count = res.sm_count;
    report_.blocks_per_sm = res.blocks_per_sm;
    report_.threads_per_block = gpuvm::kBlockThreads;
    report_.regs_per_thread = res.regs_per_thread;
    report_.local_bytes_per_thread = res.local_bytes_per_thread;
    report_.static_smem_bytes = res.static_smem_bytes;
    report_.dyn_smem_bytes = static_cast<int>(dyn_smem_);
    report_.prefetch_depth = depth;
    report_.staged_tasks = staged;
    report_.loader_warps = instructions::kLoaderWarps;
    report_.ring_slots = ring_slots_;
    report_.ring_slot_bytes = ring_slot_bytes_;
    report_.ring_offset = static_cast<int>(layout.ring_offset);
    args_.queue_offsets_in_args = workers_ <= gpuvm::kMaxParamWorkers ? 1 : 0;
    if (args_.queue_offsets_in_args != 0 && !env_is("AMK_QUEUE_BOUNDS_IN_ARGS", "0"))  // 0: measuring
      std::copy_n(prog.sm_queue_offsets, workers_ + 1, args_.queue_offsets);
    else
      args_.queue_offsets_in_args = 0;
    report_.queue_bounds_in_args = args_.queue_offsets_in_args != 0;
    // Which queue each block runs (block_workers.h): GpuOptions::block_workers, else the testing
    // knob AMK_BLOCK_WORKERS, else the identity.
    if (Status st = choose_block_workers(options); !st) return st;
    if (Status st = choose_sm_balance(options); !st) return st;
    args_.work_floats = static_cast<int32_t>(floats);
    args_.prefetch_depth = depth;
    args_.staged_tasks = staged;
    args_.ring_slots = ring_slots_;
    args_.ring_slot_bytes = ring_slot_bytes_;
    args_.ring_offset = static_cast<int32_t>(layout.ring_offset);
    // Measuring knobs (Loader::ring_limit), off: at most n chunks unconsumed in the ring while a
    // streamed task runs (AMK_RING_STREAMING_CAP, with AMK_RING_SLOTS > 2) or while none runs
    // (AMK_RING_IDLE_CAP). Both lost against the plain 2 x 64 KiB ring (docs/PERFORMANCE.md rows
    // 208-209).
    args_.ring_streaming_cap = 0;
    if (const char* env = std::getenv("AMK_RING_STREAMING_CAP"); env != nullptr && std::atoi(env) >= 0)
      args_.ring_streaming_cap = std::atoi(env);
    report_.ring_streaming_cap = args_.ring_streaming_cap;
    args_.ring_idle_cap = 0;
    if (const char* env = std::getenv("AMK_RING_IDLE_CAP"); env != nullptr && std::atoi(env) >= 0)
      args_.ring_idle_cap = std::atoi(env);
    report_.ring_idle_cap = args_.ring_idle_cap;
    // 200 ns between polls: with 132 SMs spinning on a few hot counters, back-to-back polls kept
    // those counters' L2 slices so busy that the tasks on the critical path slowed down
    // (docs/PERFORMANCE.md, row 12: 8.8 -> 6.3 ms/token; 1000 ns measured the same as 200).
    args_.poll_sleep_ns = 200;
    if (const char* env = std::getenv("AMK_POLL_SLEEP_NS"); env != nullptr && std::atoi(env) >= 0)
      args_.poll_sleep_ns = static_cast<uint32_t>(std::atoi(env));
    args_.stage_while_polling = env_is("AMK_STAGE_WHILE_POLLING", "1") ? 1 : 0;
    report_.stage_while_polling = args_.stage_while_polling != 0;
    // Poll a task's counters once, then not again until the task before it has finished: a poll
    // stalls the loader's lane for an L2 round trip while a freed ring slot waits for its refill
    // (H200: refill 0.90 -> 0.58 us, 1B -2.0%, 8B -3.8%; docs/PERFORMANCE.md row 122).
    args_.poll_gate = 1;
    if (const char* env = std::getenv("AMK_POLL_GATE"); env != nullptr && *env != '\0')  // 0 / 2: measuring
      args_.poll_gate = std::clamp(std::atoi(env), 0, 2);
    report_.poll_gate = args_.poll_gate;
    return Status::ok();
  }

  /// KernelArgs::block_workers from GpuOptions::block_workers or AMK_BLOCK_WORKERS; a table that
  /// is not a permutation of the workers is refused before anything runs.
  Status choose_block_workers(const GpuOptions& options) {
    args_.block_workers_in_args = 0;
    report_.block_workers = "identity";
    const char* env = std::getenv("AMK_BLOCK_WORKERS");
    const bool from_env = options.block_workers.empty() && env != nullptr && *env != '\0';
    if (options.block_workers.empty() && !from_env) return Status::ok();
    const std::string source = from_env ? "AMK_BLOCK_WORKERS" : "GpuOptions::block_workers";
    if (workers_ > gpuvm::kMaxParamWorkers)
      return Status(StatusCode::InvalidArgument, source + ": this launch has " + std::to_string(workers_) +
                                                     " workers; the table holds at most " +
                                                     std::to_string(gpuvm::kMaxParamWorkers));
    std::vector<int32_t> table = options.block_workers;
    if (from_env) {
      Result<std::vector<int32_t>> parsed = gpuvm::parse_block_workers(env, workers_);
      if (!parsed) return parsed.status();
      table = std::move(*parsed);
    } else if (Status s = gpuvm::check_block_workers(table, workers_, source); !s) {
      return s;
    }
    bool identity = true;
    for (int32_t b = 0; b < workers_; ++b) {
      args_.block_workers[b] = static_cast<uint8_t>(table[static_cast<size_t>(b)]);
      identity = identity && table[static_cast<size_t>(b)] == b;
    }
    args_.block_workers_in_args = identity ? 0 : 1;
    report_.block_workers = identity ? "identity" : from_env ? std::string(env) : "set by GpuOptions";
    return Status::ok();
  }

  /// Balancing for a schedule with fast SMs (ScheduleConfig::fast_sms, docs/SM_BALANCE.md): the
  /// speeds per SM (given or measured now), each queue's weight bytes, and a device array where
  /// every launch records each worker's SM. Off when the table is fixed by hand, on HIP (no SM
  /// id), or with AMK_SM_BALANCE=0.
  Status choose_sm_balance(const GpuOptions& options) {
    const auto& cfg = image_.program().config;
    if (!cfg || cfg->fast_sms <= 0) return Status::ok();
    if (args_.block_workers_in_args != 0 || !options.block_workers.empty()) {
      report_.sm_balance = "off (the block -> worker table is fixed)";
      return Status::ok();
    }
    if (env_is("AMK_SM_BALANCE", "0")) {
      report_.sm_balance = "off (AMK_SM_BALANCE=0)";
      return Status::ok();
    }
    if (workers_ > gpuvm::kMaxParamWorkers) {
      report_.sm_balance = "off (more workers than the table holds)";
      return Status::ok();
    }
#ifdef AMK_USE_HIP
    report_.sm_balance = "off (HIP reads no SM id)";
    return Status::ok();
#else
    std::vector<double> speeds = options.sm_speeds;
    int fast = 0;
    if (speeds.empty()) {
      // A failed calibration (no memory for its scratch, say) leaves the program runnable: the
      // wide tiles then run wherever the blocks land, slower but correct, and the report says why.
      Result<gpuvm::SmSpeeds> measured = gpuvm::measure_sm_speeds();
      if (!measured) {
        report_.sm_balance = "off (measuring the SM speeds failed: " + measured.status().message() + ")";
        return Status::ok();
      }
      speeds = measured->by_sm;
      fast = measured->fast;
    } else {
      fast = static_cast<int>(std::count_if(speeds.begin(), speeds.end(),
                                            [](double v) { return v >= gpuvm::kFastSmThreshold; }));
    }
    balancer_.speed_by_sm = std::move(speeds);
    balancer_.queue_load.assign(static_cast<size_t>(workers_), 0.0);
    for (const ir::Task& t : image_.program().tasks)
      if (t.sm && *t.sm >= 0 && *t.sm < workers_) balancer_.queue_load[static_cast<size_t>(*t.sm)] += static_cast<double>(t.est_bytes);
    AMK_GPU_TRY(gpu::malloc_device(reinterpret_cast<void**>(&d_worker_sm_), sizeof(int32_t) * static_cast<size_t>(workers_)));
    AMK_GPU_TRY(gpu::host_alloc_mapped(reinterpret_cast<void**>(&h_worker_sm_), sizeof(int32_t) * static_cast<size_t>(workers_)));
    // The device-side claim (a kernel built with AMK_SM_CLAIM; others ignore it): each block
    // starts from the queue ranked for its SM, whatever block index it got.
    // Device memory: the claims, then each SM id's first queue (KernelArgs::sm_claims).
    const size_t claim_bytes = sizeof(uint32_t) * static_cast<size_t>(workers_);
    const std::vector<uint8_t> first = gpuvm::sm_first_queues(balancer_.queue_load, balancer_.speed_by_sm, gpuvm::kMaxSmIds);
    AMK_GPU_TRY(gpu::malloc_device(reinterpret_cast<void**>(&d_claims_), claim_bytes + first.size()));
    AMK_GPU_TRY(gpu::memset_device(d_claims_, 0, claim_bytes));
    AMK_GPU_TRY(gpu::memcpy_h2d(reinterpret_cast<char*>(d_claims_) + claim_bytes, first.data(), first.size()));
    args_.sm_claims = d_claims_;
    report_.sm_claims = gpuvm::kernel_claims_by_sm();
    // Kernels that claim by SM choose at each launch; only the others need the placement back.
    balancing_ = !report_.sm_claims;
    if (report_.sm_claims) report_.block_workers = "claimed by SM at each launch";
    report_.sm_balance = std::to_string(fast) + " fast SMs measured, the schedule's " + std::to_string(cfg->fast_sms);
    return Status::ok();
#endif  // AMK_USE_HIP
  }

  /// After a launch with balancing on: the placement it recorded, and a new table if it moved.
  Status rebalance() {
    std::vector<int32_t> table(static_cast<size_t>(workers_)), worker_sm(h_worker_sm_, h_worker_sm_ + workers_);
    for (int32_t b = 0; b < workers_; ++b)
      table[static_cast<size_t>(b)] = args_.block_workers_in_args != 0 ? args_.block_workers[b] : b;
    Result<std::vector<int32_t>> next = balancer_.observe(table, worker_sm);
    if (!next) return next.status();
    if (next->empty()) return Status::ok();
    if (Status s = gpuvm::check_block_workers(*next, workers_, "SmBalancer"); !s) return s;
    bool identity = true;
    for (int32_t b = 0; b < workers_; ++b) {
      args_.block_workers[b] = static_cast<uint8_t>((*next)[static_cast<size_t>(b)]);
      identity = identity && (*next)[static_cast<size_t>(b)] == b;
    }
    args_.block_workers_in_args = identity ? 0 : 1;
    report_.block_workers = identity ? "identity" : "balanced over the measured SM speeds";
    report_.balance_moves = balancer_.moves;
    return Status::ok();
  }

  /// The shared-memory weight ring (persistent_kernel.cu): on when the kernel was built for sm_90+
  /// and the program streams weights. Slots hold chunks of whole rows (not whole tiles): 2 slots of
  /// 64 KiB, or of the longest row when that is larger and two fit. Each chunk costs the compute
  /// warps a fixed overhead (a barrier, the row sums), so big chunks win: with the consumer of
  /// docs/PERFORMANCE.md row 38, 2 x 64 beats 3 x 48 on every row length in amk-stream-probe and on
  /// Llama-3.2-1B (H200: 1.834 -> 1.809 ms; 3 x 48 had won with the older consumer, row 32).
  /// AMK_RING=0 turns the ring off; AMK_RING_SLOTS=n and AMK_RING_SLOT_KIB=k override the shape.
  void choose_ring(const KernelResources& res, size_t work_bytes) {
    ring_slots_ = 0;
    ring_slot_bytes_ = 0;
    if (res.binary_version < 90) return;
    if (env_is("AMK_RING", "0")) return;
    const amk_program_t& prog = image_.view();
    int64_t longest_row = 0;
    for (int32_t t = 0; t < prog.n_instructions; ++t) {
      instructions::MatmulArgs mm;
      if (!instructions::decode_gemv_like(prog, prog.instructions[t], &mm)) continue;
      longest_row = std::max<int64_t>(longest_row, mm.K * (instructions::dtype_bits(mm.w.dtype) / 8));
    }
    if (longest_row == 0) return;
    // AMK_RING_SKEW=b: the ring b bytes past a 1024-byte boundary (a multiple of 16; measuring).
    ring_skew_ = gpuvm::kRingSkewDefault;
    if (const char* env = std::getenv("AMK_RING_SKEW"); env != nullptr && std::atoi(env) >= 0) ring_skew_ = std::atoi(env);
    // What is left for slots after the slack, the work area and the skew (a ring of zero-byte slots).
    const int64_t room = static_cast<int64_t>(res.max_dyn_smem_bytes) -
                         gpuvm::dyn_smem_layout(static_cast<int64_t>(work_bytes), ring_skew_, 1, 0).bytes;
    int64_t slot = 64 * 1024, max_slots = 2;
    if (const char* env = std::getenv("AMK_RING_SLOT_KIB"); env != nullptr && std::atoi(env) >= 1)
      slot = int64_t{1024} * std::atoi(env);
    else if (longest_row > slot && 2 * static_cast<int64_t>(align_up(longest_row, 128)) <= room)
      slot = static_cast<int64_t>(align_up(longest_row, 128));
    if (const char* env = std::getenv("AMK_RING_SLOTS"); env != nullptr && std::atoi(env) >= 2)
      max_slots = std::min<int64_t>(gpuvm::kMaxRingSlots, std::atoi(env));
    const int64_t slots = std::min<int64_t>(max_slots, room / slot);
    if (slots < 2) return;  // one slot cannot overlap a copy with its use
    stream_max_task_bytes_ = instructions::kStreamMaxTaskBytes;
    if (const char* env = std::getenv("AMK_STREAM_MAX_KIB"); env != nullptr && std::atoi(env) > 0)
      stream_max_task_bytes_ = uint64_t{1024} * static_cast<uint64_t>(std::atoi(env));  // a measuring knob
    ring_slots_ = static_cast<int32_t>(slots);
    ring_slot_bytes_ = static_cast<int32_t>(slot);
    if (const char* env = std::getenv("AMK_STREAM_ROWS_PER_ITEM"); env != nullptr && std::atoi(env) > 0)
      split_rows_per_item_ = std::atoi(env);  // measuring knobs (stream_split)
    if (const char* env = std::getenv("AMK_STREAM_SEG_BLOCKS"); env != nullptr && std::atoi(env) > 0)
      split_seg_blocks_ = std::atoi(env);
  }

  /// How the compute warps share out a chunk of `rows` rows: gemv_stream_split, unless the
  /// measuring knobs AMK_STREAM_ROWS_PER_ITEM / AMK_STREAM_SEG_BLOCKS ask for another split that
  /// the device accepts (an unset one of the two: 4 rows, or segments of one warp width; row 140
  /// of docs/PERFORMANCE.md). Host-only: a knob moves no register.
  instructions::StreamSplit stream_split(int64_t rows, int64_t row_vecs) const {
    if (split_rows_per_item_ > 0 || split_seg_blocks_ > 0) {
      const instructions::StreamSplit sp = instructions::gemv_stream_split_fixed(
          rows, row_vecs, split_rows_per_item_ > 0 ? split_rows_per_item_ : instructions::kStreamRowsPerItem,
          split_seg_blocks_ > 0 ? split_seg_blocks_ : 1, gpu::kWarpSize);
      // kStreamChunkMaxRows partials are within the device's kStreamPartials
      if (instructions::gemv_stream_split_ok(sp, rows, row_vecs, instructions::kStreamChunkMaxRows)) return sp;
    }
    return instructions::gemv_stream_split(rows, row_vecs, instructions::kComputeWarps, gpu::kWarpSize);
  }

  /// With the ring on, whether `inst` streams its weights: then `*entry` is its share of the
  /// stream and `blob` its GemvPlan (one decode for both).
  bool stream_share(const amk_program_t& view, const amk_instruction_t& inst, int64_t x_floats,
                    gpuvm::WeightStreamEntry* entry, unsigned char* blob) const {
    if (ring_slots_ == 0) return false;
    if (inst.op != AMK_OP_GEMV_TILE && inst.op != AMK_OP_GEMM_TILE && inst.op != AMK_OP_FUSED) return false;
    instructions::GemvPlan plan;
    if (instructions::decode_gemv_plan(view, inst, &plan) != AMK_DEVERR_NONE) return false;
    if (plan.fold && !kernel_.streams_folds) return false;  // the fold kernel's (or a -DAMK_FOLD_STREAM build's)
    if ((plan.step.inv_freq != nullptr || plan.step.cache != nullptr) && !kernel_.streams_step_gemv) return false;
    if (plan.prologue == instructions::kGemvAttention) {  // ATTENTION_GEMV_ADD: x made in the work area
      if (!kernel_.streams_attention || instructions::attention_row_floats(plan.attn) > x_floats) return false;
      plan.attn.step = args_.prog.step;  // the device's step block (set before the blobs are made)
    }
    // The fold's chunks hold whole triples; one that does not ride the ring runs mlp_fold_run.
    int64_t chunk = plan.fold ? instructions::fold_stream_chunk_bytes(plan, ring_slot_bytes_, x_floats,
                                                                       instructions::kComputeThreads)
                              : instructions::gemv_stream_chunk_bytes(plan.mm, ring_slot_bytes_, x_floats);
    // A rotating tile's chunks hold whole rope pairs: an even row count (check_streamed's rule).
    // Its sums go to an fp32 scratch of the tile's rows beside x (y, bound on the device), which
    // gemv_stream_rotate_after rotates into the real output, kept as the plan's copy.
    if (plan.step.inv_freq != nullptr && chunk > 0) {
      const int64_t row_bytes = plan.mm.K * (instructions::dtype_bits(plan.mm.w.dtype) / 8);
      chunk = chunk / row_bytes / 2 * 2 * row_bytes;
      if (plan.mm.K + (plan.mm.n_end - plan.mm.n_begin) > x_floats) return false;
      plan.copy = plan.mm.y;
      plan.mm.y = instructions::Tensor{};  // F32, contiguous; ptr: bind_streamed_step
      plan.mm.y.rank = 1;
      plan.mm.y.numel = plan.mm.y.shape[0] = plan.copy.numel;
      plan.mm.y.stride[0] = 1;
    }
    const void* src = nullptr;
    uint64_t bytes = 0;
    instructions::gemv_weight_range(plan.mm, &src, &bytes);
    if (chunk == 0 || bytes == 0 || bytes > std::numeric_limits<uint32_t>::max()) return false;
    // A task that reads more than kStreamMaxTaskBytes loads its weights itself. With 16-warp
    // blocks the cap was 1 MiB: plain 16-byte loads beat the ring's per-chunk overhead on big
    // tasks (row 39, H200: the 1B LM head 153 -> 130 us per SM). With 11 compute warps the plain
    // loads keep fewer bytes in flight (the 1B LM head took 149 us) and the ring wins: at 4 MiB the
    // 1B LM head (3.9 MiB per SM) and 8B gate / up (1.7 MiB) ride it, 1B -0.7%, 8B -2.1% per token
    // (docs/PERFORMANCE.md, row 65; 2 and 8 MiB measured too).
    if (bytes > stream_max_task_bytes_) return false;
    *entry = gpuvm::WeightStreamEntry{src, static_cast<uint32_t>(bytes), static_cast<uint32_t>(chunk)};
    // How the compute warps share out each chunk, decided here once instead of per chunk on the
    // device: the full chunks and the last one (rows of its own).
    const instructions::StreamChunking c = instructions::gemv_stream_chunking(
        plan.mm.K * (instructions::dtype_bits(plan.mm.w.dtype) / 8), plan.mm.n_end - plan.mm.n_begin, chunk);
    if (plan.fold) {  // one split for every chunk: for the most columns a chunk touches
      plan.split_full = instructions::fold_stream_split(
          instructions::fold_chunk_pieces_max(static_cast<int32_t>(c.rows_per_chunk)), c.row_vecs,
          instructions::kComputeWarps, gpu::kWarpSize);
      plan.split_last = plan.split_full;
    } else {
      plan.split_full = stream_split(c.rows_per_chunk, c.row_vecs);
      plan.split_last = stream_split(c.last_rows, c.row_vecs);
    }
    instructions::make_plan_blob(plan, inst.op, blob);
    return true;
  }

  /// Per queue slot, the task's host-decoded operands (instructions/task_blob.h) and, with the
  /// ring on, its share of the weight stream (persistent_kernel.cu): the bytes it takes from the
  /// ring, decided by gemv_stream_chunk_bytes(), with a GemvPlan as its blob. Everything is
  /// decoded here against the tables the device reads (device buffer pointers), so the kernel runs
  /// tasks without decoding buffer tables. A task whose decode fails gets no blob and no stream
  /// share: it decodes on the device, which reports the error by name.
  Status upload_task_blobs(const std::vector<amk_buffer_t>& device_buffers) {
    args_.stream = nullptr;
    args_.queue_insts = nullptr;
    args_.blobs = nullptr;
    report_.streamed_tasks = 0;
    report_.fold_streams = kernel_.streams_folds;
    amk_program_t view = image_.view();
    view.buffers = const_cast<amk_buffer_t*>(device_buffers.data());
    view.step = nullptr;  // step-dependent operands are bound on the device (bind_*_step)
    const size_t n = static_cast<size_t>(view.sm_queue_offsets[view.n_sms]);
    const size_t blob_bytes = static_cast<size_t>(instructions::kTaskBlobBytes);
    // AMK_ROPE_PROLOGUE_GENERIC=1: ROPE_ATTENTION rotates through Tensor::load (the A/B of PERFORMANCE.md row 87).
    const bool generic_rope_prologue = env_is("AMK_ROPE_PROLOGUE_GENERIC", "1");
    // AMK_EMU_ONE_VECTOR=1 (timing emulation only, wrong results: amk-bench --baseline none): a
    // streamed SILU_MUL task stages its x alone, as a plain GEMV, so down's head does what it would
    // if gate / up handed it silu(gate) * up as one vector (docs/PERFORMANCE.md rows 97, 172).
    const bool emu_one_vector = env_is("AMK_EMU_ONE_VECTOR", "1");
    std::vector<gpuvm::WeightStreamEntry> table(n, gpuvm::WeightStreamEntry{nullptr, 0, 0});
    std::vector<unsigned char> blobs(n * blob_bytes, 0);
    const int64_t x_floats = static_cast<int64_t>(args_.work_floats) & ~int64_t{7};
    for (size_t q = 0; q < n; ++q) {
      const amk_instruction_t& inst = view.instructions[view.sm_queue[q]];
      unsigned char* blob = blobs.data() + q * blob_bytes;
      if (stream_share(view, inst, x_floats, &table[q], blob)) {
        ++report_.streamed_tasks;
        if (emu_one_vector) {
          auto* plan = reinterpret_cast<instructions::GemvPlan*>(blob + sizeof(instructions::TaskBlobHeader));
          if (plan->prologue == instructions::kGemvSiluMul) plan->prologue = instructions::kGemvPlain;
        }
      } else if (instructions::predecode_task(view, inst, blob) == AMK_DEVERR_NONE && generic_rope_prologue)  // else tag -1
        (void)instructions::set_generic_rope_prologue(blob);
    }
    // The longest worker's chunk count sizes a traced launch's chunk records.
    chunks_per_worker_ = 0;
    for (int32_t w = 0; ring_slots_ > 0 && w < view.n_sms; ++w) {
      int64_t chunks = 0;
      for (int32_t q = view.sm_queue_offsets[w]; q < view.sm_queue_offsets[w + 1]; ++q) {
        const gpuvm::WeightStreamEntry& e = table[static_cast<size_t>(q)];
        if (e.chunk_bytes > 0) chunks += (static_cast<int64_t>(e.bytes) + e.chunk_bytes - 1) / e.chunk_bytes;
      }
      chunks_per_worker_ = std::max(chunks_per_worker_, static_cast<int32_t>(std::min<int64_t>(chunks, INT32_MAX)));
    }
    // The instructions again in queue order, so staging a task is one load per word instead of
    // a load of sm_queue[q] and then a dependent one of the instruction it names.
    std::vector<amk_instruction_t> queue_insts(n);
    for (size_t q = 0; q < n; ++q) queue_insts[q] = view.instructions[view.sm_queue[q]];
    // One allocation: [stream entries | queue-ordered instructions | blobs] (256-byte aligned
    // parts; the kernel copies instructions and blobs word by word).
    const size_t n1 = std::max<size_t>(n, 1);
    const size_t insts_at = align_up(n1 * sizeof(table[0]), kAlign);
    const size_t blobs_at = align_up(insts_at + n1 * sizeof(amk_instruction_t), kAlign);
    AMK_GPU_TRY(gpu::malloc_device(reinterpret_cast<void**>(&d_stream_), blobs_at + n1 * blob_bytes));
    char* const base = reinterpret_cast<char*>(d_stream_);
    if (n > 0) {
      AMK_GPU_TRY(gpu::memcpy_h2d(d_stream_, table.data(), n * sizeof(table[0])));
      AMK_GPU_TRY(gpu::memcpy_h2d(base + insts_at, queue_insts.data(), n * sizeof(amk_instruction_t)));
      AMK_GPU_TRY(gpu::memcpy_h2d(base + blobs_at, blobs.data(), n * blob_bytes));
    }
    if (ring_slots_ > 0) args_.stream = d_stream_;
    args_.queue_insts = reinterpret_cast<const amk_instruction_t*>(base + insts_at);
    args_.blobs = reinterpret_cast<const unsigned char*>(base + blobs_at);
    report_.task_blob_bytes = static_cast<int>(blob_bytes);
    return Status::ok();
  }

  /// Device copies of every buffer; overlapping host ranges share one device range.
  Status upload_buffers() {
    const amk_program_t& prog = image_.view();
    const size_t n = static_cast<size_t>(prog.n_buffers);
    d_ptr_.assign(n, nullptr);
    bytes_.assign(n, 0);
    struct Span {
      uintptr_t lo, hi;
      size_t buffer;
    };
    std::vector<Span> spans;
    for (size_t i = 0; i < n; ++i) {
      const amk_buffer_t& b = prog.buffers[i];
      const int64_t nb = ir::dtype_nbytes(static_cast<ir::DType>(b.dtype), b.numel);
      bytes_[i] = nb > 0 ? static_cast<size_t>(nb) : 0;
      if (b.ptr != nullptr && bytes_[i] > 0) {
        const auto lo = reinterpret_cast<uintptr_t>(b.ptr);
        spans.push_back(Span{lo, lo + bytes_[i], i});
      }
    }
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
    struct Range {
      uintptr_t lo, hi;
      size_t offset;
    };
    std::vector<Range> ranges;
    std::vector<size_t> range_of(spans.size());
    for (size_t s = 0; s < spans.size(); ++s) {
      if (ranges.empty() || spans[s].lo >= ranges.back().hi) ranges.push_back(Range{spans[s].lo, spans[s].hi, 0});
      else ranges.back().hi = std::max(ranges.back().hi, spans[s].hi);
      range_of[s] = ranges.size() - 1;
    }
    size_t total = kAlign;  // offset 0 stays a valid pointer for empty buffers
    for (Range& r : ranges) {
      r.offset = total;
      total = align_up(total + (r.hi - r.lo), kAlign);
    }
    AMK_GPU_TRY(gpu::malloc_device(reinterpret_cast<void**>(&d_arena_), total));
    AMK_GPU_TRY(gpu::memset_device(d_arena_, 0, total));
    for (const Range& r : ranges)
      AMK_GPU_TRY(gpu::memcpy_h2d(d_arena_ + r.offset, reinterpret_cast<const void*>(r.lo), r.hi - r.lo));
    for (size_t i = 0; i < n; ++i) d_ptr_[i] = d_arena_;  // empty buffers: non-null, never read
    for (size_t s = 0; s < spans.size(); ++s) {
      const Range& r = ranges[range_of[s]];
      d_ptr_[spans[s].buffer] = d_arena_ + r.offset + (spans[s].lo - r.lo);
    }
    arena_bytes_ = total;
    return Status::ok();
  }

  /// The control allocation: [buffers | instructions | counters | producers | queue offsets | queue
  /// | stage (step, error, progress)], plus the pinned host block [abort | error out | stage].
  Status upload_tables() {
    const amk_program_t& prog = image_.view();
    std::vector<amk_buffer_t> dbufs(prog.buffers, prog.buffers + prog.n_buffers);
    for (size_t i = 0; i < dbufs.size(); ++i) dbufs[i].ptr = d_ptr_[i];
    const size_t nb = sizeof(amk_buffer_t) * dbufs.size();
    const size_t ni = sizeof(amk_instruction_t) * static_cast<size_t>(prog.n_instructions);
    const size_t nc = sizeof(uint32_t) * static_cast<size_t>(std::max(prog.n_counters, 1));
    const size_t nq_off = sizeof(int32_t) * static_cast<size_t>(prog.n_sms + 1);
    const size_t nq = sizeof(int32_t) * static_cast<size_t>(std::max(prog.sm_queue_offsets[prog.n_sms], 1));
    stage_bytes_ = sizeof(StageHeader) + sizeof(int32_t) * static_cast<size_t>(workers_);
    size_t off = 0;
    const size_t o_buf = off; off = align_up(off + nb, kAlign);
    const size_t o_ins = off; off = align_up(off + ni, kAlign);
    const size_t o_cnt = off; off = align_up(off + nc, kAlign);
    const size_t o_prod = off; off = align_up(off + nc, kAlign);
    const size_t o_qoff = off; off = align_up(off + nq_off, kAlign);
    const size_t o_q = off; off = align_up(off + nq, kAlign);
    const size_t o_stage = off; off = align_up(off + stage_bytes_, kAlign);
    AMK_GPU_TRY(gpu::malloc_device(reinterpret_cast<void**>(&d_ctrl_), off));
    AMK_GPU_TRY(gpu::memset_device(d_ctrl_, 0, off));
    if (nb > 0) AMK_GPU_TRY(gpu::memcpy_h2d(d_ctrl_ + o_buf, dbufs.data(), nb));
    if (ni > 0) AMK_GPU_TRY(gpu::memcpy_h2d(d_ctrl_ + o_ins, prog.instructions, ni));
    if (prog.n_counters > 0)
      AMK_GPU_TRY(gpu::memcpy_h2d(d_ctrl_ + o_prod, prog.counter_producers, sizeof(uint32_t) * prog.n_counters));
    AMK_GPU_TRY(gpu::memcpy_h2d(d_ctrl_ + o_qoff, prog.sm_queue_offsets, nq_off));
    if (prog.sm_queue_offsets[prog.n_sms] > 0)
      AMK_GPU_TRY(gpu::memcpy_h2d(d_ctrl_ + o_q, prog.sm_queue,
                                  sizeof(int32_t) * static_cast<size_t>(prog.sm_queue_offsets[prog.n_sms])));
    d_counters_ = reinterpret_cast<uint32_t*>(d_ctrl_ + o_cnt);
    counter_bytes_ = nc;
    d_stage_ = d_ctrl_ + o_stage;
    d_error_ = reinterpret_cast<amk_error_slot_t*>(d_stage_ + offsetof(StageHeader, error));

    const size_t pinned = align_up(64 + stage_bytes_, kAlign);
    AMK_GPU_TRY(gpu::host_alloc_mapped(reinterpret_cast<void**>(&h_pinned_), pinned));
    std::memset(h_pinned_, 0, pinned);
    h_abort_ = reinterpret_cast<int32_t*>(h_pinned_);
    h_error_out_ = reinterpret_cast<amk_error_slot_t*>(h_pinned_ + 16);
    h_stage_ = h_pinned_ + 64;
    int32_t* d_abort = nullptr;
    AMK_GPU_TRY(gpu::host_device_pointer(reinterpret_cast<void**>(&d_abort), h_abort_));

    amk_program_t& dp = args_.prog;
    dp = prog;
    dp.buffers = reinterpret_cast<amk_buffer_t*>(d_ctrl_ + o_buf);
    dp.counters = d_counters_;
    dp.counter_producers = reinterpret_cast<uint32_t*>(d_ctrl_ + o_prod);
    dp.instructions = reinterpret_cast<amk_instruction_t*>(d_ctrl_ + o_ins);
    dp.sm_queue_offsets = reinterpret_cast<int32_t*>(d_ctrl_ + o_qoff);
    dp.sm_queue = reinterpret_cast<int32_t*>(d_ctrl_ + o_q);
    dp.scratch = nullptr;
    dp.scratch_bytes = 0;
    dp.abort_flag = d_abort;
    dp.step = reinterpret_cast<amk_step_t*>(d_stage_ + offsetof(StageHeader, step));
    dp.error = d_error_;
    args_.progress = reinterpret_cast<int32_t*>(d_stage_ + sizeof(StageHeader));
    return upload_task_blobs(dbufs);
  }

  StageHeader* stage_header() { return reinterpret_cast<StageHeader*>(h_stage_); }
  int32_t* stage_progress() { return reinterpret_cast<int32_t*>(h_stage_ + sizeof(StageHeader)); }

  /// Poll the stream until it is idle or `deadline` passes (short sleeps, so the host stays cheap).
  Status wait_stream(std::chrono::steady_clock::time_point deadline, bool* timed_out) {
    *timed_out = false;
    for (int polls = 0;; ++polls) {
      const gpu::Error e = gpu::stream_query(stream_);
      if (e == gpu::kSuccess) return Status::ok();
      if (e != gpu::kNotReady) return gpu::runtime_status(e, "persistent kernel (stream query)", __FILE__, __LINE__);
      if (std::chrono::steady_clock::now() >= deadline) {
        *timed_out = true;
        return Status::ok();
      }
      if (polls < 256) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(polls < 4096 ? 20 : 200));
    }
  }

  Status zero_counters() {
    AMK_GPU_TRY(gpu::memset_async(d_counters_, 0, counter_bytes_, stream_));
    // The claims hold epochs too: a restarted epoch must not find its own value left there.
    if (d_claims_ != nullptr) AMK_GPU_TRY(gpu::memset_async(d_claims_, 0, sizeof(uint32_t) * static_cast<size_t>(workers_), stream_));
    AMK_GPU_TRY(gpu::stream_sync(stream_));
    epoch_ = 0;
    return Status::ok();
  }

  std::string task_name(int32_t task) const {
    const auto& tasks = image_.program().tasks;
    if (task < 0 || static_cast<size_t>(task) >= tasks.size()) return "task #" + std::to_string(task) + " (unknown)";
    const ir::Task& t = tasks[static_cast<size_t>(task)];
    std::string s = "task " + std::to_string(t.id.value);
    if (!t.label.empty()) s += " (" + t.label + ")";
    return s + " " + std::string(ir::opcode_name(t.op));
  }

  /// Names the tasks that never ran, each worker's blocked head first, with its unmet wait.
  Status describe_unfinished(std::string* out) {
    const amk_program_t& prog = image_.view();
    std::vector<int32_t> progress(static_cast<size_t>(workers_));
    std::vector<uint32_t> counters(static_cast<size_t>(std::max(prog.n_counters, 1)));
    AMK_GPU_TRY(gpu::memcpy_d2h_async(progress.data(), args_.progress, sizeof(int32_t) * progress.size(), stream_));
    AMK_GPU_TRY(gpu::memcpy_d2h_async(counters.data(), d_counters_, sizeof(uint32_t) * counters.size(), stream_));
    AMK_GPU_TRY(gpu::stream_sync(stream_));
    int64_t total = 0;
    std::ostringstream heads;
    int listed = 0;
    for (int w = 0; w < workers_; ++w) {
      const int32_t begin = prog.sm_queue_offsets[w] + progress[static_cast<size_t>(w)];
      const int32_t end = prog.sm_queue_offsets[w + 1];
      total += end - begin;
      if (begin >= end || listed >= 8) continue;
      const int32_t task = prog.sm_queue[begin];
      const amk_instruction_t& inst = prog.instructions[task];
      heads << (listed++ ? "; " : "") << task_name(task) << " on worker " << w;
      for (int i = 0; i < inst.n_waits; ++i) {
        const int32_t c = inst.wait_counter[i];
        if (c < 0 || c >= prog.n_counters) continue;
        const uint32_t base = (epoch_ - 1) * prog.counter_producers[c];
        const uint32_t value = counters[static_cast<size_t>(c)];
        if (value < base + inst.wait_threshold[i]) {
          heads << " waits on counter " << c << " >= " << inst.wait_threshold[i] << " (has " << (value - base) << ")";
          break;
        }
      }
    }
    *out = std::to_string(total) + " task(s) never ran: " + heads.str();
    return Status::ok();
  }

  Status check_buffer(int32_t index, size_t bytes) const {
    if (index < 0 || static_cast<size_t>(index) >= d_ptr_.size())
      return Status(StatusCode::InvalidArgument, "buffer index " + std::to_string(index) + " out of range");
    if (bytes > bytes_[static_cast<size_t>(index)])
      return Status(StatusCode::InvalidArgument, "buffer " + std::to_string(index) + " holds " +
                                                     std::to_string(bytes_[static_cast<size_t>(index)]) +
                                                     " bytes, asked for " + std::to_string(bytes));
    return Status::ok();
  }

  loader::ProgramImage& image_;
  GpuKernelReport report_;
  int workers_ = 1;
  gpu::Stream stream_ = nullptr;
  char* d_arena_ = nullptr;
  size_t arena_bytes_ = 0;
  std::vector<char*> d_ptr_;
  std::vector<size_t> bytes_;
  char* d_ctrl_ = nullptr;
  uint32_t* d_counters_ = nullptr;
  size_t counter_bytes_ = 0;
  char* d_stage_ = nullptr;
  amk_error_slot_t* d_error_ = nullptr;
  size_t stage_bytes_ = 0;
  char* h_pinned_ = nullptr;
  int32_t* h_abort_ = nullptr;
  amk_error_slot_t* h_error_out_ = nullptr;
  char* h_stage_ = nullptr;
  KernelArgs args_{};
  gpu::Event ev_begin_ = nullptr, ev_end_ = nullptr;
  TaskTiming* d_trace_ = nullptr;
  ChunkTiming* d_chunk_trace_ = nullptr;  ///< a traced launch's chunk records (ring on)
  int32_t* d_worker_sm_ = nullptr;        ///< a traced (or balanced) launch's SM per worker (LaunchTrace::worker_sm)
  int32_t* h_worker_sm_ = nullptr;        ///< pinned: the last balanced launch's copy of it
  bool balancing_ = false;                ///< the table path of choose_sm_balance (kernels without claims)
  uint32_t* d_claims_ = nullptr;          ///< KernelArgs::sm_claims (balancing only)
  gpuvm::SmBalancer balancer_;
  int32_t chunks_per_worker_ = 0;         ///< the most weight-stream chunks of one worker's queue
  size_t dyn_smem_ = 0;
  int32_t ring_slots_ = 0, ring_slot_bytes_ = 0;
  int64_t ring_skew_ = gpuvm::kRingSkewDefault;  ///< bytes past a 1024-byte boundary (dyn_smem_layout.h)
  gpuvm::KernelEntry kernel_ = gpuvm::default_kernel();  ///< chosen by choose_launch_shape for the program
  uint64_t stream_max_task_bytes_ = instructions::kStreamMaxTaskBytes;  ///< AMK_STREAM_MAX_KIB, read once by choose_ring
  int32_t split_rows_per_item_ = 0;  ///< AMK_STREAM_ROWS_PER_ITEM (0: gemv_stream_split decides), read by choose_ring
  int32_t split_seg_blocks_ = 0;     ///< AMK_STREAM_SEG_BLOCKS (0: gemv_stream_split decides), read by choose_ring
  gpuvm::WeightStreamEntry* d_stream_ = nullptr;
  uint32_t epoch_ = 0;
  uint32_t max_producers_ = 0;
};

}  // namespace

inline namespace AMK_GPU_VENDOR_NS {  // CUDA and HIP builds link side by side

std::string GpuKernelReport::summary() const {
  std::ostringstream o;
  o << device << ": " << kernel << " kernel, " << workers << " workers x " << threads_per_block << " threads (" << blocks_per_sm
    << " block(s)/SM resident on " << sm_count << " SMs), " << regs_per_thread << " regs/thread, "
    << local_bytes_per_thread << " B local/thread, smem " << static_smem_bytes << " B static + " << dyn_smem_bytes
    << " B dynamic, " << loader_warps << " loader warp(s) staging " << staged_tasks << " task(s) ahead"
    << (stage_while_polling ? " (also while the next waits)" : "")
    << ", poll gate " << poll_gate << (queue_bounds_in_args ? ", queue bounds in the launch" : "")
    << ", prefetch depth "
    << prefetch_depth << ", weight ring " << ring_slots << " x "
    << ring_slot_bytes << " B at +" << ring_offset << " B"
    << (ring_streaming_cap > 0 && ring_streaming_cap < ring_slots
            ? " (" + std::to_string(ring_streaming_cap) + " unconsumed while a streamed task runs)"
            : std::string())
    << (ring_idle_cap > 0 && ring_idle_cap < ring_slots
            ? " (" + std::to_string(ring_idle_cap) + " unconsumed while none runs)"
            : std::string())
    << " streaming " << streamed_tasks << " task(s)"
    << (fold_streams ? " (MLP folds included)" : "") << ", " << task_blob_bytes
    << " B host-decoded operands per task" << (block_workers != "identity" ? ", blocks run workers " + block_workers : "")
    << (sm_balance != "off" ? ", SM balance: " + sm_balance : "");
  return o.str();
}

Result<std::unique_ptr<Executor>> make_cuda_executor(loader::ProgramImage& image, const GpuOptions& options) {
  int count = 0;
  const gpu::Error e = gpu::device_count(&count);
  if (e != gpu::kSuccess || count == 0)
    return Status(StatusCode::Unsupported, std::string("no GPU device: ") +
                                               (e != gpu::kSuccess ? gpu::error_string(e) : "device count is 0"));
  auto ex = std::make_unique<CudaExecutor>(image);
  Status s = ex->init(options);
  if (!s) return s;
  return std::unique_ptr<Executor>(std::move(ex));
}

const GpuKernelReport* gpu_kernel_report(const Executor& executor) {
  const auto* c = dynamic_cast<const CudaExecutor*>(&executor);
  return c != nullptr ? &c->report() : nullptr;
}

const void* gpu_device_buffer(const Executor& executor, int32_t index) {
  const auto* c = dynamic_cast<const CudaExecutor*>(&executor);
  return c != nullptr ? c->device_buffer(index) : nullptr;
}

Status gpu_empty_launch_us(const Executor& executor, int launches, double* median_us) {
  const GpuKernelReport* r = gpu_kernel_report(executor);
  if (r == nullptr) return Status(StatusCode::InvalidArgument, "the launch floor needs a GPU executor");
  if (launches < 1) return Status(StatusCode::InvalidArgument, "the launch floor needs at least one launch");
  gpu::Stream stream{};
  gpu::Event begin{}, end{};
  AMK_GPU_TRY(gpu::stream_create(&stream));
  std::vector<double> us;
  Status s = Status::ok();
  const auto check = [&](gpu::Error e, const char* what) {
    if (s && e != gpu::kSuccess) s = Status(StatusCode::DeviceError, std::string(what) + ": " + gpu::error_string(e));
  };
  check(gpu::event_create(&begin), "event_create");
  check(gpu::event_create(&end), "event_create");
  for (int i = 0; s && i < 20 + launches; ++i) {  // as the executor's launches: one at a time, synchronized
    check(gpu::event_record(begin, stream), "event_record");
    if (s) s = gpuvm::empty_kernel_launch(r->workers, static_cast<size_t>(r->dyn_smem_bytes), stream);
    check(gpu::event_record(end, stream), "event_record");
    check(gpu::stream_sync(stream), "stream_sync");
    float ms = 0.0f;
    check(gpu::event_elapsed_ms(&ms, begin, end), "event_elapsed_ms");
    if (s && i >= 20) us.push_back(1000.0 * static_cast<double>(ms));
  }
  if (begin != gpu::Event{}) (void)gpu::event_destroy(begin);
  if (end != gpu::Event{}) (void)gpu::event_destroy(end);
  (void)gpu::stream_destroy(stream);
  if (!s) return s;
  std::sort(us.begin(), us.end());
  *median_us = us[us.size() / 2];
  return Status::ok();
}

std::string cuda_device_name() {
  int count = 0;
  const gpu::Error e = gpu::device_count(&count);
  if (e != gpu::kSuccess) return std::string("no GPU (") + gpu::error_string(e) + ")";
  if (count == 0) return "no GPU (device count is 0)";
  int dev = 0;
  gpu::DeviceProps p{};
  if (gpu::get_device(&dev) != gpu::kSuccess || gpu::device_props(&p, dev) != gpu::kSuccess) return "unknown GPU";
  return std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
         std::to_string(p.multiProcessorCount) + " SMs)";
}

}  // namespace AMK_GPU_VENDOR_NS
}  // namespace amk::vm
