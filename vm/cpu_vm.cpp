// vm/cpu_vm.cpp: the CPU VM. Workers are persistent threads parked on a condition variable
// between launches. Counters never reset between launches: a wait (c, t) in launch `epoch` is met
// at (epoch - 1) * producers[c] + t, the protocol the GPU uses to keep memsets off the critical
// path. After an aborted or failed launch the counters are in an unknown state, so they are
// zeroed and the epoch restarts; that is what keeps the executor usable after a TIMEOUT.
// Tracing (LaunchOptions::trace) selects a second instantiation of the queue loop per launch, so
// an untraced launch runs exactly the loop it ran before tracing existed.
#include "vm/cpu_vm.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "instructions/cpu_dispatch.h"
#include "ir/enums.h"

namespace amk::vm {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

uint64_t steady_now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

/// Spin briefly, then yield, then sleep: workers may outnumber cores (virtual SMs on 2 cores).
inline void backoff(int spins) {
  if (spins < 64) {
    cpu_relax();
  } else if (spins < 512) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(spins < 4096 ? 10 : 100));
  }
}

class CpuExecutor final : public Executor {
 public:
  explicit CpuExecutor(loader::ProgramImage& image)
      : image_(image),
        workers_(std::max(1, image.view().n_sms)),
        n_counters_(image.view().n_counters),
        counters_(new std::atomic<uint32_t>[static_cast<size_t>(std::max(1, n_counters_))]),
        progress_(new std::atomic<int32_t>[static_cast<size_t>(workers_)]) {
    for (int32_t c = 0; c < n_counters_; ++c) {
      counters_[c].store(0, std::memory_order_relaxed);
      max_producers_ = std::max(max_producers_, image.view().counter_producers[c]);
    }
    threads_.reserve(static_cast<size_t>(workers_));
    for (int w = 0; w < workers_; ++w) threads_.emplace_back([this, w] { worker_main(w); });
  }

