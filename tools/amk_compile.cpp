// tools/amk_compile.cpp: amk-compile CONFIG.json --target NAME [--schedule S.json | --preset gpu-decode] [--max-seq N]
//                        [--dtype bf16|f16|f32] [--weight-dtype bf16|f16|f32] -o PROGRAM.json [--json]
// Lowers a Hugging Face Llama config.json into a decode-step program (schedule/lower.h), always
// proves its own output with ir::validate() and writes the file only when it is ACCEPTED
// (atomically, via ir::program_save). Exit codes: 0 written, 1 bad input / refused config /
// validation failure, 2 usage error. Summary to stdout, logs and errors to stderr.
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "ir/json.h"
#include "ir/validate.h"
#include "schedule/decode_preset.h"
#include "schedule/lower.h"
#include "schedule/schedule_config.h"
#include "targets/registry.h"
#include "tools/common/json_out.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

constexpr const char* kFooter = R"amk(Exit codes:
  0  the program was lowered, ACCEPTED by the validator and written
  1  bad input (unreadable or refused config, bad schedule knob, unknown target), or the
     validator rejected the lowered program (nothing is written then)
  2  usage error (unknown flag, missing CONFIG, --target or -o, bad --dtype, --preset or
     --mlp-fold, --schedule with --preset, --mlp-fold without --preset)

--json prints one JSON document to stdout (docs/JSON.md):
  {"tool": "amk-compile", "version": "<amk version>", "ok": true|false, "exit_code": <int>,
   "error": null | {"code": "<status code>", "message": "..."},
   "config": "<path>", "program": "<output path>", "model": "<name>"|null, "target": "<name>"|null,
   "tasks": <int>|null, "counters": <int>|null, "buffers": <int>|null,
   "weight_bytes": <int>|null, "scratch_bytes": <int>|null, "bandwidth_bound_us": <number>|null,
   "errors": [{"rule": "<validator rule>", "message": "..."}]}
Knobs of the schedule file are documented in docs/SCHEDULE.md. --preset gpu-decode is the
schedule amk-bench decode measures with: every fusion, each stage cut into one tile per SM,
"stage_balance", split-KV by --max-seq; it needs a target with SMs. On targets with a small HBM
share per SM (h100) it folds down_proj into the gate / up tasks (docs/FOLD.md), whose F32 atomic
adds make logits vary in the last bits run to run (the program's meta.reproducible is false);
--mlp-fold off keeps them bit-reproducible, --mlp-fold on folds on any target.)amk";

struct Options {
  std::string config;
  std::string target;
  std::string schedule;
  std::string preset;  // empty = the schedule file's (or the default) knobs
  std::string mlp_fold = "auto";  // the preset's MlpFold knob (CLI11 checks the name)
  std::string output;
  int64_t max_seq = 0;
  std::string dtype = "bf16";
  std::string weight_dtype;  // empty = dtype
  bool json = false;
  bool verbose = false;
};

using Json = nlohmann::ordered_json;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Json error_json(const std::string& rule, const std::string& message) {
  Json e;
  e["rule"] = rule;
  e["message"] = message;
  return e;
}

// Fail with one non-validation error: stderr in text mode, "error" in JSON mode.
int fail(const Options& opt, Json& doc, const amk::Status& s) {
  if (opt.json) {
    amk::tools::json_fail(doc, s, kExitFailed);
    std::cout << amk::tools::json_text(doc);
  } else {
    std::fprintf(stderr, "amk-compile: %s\n", s.message().c_str());
  }
  return kExitFailed;
}

