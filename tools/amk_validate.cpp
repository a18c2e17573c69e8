// tools/amk_validate.cpp: amk-validate FILE... [--json] [--quiet] [--dot OUT.dot] [--svg OUT.svg]
// Loads each AMK IR program (ir::program_load; "-" reads standard input) and proves it safe with
// ir::validate(). Exit codes: 0 every file ACCEPTED, 1 any file REJECTED or not loadable (or the
// graph could not be written), 2 usage error, 3 --svg without Graphviz's dot. Reports go to
// stdout, load failures and logs to stderr. Never crashes on bad input.
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "ir/dot.h"
#include "ir/json.h"
#include "ir/validate.h"
#include "tools/common/json_out.h"
#include "tools/validate_graph.h"
#include "tools/validate_report.h"

namespace {

constexpr int kExitAccepted = 0;
constexpr int kExitRejected = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoGraphviz = 3;

constexpr const char* kFooter = R"amk(Exit codes:
  0  every file was loaded and ACCEPTED
  1  a file was REJECTED, or could not be loaded (missing, unreadable, malformed)
  2  usage error (unknown flag, no files, '-' given twice, --dot/--svg with more than one file)
  3  --svg was given but Graphviz's 'dot' is not on PATH (nothing is validated or written)

--dot OUT.dot / --svg OUT.svg draw the task DAG of the one input file (also when it is rejected:
the offending tasks and edges are red): nodes colored by opcode, one cluster per SM. A file that
cannot be written is reported like a load failure (exit 1); no output is ever half-written.

Text output: per file "<file>: ACCEPTED|REJECTED (...)", then "error [rule] ..." and
"warning [rule] ..." lines and the stats. A file that fails to load is reported on stderr as
"amk-validate: <file>: <message>" plus a "hint:" line. Standard input is named "<stdin>".

--json writes one JSON document to stdout (docs/JSON.md):
  {"tool": "amk-validate", "version": "<amk version>", "ok": true|false, "exit_code": 0|1,
   "error": null | {"code": "ValidationFailed", "message": "..."}, "ir_version": "0.2.0",
   "files": [{"file": "<path>", "ok": true|false, "load_error": null | "<message>",
              "errors":   [{"rule": "<rule id>", "message": "<text>",
                            "tasks": [<id>...], "buffers": [<id>...], "counters": [<id>...]}],
              "warnings": [<same shape as errors>],
              "stats": null (load failed) | {"tasks", "buffers", "counters", "edges", "sms_used",
                        "unassigned_tasks", "critical_path", "weight_bytes", "scratch_bytes",
                        "hb_queries": <int>, "bandwidth_bound_us": <number> | null}}]}
Rule ids are listed in docs/VALIDATION.md.)amk";

