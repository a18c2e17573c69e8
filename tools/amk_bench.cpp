// tools/amk_bench.cpp: amk-bench, measurements that compare amk with a baseline in the same run.
//   amk-bench cpu [--size-mb N] [--threads 1,2] [--program P --weights W [--busy N]] [--json]
// `cpu`: a STREAM-like copy (the machine's memory bandwidth, bytes read + written), the CPU VM's
// GEMV weight-streaming rate on the same threads as a fraction of it, and tokens/s of a program,
// optionally with N busy-loop threads beside it (how the VM copes with cores it does not own).
//   amk-bench decode --model CONFIG.json [--ctx 128,2048] ...   (GPU: tools/bench/decode_bench.h)
//   amk-bench launch                                             (GPU: tools/bench/launch_bench.h)
//   amk-bench tune --model CONFIG.json [--space S.json] [--out SCHEDULE.json] ...
//                                                                (GPU: tools/bench/tune_bench.h)
// --json follows docs/JSON.md (tools/common/json_out.h). Exit codes: 0 ok; 1 bad input or a
// measurement failed; 2 usage; 3 no GPU / GPU runtime error; 4 decode tokens disagree.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "loader/loader.h"
#include "schedule/sm_assign.h"
#include "tools/bench/decode_bench.h"
#include "tools/bench/launch_bench.h"
#include "tools/bench/tune_bench.h"
#include "tools/bench/tune_space.h"
#include "tools/common/json_out.h"
#include "vm/cpu_vm.h"
#include "vm/session.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

/// Copy `bytes` with `threads` threads, each on its own slice; returns GB/s counting read + write.
double copy_bandwidth_gbs(size_t bytes, int threads) {
  const size_t n = bytes / sizeof(float);
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]);
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<float>(i & 1023);
  std::memset(b.get(), 0, n * sizeof(float));
  std::vector<double> times;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const size_t lo = n * t / threads, hi = n * (t + 1) / threads;
        std::memcpy(b.get() + lo, a.get() + lo, (hi - lo) * sizeof(float));
      });
    }
    for (auto& th : pool) th.join();
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  volatile float sink = b[n / 2];
  (void)sink;
  return 2.0 * static_cast<double>(n * sizeof(float)) / amk::tools::median(times) / 1e9;
}

/// A program of `threads` GEMV tiles over one bf16 weight of about `bytes`: x (IO_INPUT) @ W.T.
amk::ir::Program gemv_program(int64_t n, int64_t k, int tiles) {
  using namespace amk::ir;
  Program p;
  p.buffers = {
      Buffer{BufferId(0), "x", BufferKind::IoInput, DType::F32, {1, k}, MemSpace::Hbm, std::nullopt},
      Buffer{BufferId(1), "W", BufferKind::Weight, DType::BF16, {n, k}, MemSpace::Hbm, std::string("W")},
      Buffer{BufferId(2), "y", BufferKind::IoOutput, DType::F32, {1, n}, MemSpace::Hbm, std::nullopt},
  };
  p.counters.push_back(Counter{CounterId(0), 0, "tiles"});
  const int64_t tile = (n + tiles - 1) / tiles;
  for (int t = 0; t < tiles; ++t) {
    Task task;
    task.id = TaskId(t);
    task.op = Opcode::GemvTile;
    task.inputs = {BufferId(0), BufferId(1)};
    task.outputs = {BufferId(2)};
    task.out_counter = CounterId(0);
    task.sm = t;
    task.label = "gemv.t" + std::to_string(t);
    task.params.set("K", k);
    task.params.set("N_tile", std::min(tile, n - t * tile));
    task.params.set("n_off", t * tile);
    p.tasks.push_back(task);
  }
  return p;
}

struct GemvResult {
  double gbs = 0.0;
  double ms = 0.0;
};

amk::Result<GemvResult> gemv_bandwidth(size_t bytes, int threads) {
  const int64_t k = 4096;
  const int64_t n = std::max<int64_t>(threads, static_cast<int64_t>(bytes / 2 / k));
  amk::loader::LoadOptions o;
  o.random_weights_seed = 1;
  o.workers = threads;
  auto image = amk::loader::load_program(gemv_program(n, k, threads), o);
  if (!image) return image.status();
  auto vm = amk::vm::make_cpu_executor(**image);
  std::vector<double> times;
  for (int rep = 0; rep < 7; ++rep) {
    amk::vm::LaunchStats stats;
    amk::Status st = vm->launch(0, {}, &stats);
    if (!st) return st;
    times.push_back(stats.wall_us);
  }
  GemvResult r;
  r.ms = amk::tools::median(times) / 1e3;
  r.gbs = static_cast<double>(n * k * 2) / (amk::tools::median(times) * 1e3);
  return r;
}