void print_summary(const Options& opt, const amk::ir::Program& p, const amk::ir::ValidationResult& v,
                   int64_t scratch, double bound_us) {
  const amk::ir::GpuTarget& t = *p.target;
  const std::string sm_text = t.num_sms > 0 ? std::to_string(v.stats.sms_used) + " of " + std::to_string(t.num_sms) +
                                                  " SMs used"
                                            : "sm unassigned: the target has num_sms 0, the VM places them";
  const std::string pages = p.pages ? std::to_string(p.pages->pages.size()) + " pages" : "unpaged";
  std::printf("amk-compile: wrote %s (model %s, target %s, dtype %s, max_seq %s)\n", opt.output.c_str(),
              p.meta.value("model", std::string()).c_str(), t.name.c_str(), opt.dtype.c_str(),
              p.decode["max_seq"].dump().c_str());
  std::printf("  tasks     %zu (%s)\n", p.tasks.size(), sm_text.c_str());
  std::printf("  counters  %zu (one per stage)\n", p.counters.size());
  std::printf("  buffers   %zu\n", p.buffers.size());
  std::printf("  weights   %.2f MB\n", static_cast<double>(p.total_weight_bytes()) / 1e6);
  std::printf("  scratch   %.3f MB (%s, %s)\n", static_cast<double>(scratch) / 1e6, p.config->page_allocation.c_str(),
              pages.c_str());
  std::printf("  bound     %.1f us/token (weights / %.0f GB/s on %s)\n", bound_us, t.hbm_bandwidth_gbs,
              t.name.c_str());
  std::printf("  validate  ACCEPTED (%zu warnings, critical path %lld tasks)\n", v.warnings.size(),
              static_cast<long long>(v.stats.critical_path));
  if (p.meta.contains("reproducible") && p.meta["reproducible"] == false)
    std::printf("  note      logits not bit-reproducible run to run: %s\n",
                p.meta.value("reproducible_note", std::string()).c_str());
}

int run(const Options& opt) {
  Json doc = amk::tools::json_document("amk-compile");
  doc["config"] = opt.config;
  doc["program"] = opt.output;
  for (const char* k : {"model", "target", "tasks", "counters", "buffers", "weight_bytes", "scratch_bytes",
                        "bandwidth_bound_us"})
    doc[k] = nullptr;
  doc["errors"] = Json::array();

  auto model = amk::schedule::model_config_load(opt.config);
  if (!model) return fail(opt, doc, model.status());
  doc["model"] = model->name;
  auto target = amk::targets::target_resolve(opt.target);
  if (!target) return fail(opt, doc, target.status());
  doc["target"] = target->name;
  amk::ir::ScheduleConfig config;
  if (!opt.schedule.empty()) {
    auto sc = amk::schedule::schedule_config_load(opt.schedule);
    if (!sc) return fail(opt, doc, sc.status());
    config = std::move(*sc);
  } else if (!opt.preset.empty()) {  // CLI11 admitted only "gpu-decode"
    if (target->num_sms <= 0) {
      return fail(opt, doc, amk::Status(amk::StatusCode::InvalidArgument,
                                        "--preset " + opt.preset + " cuts each stage into tiles per SM; target '" +
                                            target->name + "' has num_sms 0 (use a GPU target)"));
    }
    // The preset sizes split-KV by the KV cache the lowering will make.
    auto max_seq = amk::schedule::resolve_max_seq(*model, opt.max_seq);
    if (!max_seq) return fail(opt, doc, max_seq.status());
    amk::schedule::DecodePreset preset;
    preset.mlp_fold = *amk::schedule::mlp_fold_from_name(opt.mlp_fold);  // CLI11 checked the name
    auto sc = amk::schedule::schedule_config_from_json_text(
        amk::schedule::decode_preset_json(*model, *target, *max_seq, preset,
                                          *amk::schedule::lower_dtype_from_name(opt.dtype)),  // CLI11 checked the name
        "preset " + opt.preset);
    if (!sc) return fail(opt, doc, sc.status());
    config = std::move(*sc);
  }
  amk::schedule::LowerOptions lo;
  lo.max_seq = opt.max_seq;
  lo.dtype = *amk::schedule::lower_dtype_from_name(opt.dtype);  // CLI11 checked the name
  if (!opt.weight_dtype.empty()) lo.weight_dtype = amk::schedule::lower_dtype_from_name(opt.weight_dtype);

  auto t0 = std::chrono::steady_clock::now();
  auto program = amk::schedule::lower(*model, config, *target, lo);
  if (!program) return fail(opt, doc, program.status());
  spdlog::debug("lowered {} tasks in {:.1f} ms", program->tasks.size(), ms_since(t0));
  t0 = std::chrono::steady_clock::now();
  const amk::ir::ValidationResult v = amk::ir::validate(*program);
  spdlog::debug("validated in {:.1f} ms", ms_since(t0));

  const amk::ir::Program& p = *program;
  const int64_t scratch = amk::schedule::program_scratch_bytes(p);
  const double bound_us = target->bandwidth_bound_us(p.total_weight_bytes());
  doc["tasks"] = p.tasks.size();
  doc["counters"] = p.counters.size();
  doc["buffers"] = p.buffers.size();
  doc["weight_bytes"] = p.total_weight_bytes();
  doc["scratch_bytes"] = scratch;
  doc["bandwidth_bound_us"] = bound_us;
  if (!v.ok) {
    // A lowering bug, never the user's fault: say so loudly and write nothing.
    for (const auto& d : v.errors) doc["errors"].push_back(error_json(d.rule, d.message));
    if (opt.json) {
      amk::tools::json_fail(doc, amk::status_code_name(amk::StatusCode::ValidationFailed),
                            "the lowered program was REJECTED by the validator (" + std::to_string(v.errors.size()) +
                                " errors); nothing was written",
                            kExitFailed);
      std::cout << amk::tools::json_text(doc);
    } else {
      std::fprintf(stderr, "amk-compile: %s: the lowered program was REJECTED by the validator (%zu errors); "
                           "nothing was written. This is a bug in amk's lowering; please report it.\n%s",
                   opt.config.c_str(), v.errors.size(), v.report().c_str());
    }
    return kExitFailed;
  }
  t0 = std::chrono::steady_clock::now();
  if (amk::Status s = amk::ir::program_save(p, opt.output); !s) return fail(opt, doc, s);
  spdlog::debug("wrote {} in {:.1f} ms", opt.output, ms_since(t0));
  if (opt.json) {
    amk::tools::json_succeed(doc);
    std::cout << amk::tools::json_text(doc);
  } else {
    print_summary(opt, p, v, scratch, bound_us);
  }
  return kExitOk;
}