  ~CpuExecutor() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
    }
    cv_start_.notify_all();
    for (auto& t : threads_) t.join();
  }

  std::string name() const override { return "cpu"; }
  bool supports_trace() const override { return true; }

  Status launch(int32_t pos, const LaunchOptions& options, LaunchStats* stats) override {
    amk_program_t& prog = image_.view();
    // Keep (epoch * producers) inside uint32: restart the epoch long before it could wrap.
    if (max_producers_ > 0 &&
        static_cast<uint64_t>(epoch_ + 1) * max_producers_ >= std::numeric_limits<uint32_t>::max() / 2) {
      zero_counters();
    }
    ++epoch_;
    prog.step->pos = pos;
    prog.step->epoch = epoch_;
    abort_.store(0, std::memory_order_relaxed);
    error_code_ = 0;
    error_task_ = -1;
    for (int w = 0; w < workers_; ++w) progress_[w].store(0, std::memory_order_relaxed);
    trace_ = options.trace != nullptr ? prepare_trace(*options.trace, pos) : nullptr;

    const auto t0 = std::chrono::steady_clock::now();
    bool timed_out = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      running_ = workers_;
      ++generation_;
      cv_start_.notify_all();
      if (!cv_done_.wait_until(lock, t0 + options.deadline, [this] { return running_ == 0; })) {
        timed_out = true;
        abort_.store(1, std::memory_order_relaxed);  // workers poll it in every wait
        cv_done_.wait(lock, [this] { return running_ == 0; });
      }
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (options.trace != nullptr) {
      options.trace->t_launch_begin = to_ns(t0);
      options.trace->t_launch_end = to_ns(t1);
    }
    if (stats != nullptr) stats->wall_us = std::chrono::duration<double, std::micro>(t1 - t0).count();

    if (timed_out) {
      std::string unfinished = describe_unfinished();
      zero_counters();
      return Status(StatusCode::Timeout, "launch exceeded its " + std::to_string(options.deadline.count()) +
                                             " ms deadline; " + unfinished);
    }
    if (error_code_ != 0) {
      std::string what = describe_error();
      zero_counters();
      return Status(StatusCode::DeviceError, what);
    }
    return Status::ok();
  }

  Status read_buffer(int32_t index, void* dst, size_t bytes) override {
    Status s = check_buffer(index, bytes);
    if (!s) return s;
    std::copy_n(static_cast<const char*>(image_.view().buffers[index].ptr), bytes, static_cast<char*>(dst));
    return Status::ok();
  }

  Status write_buffer(int32_t index, const void* src, size_t bytes) override {
    Status s = check_buffer(index, bytes);
    if (!s) return s;
    std::copy_n(static_cast<const char*>(src), bytes, static_cast<char*>(image_.view().buffers[index].ptr));
    return Status::ok();
  }

  Status reset_state() override {
    image_.clear_state();
    zero_counters();
    return Status::ok();
  }

 private:
  void worker_main(int w) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_start_.wait(lock, [&] { return shutdown_ || generation_ != seen; });
        if (shutdown_) return;
        seen = generation_;
      }
      // Decided once per launch: the untraced loop carries no tracing code at all.
      if (trace_ != nullptr) run_queue<true>(w); else run_queue<false>(w);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (--running_ == 0) cv_done_.notify_all();
      }
    }
  }

  template <bool kTrace>
  void run_queue(int w) {
    const amk_program_t& prog = image_.view();
    const int32_t begin = prog.sm_queue_offsets[w];
    const int32_t end = prog.sm_queue_offsets[w + 1];
    for (int32_t qi = begin; qi < end; ++qi) {
      const int32_t task = prog.sm_queue[qi];
      const amk_instruction_t& inst = prog.instructions[task];
      if constexpr (kTrace) trace_[qi].t_wait_begin = steady_now_ns();
      if (!wait_all(inst)) return;
      if constexpr (kTrace) trace_[qi].t_run_begin = steady_now_ns();
      const int32_t err = instructions::cpu_execute(prog, inst);
      if (err != 0) {
        record_error(task, err);
        return;
      }
      // Before the release increment: a consumer's t_run_begin then cannot precede this t_end.
      if constexpr (kTrace) trace_[qi].t_end = steady_now_ns();
      // Release: every output write of this task is visible to whoever acquires this counter.
      counters_[inst.out_counter].fetch_add(1, std::memory_order_release);
      progress_[w].store(qi - begin + 1, std::memory_order_relaxed);
    }
  }

  uint32_t wait_target(const amk_instruction_t& inst, int i) const {
    const int32_t c = inst.wait_counter[i];
    return (epoch_ - 1) * image_.view().counter_producers[c] + inst.wait_threshold[i];
  }

  bool wait_all(const amk_instruction_t& inst) {
    for (int i = 0; i < inst.n_waits; ++i) {
      const uint32_t target = wait_target(inst, i);
      std::atomic<uint32_t>& counter = counters_[inst.wait_counter[i]];
      // Acquire: pairs with the producer's release increment (never a plain load).
      for (int spins = 0; counter.load(std::memory_order_acquire) < target; ++spins) {
        if (abort_.load(std::memory_order_relaxed) != 0) return false;
        backoff(spins);
      }
    }
    return abort_.load(std::memory_order_relaxed) == 0;
  }

  void record_error(int32_t task, int32_t code) {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (error_code_ == 0) {
      error_code_ = code;
      error_task_ = task;
    }
    abort_.store(1, std::memory_order_relaxed);
  }

  std::string task_name(int32_t task) const {
    const ir::Task& t = image_.program().tasks[static_cast<size_t>(task)];
    std::string s = "task " + std::to_string(t.id.value);
    if (!t.label.empty()) s += " (" + t.label + ")";
    return s + " " + std::string(ir::opcode_name(t.op));
  }

  std::string describe_error() const {
    return task_name(error_task_) + " failed: " + instructions::device_error_name(error_code_);
  }

  /// Names the tasks that never ran, starting with each worker's blocked head and its unmet wait.
  std::string describe_unfinished() const {
    const amk_program_t& prog = image_.view();
    int64_t total = 0;
    std::ostringstream heads;
    int listed = 0;
    for (int w = 0; w < workers_; ++w) {
      const int32_t begin = prog.sm_queue_offsets[w] + progress_[w].load(std::memory_order_relaxed);
      const int32_t end = prog.sm_queue_offsets[w + 1];
      total += end - begin;
      if (begin >= end || listed >= 8) continue;
      const int32_t task = prog.sm_queue[begin];
      const amk_instruction_t& inst = prog.instructions[task];
      heads << (listed++ ? "; " : "") << task_name(task) << " on worker " << w;
      for (int i = 0; i < inst.n_waits; ++i) {
        const uint32_t target = wait_target(inst, i);
        const uint32_t value = counters_[inst.wait_counter[i]].load(std::memory_order_relaxed);
        if (value < target) {
          heads << " waits on counter " << inst.wait_counter[i] << " >= " << inst.wait_threshold[i]
                << " (has " << (value - (epoch_ - 1) * prog.counter_producers[inst.wait_counter[i]]) << ")";
          break;
        }
      }
    }
    return std::to_string(total) + " task(s) never ran: " + heads.str();
  }

  Status check_buffer(int32_t index, size_t bytes) const {
    const amk_program_t& prog = image_.view();
    if (index < 0 || index >= prog.n_buffers)
      return Status(StatusCode::InvalidArgument, "buffer index " + std::to_string(index) + " out of range");
    const amk_buffer_t& b = prog.buffers[index];
    const auto nbytes = static_cast<size_t>(ir::dtype_nbytes(static_cast<ir::DType>(b.dtype), b.numel));
    if (bytes > nbytes)
      return Status(StatusCode::InvalidArgument, "buffer " + std::to_string(index) + " holds " +
                                                     std::to_string(nbytes) + " bytes, asked for " +
                                                     std::to_string(bytes));
    return Status::ok();
  }

  static uint64_t to_ns(std::chrono::steady_clock::time_point t) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  }

  /// Size and label the records before any worker starts, so the workers only store timestamps.
  TaskTiming* prepare_trace(LaunchTrace& trace, int32_t pos) {
    const amk_program_t& prog = image_.view();
    const int32_t slots = prog.sm_queue_offsets[workers_];
    trace.pos = pos;
    trace.clock = "steady_clock";
    trace.records.assign(static_cast<size_t>(slots), TaskTiming{});
    for (int w = 0; w < workers_; ++w) {
      for (int32_t qi = prog.sm_queue_offsets[w]; qi < prog.sm_queue_offsets[w + 1]; ++qi) {
        trace.records[static_cast<size_t>(qi)].task = prog.sm_queue[qi];
        trace.records[static_cast<size_t>(qi)].worker = w;
      }
    }
    return trace.records.data();
  }

  void zero_counters() {
    for (int32_t c = 0; c < n_counters_; ++c) counters_[c].store(0, std::memory_order_relaxed);
    epoch_ = 0;
  }

  loader::ProgramImage& image_;
  const int workers_;
  const int32_t n_counters_;
  std::unique_ptr<std::atomic<uint32_t>[]> counters_;
  std::unique_ptr<std::atomic<int32_t>[]> progress_;
  uint32_t max_producers_ = 0;
  uint32_t epoch_ = 0;
  TaskTiming* trace_ = nullptr;  // this launch's records, or nullptr (set before workers start)
  std::atomic<int32_t> abort_{0};
  std::mutex error_mu_;
  int32_t error_code_ = 0;
  int32_t error_task_ = -1;

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  std::condition_variable cv_done_;
  uint64_t generation_ = 0;
  int running_ = 0;
  bool shutdown_ = false;
};

}  // namespace

std::unique_ptr<Executor> make_cpu_executor(loader::ProgramImage& image) {
  return std::make_unique<CpuExecutor>(image);
}

}  // namespace amk::vm