/// `n` threads that spin on the CPU until destroyed: other work competing for the cores.
class BusyLoad {
 public:
  explicit BusyLoad(int n) {
    for (int i = 0; i < n; ++i)
      threads_.emplace_back([this] {
        uint64_t x = 1;
        while (!stop_.load(std::memory_order_relaxed)) x = x * 6364136223846793005ull + 1442695040888963407ull;
        sink_.fetch_add(x, std::memory_order_relaxed);  // keeps the loop's arithmetic alive
      });
  }
  ~BusyLoad() {
    stop_.store(true, std::memory_order_relaxed);
    for (auto& t : threads_) t.join();
  }
  BusyLoad(const BusyLoad&) = delete;
  BusyLoad& operator=(const BusyLoad&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> sink_{0};
  std::vector<std::thread> threads_;
};

amk::Result<double> tokens_per_s(const std::string& program, const std::string& weights, int threads, int tokens,
                                 int busy) {
  amk::SessionOptions o;
  o.weights_path = weights;
  o.backend = amk::Backend::Cpu;
  o.threads = threads;
  auto s = amk::Session::open(program, o);
  if (!s) return s.status();
  BusyLoad load(busy);
  auto ids = (*s)->generate({1, 17, 345}, tokens);
  if (!ids) return ids.status();
  const auto& lat = (*s)->step_latencies_us();
  std::vector<double> gen(lat.begin() + 3, lat.end());  // decode steps only
  return 1e6 / amk::tools::median(gen);
}

/// "128,2048" -> {128, 2048}; false (and a message on stderr) when an item is not a length.
bool parse_ctx_list(const std::string& text, std::vector<int64_t>* out) {
  out->clear();
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const long long c = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || c < 1 || c > (1 << 20)) {
      std::cerr << "amk-bench: --ctx: '" << item << "' is not a context length in [1, 1048576]\n";
      return false;
    }
    out->push_back(c);
  }
  if (out->empty()) {
    std::cerr << "amk-bench: --ctx: no context length given\n";
    return false;
  }
  return true;
}

/// Report a failed measurement: a JSON document on stdout, or a line on stderr.
int fail(bool json, amk::tools::Json& doc, const std::string& what, const amk::Status& st) {
  if (json) {
    amk::tools::json_fail(doc, amk::status_code_name(st.code()), what + ": " + st.message(), kExitFailed);
    std::cout << amk::tools::json_text(doc);
  } else {
    std::cerr << "amk-bench: " << what << ": " << st.message() << "\n";
  }
  return kExitFailed;
}