void setup_logging(bool verbose) {
  auto logger = spdlog::stderr_color_mt("amk-compile");
  logger->set_pattern("%n: %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"Lower a Hugging Face Llama config.json into a validated AMK decode-step program.", "amk-compile"};
  app.add_option("config", opt.config, "Hugging Face config.json of a Llama-family model")
      ->required()
      ->type_name("CONFIG.json");
  app.add_option("-t,--target", opt.target, "GPU target: a built-in name (" +
                                                 [] {
                                                   std::string s;
                                                   for (const auto& n : amk::targets::target_names())
                                                     s += (s.empty() ? "" : ", ") + n;
                                                   return s;
                                                 }() +
                                                 ") or a target JSON file")
      ->required();
  CLI::Option* schedule =
      app.add_option("-s,--schedule", opt.schedule, "ScheduleConfig JSON file (docs/SCHEDULE.md); default knobs if absent")
          ->type_name("SCHEDULE.json");
  CLI::Option* preset =
      app.add_option("--preset", opt.preset, "A built-in schedule instead of a file: gpu-decode (see below)")
          ->check(CLI::IsMember({"gpu-decode"}))
          ->excludes(schedule);
  app.add_option("--mlp-fold", opt.mlp_fold,
                 "With --preset: fold down_proj into the gate / up tasks (auto: where the target's HBM share per "
                 "SM is small; see below)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->needs(preset)
      ->capture_default_str();
  app.add_option("--max-seq", opt.max_seq, "KV cache rows; 0 = min(max_position_embeddings, 4096)")
      ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()))  // not NonNegativeNumber: it prints DBL_MAX
      ->capture_default_str();
  app.add_option("--dtype", opt.dtype, "Weights, activations and KV cache dtype")
      ->check(CLI::IsMember({"bf16", "f16", "f32"}))
      ->capture_default_str();
  app.add_option("--weight-dtype", opt.weight_dtype,
                 "WEIGHT dtype when it differs from --dtype (e.g. a bf16 checkpoint run in f32)")
      ->check(CLI::IsMember({"bf16", "f16", "f32"}));
  app.add_option("-o,--output", opt.output, "Where to write the program JSON")->required()->type_name("PROGRAM.json");
  app.add_flag("--json", opt.json, "Print one JSON document (schema below) instead of the text summary");
  app.add_flag("-v,--verbose", opt.verbose, "Log lowering, validation and write times to stderr");
  app.footer(kFooter);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "amk-compile: %s\nRun 'amk-compile --help' for usage.\n", e.what());
    return kExitUsage;
  }
  try {
    setup_logging(opt.verbose);
    return run(opt);
  } catch (const std::exception& e) {  // a bug in amk, not bad input: still exit cleanly
    std::fprintf(stderr, "amk-compile: internal error: %s\n", e.what());
    return kExitFailed;
  }
}