struct Options {
  std::vector<std::string> files;
  bool json = false;
  bool quiet = false;
  bool verbose = false;
  size_t max_errors = 50;
  std::string dot_path;  // --dot
  std::string svg_path;  // --svg
  std::string dot_binary;  // Graphviz, found before anything runs when --svg is given
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Load and validate one file; when `keep` is set the loaded program is moved there (for drawing).
amk::tools::FileOutcome check_file(const std::string& path, std::optional<amk::ir::Program>* keep) {
  amk::tools::FileOutcome out;
  out.file = path == "-" ? "<stdin>" : path;
  auto t0 = std::chrono::steady_clock::now();
  auto program = amk::ir::program_load(path);
  if (!program.is_ok()) {
    out.load_error = program.status();
    spdlog::debug("{}: load failed after {:.1f} ms ({})", out.file, ms_since(t0),
                  amk::status_code_name(out.load_error.code()));
    return out;
  }
  const double load_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  out.result = amk::ir::validate(*program);
  spdlog::debug("{}: {} tasks, loaded in {:.1f} ms, validated in {:.1f} ms", out.file, program->tasks.size(),
                load_ms, ms_since(t0));
  if (program->target) out.bandwidth_bound_us = program->target->bandwidth_bound_us(out.result.stats.weight_bytes);
  if (keep != nullptr) *keep = std::move(*program);
  return out;
}

void report_load_error(const amk::tools::FileOutcome& o, const std::string& path) {
  std::string message = o.load_error.message();
  // The reader may already start its message with the path; do not print it twice.
  for (const std::string& prefix : {path + ": ", o.file + ": "})
    if (message.compare(0, prefix.size(), prefix) == 0) message.erase(0, prefix.size());
  std::fprintf(stderr, "amk-validate: %s: %s\n", o.file.c_str(), message.c_str());
  const std::string hint = amk::tools::load_hint(path, o.load_error);
  if (!hint.empty()) std::fprintf(stderr, "hint: %s\n", hint.c_str());
}

/// --dot / --svg for the one input file; false (after reporting) when an output cannot be written.
bool write_graphs(const Options& opt, const amk::tools::FileOutcome& o, const amk::ir::Program& program) {
  amk::ir::DotOptions dot_options;
  dot_options.title = o.file;
  const std::string dot = amk::ir::program_to_dot(program, &o.result, dot_options);
  bool ok = true;
  for (const auto& [path, is_svg] : {std::pair{opt.dot_path, false}, std::pair{opt.svg_path, true}}) {
    if (path.empty()) continue;
    const amk::Status s = is_svg ? amk::tools::svg_save(path, dot, opt.dot_binary) : amk::tools::dot_save(path, dot);
    if (!s) {
      std::fprintf(stderr, "amk-validate: %s\n", s.message().c_str());
      ok = false;
    }
  }
  return ok;
}

int run(const Options& opt) {
  nlohmann::ordered_json doc = amk::tools::json_document("amk-validate");
  doc["ir_version"] = amk::ir::kIrVersion;
  doc["files"] = nlohmann::ordered_json::array();
  const bool graph = !opt.dot_path.empty() || !opt.svg_path.empty();
  bool all_ok = true, graphs_ok = true;
  int failed = 0;
  for (const std::string& path : opt.files) {
    std::optional<amk::ir::Program> program;
    const amk::tools::FileOutcome o = check_file(path, graph ? &program : nullptr);
    all_ok = all_ok && o.ok();
    failed += o.ok() ? 0 : 1;
    if (!o.load_error.is_ok()) report_load_error(o, path);
    if (program) graphs_ok = write_graphs(opt, o, *program) && graphs_ok;
    if (opt.json) {
      doc["files"].push_back(amk::tools::outcome_json(o));
    } else {
      std::fputs(amk::tools::outcome_text(o, opt.quiet, opt.max_errors).c_str(), stdout);
      std::fflush(stdout);
    }
  }
  const int rc = all_ok && graphs_ok ? kExitAccepted : kExitRejected;
  if (opt.json) {
    if (rc == kExitAccepted) {
      amk::tools::json_succeed(doc);
    } else if (!all_ok) {
      amk::tools::json_fail(doc, amk::status_code_name(amk::StatusCode::ValidationFailed),
                            std::to_string(failed) + " of " + std::to_string(opt.files.size()) +
                                " file(s) REJECTED or not loadable",
                            rc);
    } else {
      amk::tools::json_fail(doc, amk::status_code_name(amk::StatusCode::IoError), "the graph could not be written", rc);
    }
    // Messages quote user input; json_text replaces invalid UTF-8 rather than throw.
    std::cout << amk::tools::json_text(doc);
  }
  return rc;
}

void setup_logging(bool verbose) {
  auto logger = spdlog::stderr_color_mt("amk-validate");
  logger->set_pattern("%n: %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"Prove AMK IR programs deadlock- and race-free before they are launched.", "amk-validate"};
  app.add_option("files", opt.files, "Program JSON files ('-' reads standard input)")->type_name("FILE");
  app.add_flag("--json", opt.json, "Print one JSON document (schema below) instead of text");
  app.add_flag("-q,--quiet", opt.quiet, "Print only rejected files and their errors");
  app.add_flag("-v,--verbose", opt.verbose, "Log load and validation times to stderr");
  app.add_option("--max-errors", opt.max_errors, "Errors (and warnings) listed per file in text mode; 0 = all")
      ->capture_default_str();
  app.add_option("--dot", opt.dot_path, "Write the task DAG of the (one) input file as Graphviz DOT")
      ->type_name("OUT.dot");
  app.add_option("--svg", opt.svg_path, "Render the task DAG to SVG (needs Graphviz's dot on PATH)")
      ->type_name("OUT.svg");
  app.set_version_flag("--version", AMK_VERSION);
  app.footer(kFooter);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "amk-validate: %s\nRun 'amk-validate --help' for usage.\n", e.what());
    return kExitUsage;
  }
  if (opt.files.empty()) {
    std::fprintf(stderr, "amk-validate: no input files\nusage: amk-validate FILE... [--json] [--quiet]"
                         " ('-' reads standard input; --help for more)\n");
    return kExitUsage;
  }
  int stdin_count = 0;
  for (const auto& f : opt.files) stdin_count += f == "-";
  if (stdin_count > 1) {
    std::fprintf(stderr, "amk-validate: '-' (standard input) given %d times; it can be read once\n", stdin_count);
    return kExitUsage;
  }
  if ((!opt.dot_path.empty() || !opt.svg_path.empty()) && opt.files.size() != 1) {
    std::fprintf(stderr, "amk-validate: --dot and --svg draw one program; %zu files were given\n", opt.files.size());
    return kExitUsage;
  }
  if (!opt.svg_path.empty()) {
    opt.dot_binary = amk::tools::graphviz_dot_path();
    if (opt.dot_binary.empty()) {
      std::fprintf(stderr, "amk-validate: %s: --svg needs Graphviz's 'dot' on PATH\n"
                           "hint: apt-get install graphviz, or write the graph with --dot OUT.dot\n",
                   opt.svg_path.c_str());
      return kExitNoGraphviz;
    }
  }
  try {
    setup_logging(opt.verbose);
    return run(opt);
  } catch (const std::exception& e) {  // a bug in amk, not bad input: still exit cleanly
    std::fprintf(stderr, "amk-validate: internal error: %s\n", e.what());
    return kExitRejected;
  }
}