int run_cpu(size_t size_mb, const std::vector<int>& thread_counts, const std::string& program,
            const std::string& weights, int busy, bool json) {
  amk::tools::Json out = amk::tools::json_document("amk-bench");
  out["bench"] = "cpu";
  out["backend"] = "cpu";
  out["program"] = program.empty() ? amk::tools::Json(nullptr) : amk::tools::Json(program);
  out["size_mb"] = size_mb;
  out["hardware_threads"] = std::thread::hardware_concurrency();
  out["busy_threads"] = busy;
  out["rows"] = amk::tools::Json::array();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int threads : thread_counts) {
    const double copy = copy_bandwidth_gbs(size_mb << 20, threads);
    auto gemv = gemv_bandwidth(size_mb << 20, threads);
    if (!gemv) return fail(json, out, "gemv", gemv.status());
    nlohmann::ordered_json row;
    row["threads"] = threads;
    row["copy_gbs"] = copy;
    row["gemv_weight_gbs"] = gemv->gbs;
    row["gemv_ms"] = gemv->ms;
    row["gemv_fraction_of_copy"] = gemv->gbs / copy;
    if (!program.empty()) {
      auto tps = tokens_per_s(program, weights, threads, 32, busy);
      if (!tps) return fail(json, out, program, tps.status());
      row["tokens_per_s"] = *tps;
    }
    rows.push_back(row);
  }
  out["rows"] = rows;
  if (json) {
    amk::tools::json_succeed(out);
    std::cout << amk::tools::json_text(out);
    return kExitOk;
  }
  std::printf("amk-bench cpu: %zu MB working set, %u hardware threads", size_mb, std::thread::hardware_concurrency());
  if (busy > 0) std::printf(", tokens/s with %d busy threads beside", busy);
  std::printf("\n");
  std::printf("%8s %12s %14s %10s %12s", "threads", "copy GB/s", "gemv GB/s", "of copy", "gemv ms");
  if (!program.empty()) std::printf(" %12s", "tokens/s");
  std::printf("\n");
  for (const auto& r : rows) {
    std::printf("%8d %12.2f %14.2f %9.0f%% %12.2f", r["threads"].get<int>(), r["copy_gbs"].get<double>(),
                r["gemv_weight_gbs"].get<double>(), 100.0 * r["gemv_fraction_of_copy"].get<double>(),
                r["gemv_ms"].get<double>());
    if (!program.empty()) std::printf(" %12.1f", r["tokens_per_s"].get<double>());
    std::printf("\n");
  }
  std::printf("copy counts bytes read + written; gemv counts weight bytes read (the decode floor).\n");
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"amk-bench: amk and its baseline measured side by side"};
  app.require_subcommand(1);
  bool json = false;
  app.add_flag("--json", json, "machine-readable output");
  auto* cpu = app.add_subcommand("cpu", "CPU VM: copy bandwidth, GEMV streaming rate, tokens/s");
  size_t size_mb = 256;
  std::string threads_text = "1,2", program, weights;
  cpu->add_option("--size-mb", size_mb, "working set per measurement")->check(CLI::Range(8, 4096))->capture_default_str();
  cpu->add_option("--threads", threads_text, "comma-separated thread counts")->capture_default_str();
  cpu->add_option("--program", program, "program for tokens/s (needs --weights)");
  cpu->add_option("--weights", weights, "safetensors for --program");
  int busy = 0;
  cpu->add_option("--busy", busy, "busy-loop threads running beside the tokens/s measurement")
      ->check(CLI::Range(0, 256))->capture_default_str();
  cpu->add_flag("--json", json, "machine-readable output");
  auto* decode = app.add_subcommand("decode", "GPU VM decode vs copy bandwidth and a graphed cuBLAS baseline");
  amk::bench::DecodeBenchOptions dopt;
  std::string ctx_text = "128";
  decode->add_option("--model", dopt.model, "Hugging Face config.json (seeded random bf16 weights)")->required();
  decode->add_option("--ctx", ctx_text, "comma-separated context lengths (KV rows attended)")->capture_default_str();
  CLI::Option* schedule =
      decode->add_option("--schedule", dopt.schedule, "ScheduleConfig JSON (default: the gpu-decode preset, varied by the options below)");
  decode->add_option("--target", dopt.target, "target name or JSON; auto = from the device name")->capture_default_str();
  decode->add_option("--baseline", dopt.baseline, "cublas-graph or none")
      ->check(CLI::IsMember({"cublas-graph", "none"}))->capture_default_str();
  decode->add_option("--tokens", dopt.tokens, "timed launches per ctx (median)")->check(CLI::Range(1, 100000))->capture_default_str();
  decode->add_option("--warmup", dopt.warmup, "untimed launches first")->check(CLI::Range(0, 10000))->capture_default_str();
  decode->add_option("--check-steps", dopt.check_steps, "greedy steps compared with the baseline")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  decode->add_option("--seed", dopt.seed, "random weights seed")->capture_default_str();
  // The built-in schedule's knobs (schedule/decode_preset.h): meaningless with --schedule, so
  // giving one with it is a usage error rather than a silently ignored flag.
  const auto knob_range = [](const char* knob) {  // the range a tune space checks the knob against too
    const amk::bench::KnobRange r = amk::bench::preset_knob_range(knob);
    return CLI::Range(r.lo, r.hi);
  };
  const std::vector<CLI::Option*> preset_knobs = {
      decode
          ->add_option("--tiles-per-stage", dopt.tiling.tiles_per_stage,
                       "built-in schedule: each stage's projections in this many equal tiles per SM (0 = use --tile-kib)")
          ->check(knob_range("tiles_per_stage"))
          ->capture_default_str(),
      decode
          ->add_option("--tile-kib", dopt.tiling.tile_kib,
                       "built-in schedule: GEMV tiles of this many KiB (0 = use --tiles-per-sm)")
          ->check(knob_range("tile_kib"))
          ->capture_default_str(),
      decode->add_option("--tiles-per-sm", dopt.tiling.tiles_per_sm, "built-in schedule: tiles of each projection per SM")
          ->check(knob_range("tiles_per_sm"))
          ->capture_default_str(),
      decode
          ->add_option("--lm-head-tiles-per-sm", dopt.tiling.lm_head_tiles_per_sm,
                       "built-in schedule: LM head tiles per SM (0 = as the other projections)")
          ->check(knob_range("lm_head_tiles_per_sm"))
          ->capture_default_str(),
      decode
          ->add_option("--argmax-tiles-per-sm", dopt.tiling.argmax_tiles_per_sm,
                       "built-in schedule: SAMPLE_ARGMAX tiles per SM before one combine (0 = one task scans every logit)")
          ->check(knob_range("argmax_tiles_per_sm"))
          ->capture_default_str(),
      decode->add_option("--sm-assignment", dopt.tiling.sm_assignment, "built-in schedule: how tasks go to SMs")
          ->check(CLI::IsMember(std::vector<std::string>(std::begin(amk::schedule::kSmPolicies),
                                                         std::end(amk::schedule::kSmPolicies))))
          ->capture_default_str(),
      decode
          ->add_option("--kv-partitions", dopt.tiling.kv_partitions,
                       "built-in schedule: split-KV partitions per head, at most 8 or 16 (0 = one per 2048 rows of max_seq; past 6144 rows 16 for a GQA group of 4 to 8, else 8)")
          ->check(knob_range("kv_partitions"))
          ->capture_default_str(),
      decode
          ->add_option("--heads-per-task", dopt.tiling.heads_per_task,
                       "built-in schedule: query heads per attention task (0 = 1, or 2 at 8 partitions, or the GQA group at 16)")
          ->check(knob_range("heads_per_task"))
          ->capture_default_str(),
      decode->add_option("--drop-fusion", dopt.tiling.drop_fusion,
                         "built-in schedule: leave out this fusion group (its op names, comma-separated; repeatable)"),
      decode->add_flag("!--no-rope-in-qkv", dopt.tiling.rope_in_qkv,
                       "built-in schedule: rope in the attention tasks instead of the q / k GEMVs "
                       "(docs/ROPE_IN_GEMV.md; AMK_ROPE_IN_QKV=0 / 1 overrides either way)"),
      decode->add_flag_callback(
          "--mlp-fold", [&dopt] { dopt.tiling.mlp_fold = amk::schedule::MlpFold::On; },
          "built-in schedule: fold down_proj into the gate / up tasks on any target (F32 atomic adds: logits not "
          "bit-reproducible; docs/FOLD.md). Without it or --no-mlp-fold: where the target's HBM share per SM is "
          "small (H100)"),
      decode->add_flag_callback(
          "--no-mlp-fold", [&dopt] { dopt.tiling.mlp_fold = amk::schedule::MlpFold::Off; },
          "built-in schedule: never fold the MLP (bit-reproducible logits)"),
      decode
          ->add_option("--fast-sms", dopt.fast_sms,
                       "built-in schedule: wider tiles for this many SMs that stream faster, run on the SMs measured "
                       "fastest (docs/SM_BALANCE.md); auto = as many as measure so (env AMK_FAST_SMS sets the default). "
                       "Measured: no gain on an H100 (docs/PERFORMANCE.md row 212), so 0 by default")
          ->check(CLI::IsMember({"auto"}) | CLI::Range(0, 1024))
          ->capture_default_str(),
      decode
          ->add_option("--fast-sm-ratio", dopt.tiling.fast_sm_ratio,
                       "built-in schedule: how many times as wide the fast SMs' tiles are")
          ->check(CLI::Range(1.0, 4.0))
          ->capture_default_str(),
  };
  for (CLI::Option* knob : preset_knobs) knob->excludes(schedule);
  decode->add_flag("--profile", dopt.profile, "one traced launch per ctx: where the time goes");
  decode->add_option("--trace", dopt.trace_out, "write the profiled launches as a Chrome trace");
  decode
      ->add_option("--watchdog-ms", dopt.watchdog_ms,
                   "per-launch deadline; raise it under a profiler that replays each launch (ncu)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  decode->add_flag("--json", json, "machine-readable output");
  auto* tune = app.add_subcommand("tune", "search the built-in schedule's knobs on the GPU; write the fastest checked one");
  amk::bench::TuneBenchOptions topt;
  std::string tune_ctx_text = "128";
  double min_gain_pct = 100.0 * topt.search.min_gain;
  tune->add_option("--model", topt.model, "Hugging Face config.json (seeded random bf16 weights)")->required();
  tune->add_option("--ctx", tune_ctx_text, "comma-separated context lengths; the objective is the sum of their ms/token")
      ->capture_default_str();
  tune->add_option("--space", topt.space, "tune space JSON: axis -> values to try (default: the built-in space, docs/PERFORMANCE.md)");
  tune->add_option("--out", topt.out, "write the best schedule here (ScheduleConfig JSON for --schedule)");
  tune->add_option("--target", topt.target, "target name or JSON; auto = from the device name")->capture_default_str();
  tune->add_option("--tokens", topt.tokens, "timed launches per ctx and candidate (median)")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  tune->add_option("--warmup", topt.warmup, "untimed launches first")->check(CLI::Range(0, 10000))->capture_default_str();
  tune->add_option("--check-steps", topt.check_steps, "greedy steps compared with the baseline, per candidate")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  tune->add_option("--passes", topt.search.max_passes, "passes over every axis (stops early when one adopts nothing)")
      ->check(CLI::Range(1, 100))->capture_default_str();
  tune->add_option("--max-candidates", topt.search.max_candidates, "distinct schedules measured at most, the start included")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  tune->add_option("--min-gain", min_gain_pct, "percent a candidate must beat the incumbent by to replace it")
      ->check(CLI::Range(0.0, 99.0))->capture_default_str();
  tune->add_option("--rounds", topt.rounds, "alternated re-timings of the preset and the best at the end")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  tune->add_option("--seed", topt.seed, "random weights seed")->capture_default_str();
  tune->add_flag("--json", json, "machine-readable output");
  auto* launch = app.add_subcommand("launch", "GPU VM fixed costs: empty launch, per task, per cross-SM hop");
  amk::bench::LaunchBenchOptions lopt;
  launch->add_option("--launches", lopt.launches, "timed launches per program (median)")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  launch->add_option("--chain", lopt.chain, "NOPs per SM for the per-task figure")->check(CLI::Range(2, 100000))->capture_default_str();
  launch->add_flag("--json", json, "machine-readable output");
  app.footer("Exit codes: 0 ok; 1 bad input or a measurement failed; 2 usage; 3 decode: no GPU or a GPU runtime\n"
             "error; 4 decode: amk's next tokens disagree with the baseline's (no latency is printed); tune: the\n"
             "preset's own schedule does, or a candidate that passed in the search fails when re-timed. tune\n"
             "writes --out only on success, through a renamed temporary file.\n"
             "--json (docs/JSON.md): {tool, version, ok, exit_code, error, bench, backend, program, size_mb,\n"
             "hardware_threads, busy_threads, rows [{threads, copy_gbs, gemv_weight_gbs, gemv_ms, gemv_fraction_of_copy,\n"
             "tokens_per_s (with --program)}]}.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (*cpu) {
    std::vector<int> counts;
    std::stringstream ss(threads_text);
    for (std::string item; std::getline(ss, item, ',');) {
      const int t = std::atoi(item.c_str());
      if (t < 1 || t > 256) {
        std::cerr << "amk-bench: --threads: '" << item << "' is not a thread count in [1, 256]\n";
        return kExitUsage;
      }
      counts.push_back(t);
    }
    if (!program.empty() && weights.empty()) {
      std::cerr << "amk-bench: --program needs --weights\n";
      return kExitUsage;
    }
    if (busy > 0 && program.empty()) {  // it only applies to tokens/s: say so rather than ignore it
      std::cerr << "amk-bench: --busy needs --program (it loads the cores during the tokens/s run)\n";
      return kExitUsage;
    }
    return run_cpu(size_mb, counts, program, weights, busy, json);
  }
  if (*launch) {
    lopt.json = json;
    return amk::bench::run_launch_bench(lopt);
  }
  if (*tune) {
    if (!parse_ctx_list(tune_ctx_text, &topt.ctx)) return kExitUsage;
    topt.search.min_gain = min_gain_pct / 100.0;
    topt.json = json;
    return amk::bench::run_tune_bench(topt);
  }
  if (*decode) {
    if (!parse_ctx_list(ctx_text, &dopt.ctx)) return kExitUsage;
    for (const std::string& group : dopt.tiling.drop_fusion) {
      if (!amk::schedule::is_builtin_fusion_group(group)) {  // a typo would silently time the default
        std::cerr << "amk-bench: --drop-fusion: '" << group
                  << "' is not a fusion group of the built-in schedule (docs/SCHEDULE.md lists them)\n";
        return kExitUsage;
      }
    }
    dopt.json = json;
    return amk::bench::run_decode_bench(dopt);
  }
  return 2;
}
