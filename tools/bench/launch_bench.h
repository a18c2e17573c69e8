// tools/bench/launch_bench.h: `amk-bench launch`: the fixed costs of the GPU VM, each from a NOP
// program measured with stream events (median of many launches):
//   empty    one NOP per SM, no waits: launch + counter epoch + exit (issue 6 target: <= 10 us),
//            beside an empty kernel of the same geometry (the floor under any launch);
//   per-task `chain` NOPs per SM, no waits: (t - empty) / chain = the per-task cost of the loop;
//   per-hop  one NOP per SM, SM i waiting on SM i-1: (t - empty) / (SMs - 1) = the latency from
//            a release on one SM to the task it unblocks on another.
// These bound how fine a schedule can be: a stage costs at least one hop, a tile one task.
#pragma once

namespace amk::bench {

struct LaunchBenchOptions {
  int launches = 200;  ///< timed launches per program (after 20 untimed)
  int chain = 100;     ///< NOPs per SM for the per-task figure
  bool json = false;
};

/// Exit codes as amk-bench decode: 0 ok, 3 no GPU or a runtime error.
int run_launch_bench(const LaunchBenchOptions& options);

}  // namespace amk::bench
