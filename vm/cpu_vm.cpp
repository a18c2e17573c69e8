// vm/cpu_vm.cpp: the CPU VM. The launching thread runs worker 0's queue; the other workers are
// persistent threads parked on a condition variable between launches. Counters never reset
// between launches: a wait (c, t) in launch `epoch` is met at (epoch - 1) * producers[c] + t, the
// protocol the GPU uses to keep memsets off the critical path. After an aborted or failed launch
// the counters are in an unknown state, so they are zeroed and the epoch restarts; that is what
// keeps the executor usable after a TIMEOUT.
// A wait spins for an adaptive window, then parks its worker on a condition variable; a producer
// wakes parked workers only when some are parked. Spinning alone, or yielding, collapses when the
// cores are busy with other work: the waiter burns the time slice its producer needs (68 ms/token
// against 0.2 on 2 cores with two busy loops beside, before session 28).
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

class CpuExecutor final : public Executor {
  /// A worker's current spin window. It halves each time a spin runs out and doubles each time
  /// one succeeds: a worker that shares its core with its producer (the scheduler put both on
  /// one CPU) would otherwise burn the whole window on every wait while the producer cannot run.
  struct alignas(64) SpinBudget {
    int64_t ns = 0;
  };
  static constexpr int64_t kMinSpinNs = 2000;
  /// Parked workers wait in the bucket of their counter (counter index mod the bucket count), so
  /// a producer wakes only the workers waiting on counters of its bucket: with one condition
  /// variable for all, every release woke every parked worker, and with more workers than cores
  /// (4 to 16 on 2) the woken crowd took 0.4-2.8 ms/token against 0.16.
  struct alignas(64) ParkBucket {
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<int32_t> parked{0};  // workers parked in this bucket now
  };
  static constexpr int32_t kMaxParkBuckets = 64;

