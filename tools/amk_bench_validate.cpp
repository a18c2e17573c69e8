// tools/amk_bench_validate.cpp: amk-bench-validate [--tasks 10000,100000,1000000] [--json]
// For each size: generate a Llama-shaped program (tools/testgen), write it to a temporary JSON
// file, then time ir::program_load and ir::validate separately (median of 5 runs below 100k tasks,
// 3 below 1M, 1 from 1M up). Prints tasks, JSON MB, load ms, validate ms, total ms and ns/task.
// The generated programs must be ACCEPTED: a rejection prints the errors and exits 1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "ir/json.h"
#include "ir/validate.h"
#include "targets/registry.h"
#include "tools/testgen/llama_gen.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Row {
  int64_t tasks = 0;
  int64_t layers = 0;
  int64_t n_tile = 0;
  double json_mb = 0;
  double load_ms = 0;
  double validate_ms = 0;
  int runs = 0;
  bool ok = false;
  amk::ir::ValidationStats stats;
};

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int runs_for(int64_t tasks) { return tasks >= 1'000'000 ? 1 : tasks >= 100'000 ? 3 : 5; }

// One size: generate, save, then time load and validate. False on an I/O or load failure; a
// rejection returns true with row.ok == false (after the first run).
bool bench_one(int64_t want_tasks, const amk::ir::GpuTarget& target, const fs::path& dir, bool keep, Row& row) {
  const amk::testgen::LlamaShape shape = amk::testgen::llama_shape_for_tasks(want_tasks);
  row.layers = shape.layers;
  row.n_tile = shape.n_tile;
  const fs::path path = dir / ("amk-bench-validate-" + std::to_string(::getpid()) + "-" +
                               std::to_string(want_tasks) + ".json");
  {
    const auto t0 = Clock::now();
    const amk::ir::Program program = amk::testgen::llama_program(shape, target);
    row.tasks = static_cast<int64_t>(program.tasks.size());
    const amk::Status saved = amk::ir::program_save(program, path.string());
    if (!saved) {
      spdlog::error("writing {}: {}", path.string(), saved.message());
      return false;
    }
    spdlog::info("{} tasks ({} layers, N_tile {}) generated and written in {:.0f} ms", row.tasks, shape.layers,
                 shape.n_tile, ms_between(t0, Clock::now()));
  }
  std::error_code ec;
  row.json_mb = static_cast<double>(fs::file_size(path, ec)) / 1e6;
  row.runs = runs_for(row.tasks);
  std::vector<double> load_ms, validate_ms;
  bool loaded = true;
  for (int r = 0; r < row.runs; ++r) {
    const auto t0 = Clock::now();
    auto program = amk::ir::program_load(path.string());
    const auto t1 = Clock::now();
    if (!program) {
      spdlog::error("loading {}: {}", path.string(), program.status().message());
      loaded = false;
      break;
    }
    const amk::ir::ValidationResult result = amk::ir::validate(*program);
    load_ms.push_back(ms_between(t0, t1));
    validate_ms.push_back(ms_between(t1, Clock::now()));
    row.ok = result.ok;
    row.stats = result.stats;
    if (!result.ok) {
      std::fprintf(stderr, "amk-bench-validate: the generated %lld-task program was REJECTED:\n",
                   static_cast<long long>(row.tasks));
      for (size_t i = 0; i < result.errors.size() && i < 20; ++i)
        std::fprintf(stderr, "  error [%s] %s\n", result.errors[i].rule.c_str(), result.errors[i].message.c_str());
      if (keep) std::fprintf(stderr, "  program kept at %s\n", path.string().c_str());
      break;
    }
  }
  if (!keep) fs::remove(path, ec);
  if (!loaded) return false;
  row.runs = static_cast<int>(load_ms.size());
  row.load_ms = median(load_ms);
  row.validate_ms = median(validate_ms);
  return true;
}

void print_table(const std::vector<Row>& rows, const std::string& target) {
  std::printf("amk-bench-validate %s: Llama-3-8B-shaped decode programs, target %s\n", AMK_VERSION, target.c_str());
  std::printf("%10s %7s %7s %9s %10s %12s %10s %9s %5s  %s\n", "tasks", "layers", "N_tile", "JSON MB", "load ms",
              "validate ms", "total ms", "ns/task", "runs", "verdict");
  for (const Row& r : rows) {
    const double total = r.load_ms + r.validate_ms;
    std::printf("%10lld %7lld %7lld %9.1f %10.1f %12.1f %10.1f %9.0f %5d  %s\n", static_cast<long long>(r.tasks),
                static_cast<long long>(r.layers), static_cast<long long>(r.n_tile), r.json_mb, r.load_ms,
                r.validate_ms, total, total * 1e6 / static_cast<double>(std::max<int64_t>(r.tasks, 1)), r.runs,
                r.ok ? "ACCEPTED" : "REJECTED");
  }
}

void print_json(const std::vector<Row>& rows, const std::string& target) {
  nlohmann::ordered_json doc;
  doc["tool"] = "amk-bench-validate";
  doc["version"] = AMK_VERSION;
  doc["target"] = target;
  doc["results"] = nlohmann::ordered_json::array();
  bool all_ok = true;
  for (const Row& r : rows) {
    const double total = r.load_ms + r.validate_ms;
    nlohmann::ordered_json j;
    j["tasks"] = r.tasks;
    j["layers"] = r.layers;
    j["n_tile"] = r.n_tile;
    j["json_mb"] = r.json_mb;
    j["load_ms"] = r.load_ms;
    j["validate_ms"] = r.validate_ms;
    j["total_ms"] = total;
    j["ns_per_task"] = total * 1e6 / static_cast<double>(std::max<int64_t>(r.tasks, 1));
    j["runs"] = r.runs;
    j["ok"] = r.ok;
    j["edges"] = r.stats.edges;
    j["hb_queries"] = r.stats.hb_queries;
    j["critical_path"] = r.stats.critical_path;
    doc["results"].push_back(std::move(j));
    all_ok = all_ok && r.ok;
  }
  doc["ok"] = all_ok;
  std::cout << doc.dump(2) << '\n';
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes = {10'000, 100'000, 1'000'000};
  std::string target_name = "h100";
  std::error_code tmp_ec;
  std::string dir = fs::temp_directory_path(tmp_ec).string();
  if (tmp_ec) dir = "/tmp";
  bool json = false, keep = false, verbose = false;
  CLI::App app{"Time ir::program_load and ir::validate on generated Llama-shaped programs.", "amk-bench-validate"};
  app.add_option("--tasks", sizes, "Approximate task counts, comma separated")->delimiter(',')->check(
      CLI::Range(int64_t{1}, int64_t{100'000'000}))->capture_default_str();
  app.add_option("--target", target_name, "GPU target name or target JSON file (SMs for round-robin)")
      ->capture_default_str();
  app.add_option("--dir", dir, "Where the temporary program files go")->capture_default_str();
  app.add_flag("--keep", keep, "Keep the generated program files");
  app.add_flag("--json", json, "Print one JSON document instead of a table");
  app.add_flag("-v,--verbose", verbose, "Log generation progress to stderr");
  app.footer("Exit codes: 0 every program ACCEPTED; 1 a program REJECTED or an I/O/load failure; 2 usage error.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "amk-bench-validate: %s\nRun 'amk-bench-validate --help' for usage.\n", e.what());
    return 2;
  }
  auto logger = spdlog::stderr_color_mt("amk-bench-validate");
  logger->set_pattern("%n: %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbose ? spdlog::level::info : spdlog::level::warn);

  auto target = amk::targets::target_resolve(target_name);
  if (!target) {
    std::fprintf(stderr, "amk-bench-validate: %s\n", target.status().message().c_str());
    return 2;
  }
  std::vector<Row> rows;
  bool ok = true;
  for (int64_t n : sizes) {
    Row row;
    if (!bench_one(n, *target, dir, keep, row)) {
      ok = false;
      break;
    }
    rows.push_back(row);
    if (!row.ok) {
      ok = false;
      break;
    }
  }
  if (json) {
    print_json(rows, target->name);
  } else if (!rows.empty()) {
    print_table(rows, target->name);
  }
  return ok ? 0 : 1;
}