 public:
  CpuExecutor(loader::ProgramImage& image, const CpuVmOptions& options)
      : image_(image),
        max_spin_ns_(std::max<int64_t>(0, options.spin_before_park.count())),
        min_spin_ns_(std::min<int64_t>(max_spin_ns_, kMinSpinNs)),
        workers_(std::max(1, image.view().n_sms)),
        n_counters_(image.view().n_counters),
        counters_(new std::atomic<uint32_t>[static_cast<size_t>(std::max(1, n_counters_))]),
        progress_(new std::atomic<int32_t>[static_cast<size_t>(workers_)]),
        spin_budget_(static_cast<size_t>(workers_)),
        park_buckets_(static_cast<size_t>(std::clamp(n_counters_, 1, kMaxParkBuckets))) {
    for (SpinBudget& b : spin_budget_) b.ns = max_spin_ns_;
    for (int32_t c = 0; c < n_counters_; ++c) {
      counters_[c].store(0, std::memory_order_relaxed);
      max_producers_ = std::max(max_producers_, image.view().counter_producers[c]);
    }
    threads_.reserve(static_cast<size_t>(workers_ - 1));
    for (int w = 1; w < workers_; ++w) threads_.emplace_back([this, w] { worker_main(w); });
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
    parked_waits_.store(0, std::memory_order_relaxed);
    error_code_ = 0;
    error_task_ = -1;
    for (int w = 0; w < workers_; ++w) progress_[w].store(0, std::memory_order_relaxed);
    trace_ = options.trace != nullptr ? prepare_trace(*options.trace, pos) : nullptr;

    const auto t0 = std::chrono::steady_clock::now();
    deadline_ = t0 + options.deadline;
    caller_timed_out_ = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_ = workers_ - 1;
      ++generation_;
    }
    cv_start_.notify_all();
    // The calling thread is worker 0: one wake-up fewer per launch, and the woken workers are not
    // all placed on the core of the thread that woke them and then went to sleep.
    run_worker(0);
    bool timed_out = caller_timed_out_;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_done_.wait_until(lock, deadline_, [this] { return running_ == 0; })) {
        timed_out = true;
        raise_abort();  // workers check it in every wait, spinning or parked
        cv_done_.wait(lock, [this] { return running_ == 0; });
      }
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (options.trace != nullptr) {
      options.trace->t_launch_begin = to_ns(t0);
      options.trace->t_launch_end = to_ns(t1);
    }
    if (stats != nullptr) {
      stats->wall_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
      stats->parked_waits = parked_waits_.load(std::memory_order_relaxed);
    }

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
  /// Worker w's queue for this launch. Decided once per launch: the untraced loop carries no
  /// tracing code at all.
  void run_worker(int w) {
    if (trace_ != nullptr) run_queue<true>(w); else run_queue<false>(w);
  }

  void worker_main(int w) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_start_.wait(lock, [&] { return shutdown_ || generation_ != seen; });
        if (shutdown_) return;
        seen = generation_;
      }
      run_worker(w);
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
      if (!wait_all(inst, w)) return;
      if constexpr (kTrace) trace_[qi].t_run_begin = steady_now_ns();
      const int32_t err = instructions::cpu_execute(prog, inst);
      if (err != 0) {
        record_error(task, err);
        return;
      }
      // Before the release increment: a consumer's t_run_begin then cannot precede this t_end.
      if constexpr (kTrace) trace_[qi].t_end = steady_now_ns();
      // Release: every output write of this task is visible to whoever acquires this counter.
      // seq_cst, not release alone: it and park_until's increment of the bucket's parked count
      // must be totally ordered, or the producer could miss a worker that parked on the old value
      // (a lost wake-up).
      counters_[inst.out_counter].fetch_add(1, std::memory_order_seq_cst);
      ParkBucket& bucket = bucket_of(inst.out_counter);
      if (bucket.parked.load(std::memory_order_seq_cst) > 0) wake(bucket);
      progress_[w].store(qi - begin + 1, std::memory_order_relaxed);
    }
  }

  uint32_t wait_target(const amk_instruction_t& inst, int i) const {
    const int32_t c = inst.wait_counter[i];
    return (epoch_ - 1) * image_.view().counter_producers[c] + inst.wait_threshold[i];
  }

  bool wait_all(const amk_instruction_t& inst, int w) {
    SpinBudget& budget = spin_budget_[static_cast<size_t>(w)];
    for (int i = 0; i < inst.n_waits; ++i) {
      const uint32_t target = wait_target(inst, i);
      std::atomic<uint32_t>& counter = counters_[inst.wait_counter[i]];
      // Acquire: pairs with the producer's release increment (never a plain load).
      if (counter.load(std::memory_order_acquire) >= target) continue;
      if (spin_until(counter, target, budget.ns)) {
        budget.ns = std::min(max_spin_ns_, budget.ns * 2);
        continue;
      }
      budget.ns = std::max(min_spin_ns_, budget.ns / 2);
      if (!park_until(inst.wait_counter[i], target, w)) return false;
    }
    return abort_.load(std::memory_order_relaxed) == 0;
  }

  /// Spins for up to `spin_ns`: most hand-offs between running workers land inside a few
  /// microseconds, and a parked worker's wake costs a futex round trip. False when the window
  /// ran out or on abort.
  bool spin_until(const std::atomic<uint32_t>& counter, uint32_t target, int64_t spin_ns) const {
    if (spin_ns == 0) return false;
    const uint64_t deadline = steady_now_ns() + static_cast<uint64_t>(spin_ns);
    for (uint32_t spins = 1;; ++spins) {
      if (counter.load(std::memory_order_acquire) >= target) return true;
      if (abort_.load(std::memory_order_relaxed) != 0) return false;
      cpu_relax();
      if ((spins & 63) == 0 && steady_now_ns() >= deadline) return false;
    }
  }

  /// Blocks until the counter reaches `target` (true) or the launch aborts (false), parked in the
  /// counter's bucket. The check under the bucket's mutex pairs with wake() taking the same mutex:
  /// a producer that saw the bucket's parked count above zero cannot notify between this worker's
  /// last check and its wait. Worker 0 is the launching thread, so it also keeps the deadline:
  /// past it, it aborts the launch.
  bool park_until(int32_t c, uint32_t target, int w) {
    const std::atomic<uint32_t>& counter = counters_[c];
    ParkBucket& bucket = bucket_of(c);
    parked_waits_.fetch_add(1, std::memory_order_relaxed);
    bucket.parked.fetch_add(1, std::memory_order_seq_cst);
    const auto met = [&] {
      return counter.load(std::memory_order_seq_cst) >= target || abort_.load(std::memory_order_seq_cst) != 0;
    };
    bool in_time = true;
    {
      std::unique_lock<std::mutex> lock(bucket.mu);
      if (w == 0) in_time = bucket.cv.wait_until(lock, deadline_, met); else bucket.cv.wait(lock, met);
    }
    bucket.parked.fetch_sub(1, std::memory_order_relaxed);
    if (!in_time) {
      caller_timed_out_ = true;
      raise_abort();
    }
    return abort_.load(std::memory_order_relaxed) == 0;
  }

  ParkBucket& bucket_of(int32_t c) { return park_buckets_[static_cast<size_t>(c) % park_buckets_.size()]; }

  /// Wakes the workers parked in `bucket`; each rechecks its own counter.
  static void wake(ParkBucket& bucket) {
    { std::lock_guard<std::mutex> lock(bucket.mu); }
    bucket.cv.notify_all();
  }

  void raise_abort() {
    abort_.store(1, std::memory_order_seq_cst);
    for (ParkBucket& b : park_buckets_) wake(b);
  }

  void record_error(int32_t task, int32_t code) {
    {
      std::lock_guard<std::mutex> lock(error_mu_);
      if (error_code_ == 0) {
        error_code_ = code;
        error_task_ = task;
      }
    }
    raise_abort();
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
  const int64_t max_spin_ns_;
  const int64_t min_spin_ns_;
  const int workers_;
  const int32_t n_counters_;
  std::unique_ptr<std::atomic<uint32_t>[]> counters_;
  std::unique_ptr<std::atomic<int32_t>[]> progress_;
  std::vector<SpinBudget> spin_budget_;  // one per worker, touched only by that worker
  uint32_t max_producers_ = 0;
  uint32_t epoch_ = 0;
  std::chrono::steady_clock::time_point deadline_;  // this launch's; read by worker 0 only
  bool caller_timed_out_ = false;                   // worker 0 (the caller) passed the deadline
  TaskTiming* trace_ = nullptr;  // this launch's records, or nullptr (set before workers start)
  std::atomic<int32_t> abort_{0};
  std::atomic<int64_t> parked_waits_{0};   // this launch's waits that parked
  std::vector<ParkBucket> park_buckets_;
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

std::unique_ptr<Executor> make_cpu_executor(loader::ProgramImage& image, const CpuVmOptions& options) {
  return std::make_unique<CpuExecutor>(image, options);
}

}  // namespace amk::vm
