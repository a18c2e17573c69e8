// tests/ir/json_write_test.cpp: program_to_json layout and key order, byte-stable round trips with
// every field set, program_save (atomic, errors name the path) and program_load("-").
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "ir/json.h"

using amk::StatusCode;
using amk::Result;
using amk::Status;
using namespace amk::ir;
namespace fs = std::filesystem;

namespace {

// A program with every field set, including every ParamValue type and an explicit sm map.
Program full_program() {
  Program p;
  p.ir_version = "0.2.1";
  p.meta = {{"model", "full"}, {"gpu", "h100"}, {"nested", {{"list", {1, 2.5, "three", nullptr, true}}}}};
  GpuTarget t;
  t.name = "h100";
  t.sm_arch = 90;
  t.num_sms = 132;
  t.hbm_bytes = 85899345920;
  t.hbm_bandwidth_gbs = 3350.0;
  t.fp16_tflops = 989.4;
  t.clock_ghz = 1.98;
  t.wddm_tdr = true;
  t.note = "note \"quoted\"";
  p.target = t;
  Buffer x;
  x.id = BufferId(0);
  x.name = "x";
  x.kind = BufferKind::IoInput;
  x.dtype = DType::BF16;
  x.shape = {1, 16};
  Buffer w = x;
  w.id = BufferId(1);
  w.name = "w\xC3\xA9";  // non-ASCII names survive
  w.kind = BufferKind::Weight;
  w.shape = {16, 16};
  w.source = "model.w";
  Buffer y = x;
  y.id = BufferId(2);
  y.name = "y";
  y.kind = BufferKind::Activation;
  y.space = MemSpace::Smem;
  y.shape = {};
  p.buffers = {x, w, y};
  p.counters = {Counter{CounterId(0), 0, "first"}, Counter{CounterId(1), 0, ""}};
  Task a;
  a.id = TaskId(0);
  a.op = Opcode::GemvTile;
  a.inputs = {BufferId(0), BufferId(1)};
  a.outputs = {BufferId(2)};
  a.out_counter = CounterId(0);
  a.params.set("K", int64_t{16});
  a.params.set("eps", 1e-06);
  a.params.set("scale", 0.1);
  a.params.set("theta", 500000.0);
  a.params.set("recipe", std::string("GEMV_ADD"));
  a.params.set("causal", true);
  a.sm = 3;
  a.est_bytes = 1LL << 40;
  a.est_flops = 512;
  a.label = "tab\there \"q\" \\ \x01";
  Task b;
  b.id = TaskId(1);
  b.op = Opcode::Nop;
  b.out_counter = CounterId(1);
  b.waits = {Wait{CounterId(0), 1}, Wait{CounterId(0), 1}};
  b.sm = -1;
  p.tasks = {a, b};
  PageAllocation pa;
  pa.buffer_to_page = {{BufferId(2), PageId(0)}};
  pa.pages = {Page{PageId(0), MemSpace::Smem, 64, 0, 1}};
  p.pages = pa;
  ScheduleConfig c;
  c.tiling = {{"gemv", {{"N_tile", 16}, {"K_tile", 8}}}};
  c.fusion_grouping = {{"rmsnorm", "gemv"}, {}};
  c.sm_assignment = std::map<int64_t, int64_t>{{0, 3}, {1, -1}, {10, 2}};
  c.pipelining_depth = 0;
  c.page_allocation = "linear";
  c.threads_per_block = 128;
  c.smem_bytes_per_block = 4096;
  p.config = c;
  p.decode = {{"token_input", 0}, {"logits", 2}, {"next_token", 2}, {"max_seq", 256}, {"vocab", 1024}};
  return p;
}

std::vector<std::string> keys_of(const nlohmann::ordered_json& j) {
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  return keys;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh empty directory under the build tree, removed when the test ends.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::path(AMK_BINARY_DIR) / "tmp" / name) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("json write: a small program, byte for byte", "[ir]") {
  Program p;
  p.meta = {{"model", "toy"}};
  Buffer b;
  b.id = BufferId(0);
  b.name = "x";
  b.kind = BufferKind::IoInput;
  b.dtype = DType::F16;
  b.shape = {1, 16};
  p.buffers = {b};
  p.counters = {Counter{CounterId(0), 0, "done"}};
  Task t;
  t.id = TaskId(0);
  t.op = Opcode::RmsNorm;
  t.inputs = {BufferId(0)};
  t.out_counter = CounterId(0);
  t.params.set("eps", 1e-06);
  t.params.set("hidden", int64_t{16});
  t.label = "rmsnorm";
  p.tasks = {t};
  const std::string expected = R"({
  "ir_version": "0.2.0",
  "abi_version": "0.2",
  "meta": {
    "model": "toy"
  },
  "target": null,
  "buffers": [
    {
      "id": 0,
      "name": "x",
      "kind": "IO_INPUT",
      "dtype": "F16",
      "shape": [
        1,
        16
      ],
      "space": "HBM",
      "source": null
    }
  ],
  "counters": [
    {
      "id": 0,
      "init": 0,
      "note": "done"
    }
  ],
  "tasks": [
    {
      "id": 0,
      "op": "RMSNORM",
      "inputs": [
        0
      ],
      "outputs": [],
      "out_counter": 0,
      "waits": [],
      "params": {
        "eps": 1e-06,
        "hidden": 16
      },
      "sm": null,
      "est_bytes": 0,
      "est_flops": 0,
      "label": "rmsnorm"
    }
  ],
  "pages": null,
  "config": null
})";
  CHECK(program_to_json(p) == expected);
}

TEST_CASE("json write: layout is nlohmann's dump(2) and key order is the spec's", "[ir]") {
  const Program p = full_program();
  const std::string text = program_to_json(p);
  const auto j = nlohmann::ordered_json::parse(text);
  CHECK(j.dump(2) == text);
  CHECK(keys_of(j) == std::vector<std::string>{"ir_version", "abi_version", "meta", "target", "buffers", "counters",
                                                "tasks", "pages", "config", "decode"});
  CHECK(keys_of(j["tasks"][0]) == std::vector<std::string>{"id", "op", "inputs", "outputs", "out_counter", "waits",
                                                           "params", "sm", "est_bytes", "est_flops", "label"});
  CHECK(keys_of(j["buffers"][0]) ==
        std::vector<std::string>{"id", "name", "kind", "dtype", "shape", "space", "source"});
  CHECK(keys_of(j["counters"][0]) == std::vector<std::string>{"id", "init", "note"});
  CHECK(keys_of(j["target"]) ==
        std::vector<std::string>{"name", "sm_arch", "num_sms", "smem_bytes_per_sm", "smem_bytes_per_block_optin",
                                 "regs_per_sm", "max_threads_per_sm", "max_regs_per_thread", "l2_bytes", "hbm_bytes",
                                 "hbm_bandwidth_gbs", "fp16_tflops", "clock_ghz", "supports_cooperative", "wddm_tdr",
                                 "note"});
  CHECK(keys_of(j["config"]) == std::vector<std::string>{"tiling", "fusion_grouping", "sm_assignment",
                                                         "pipelining_depth", "page_allocation", "threads_per_block",
                                                         "smem_bytes_per_block"});
  CHECK(keys_of(j["pages"]) == std::vector<std::string>{"buffer_to_page", "pages"});
  CHECK(keys_of(j["pages"]["pages"][0]) ==
        std::vector<std::string>{"id", "space", "nbytes", "live_start", "live_end"});
  CHECK(keys_of(j["tasks"][0]["params"]) ==
        std::vector<std::string>{"K", "eps", "scale", "theta", "recipe", "causal"});
  CHECK(j["config"]["sm_assignment"].dump() == R"({"0":3,"1":-1,"10":2})");
  CHECK(j["pages"]["buffer_to_page"].dump() == R"({"2":0})");
  // Reals in the shortest form that reads back exactly.
  CHECK(text.find("\"eps\": 1e-06,") != std::string::npos);
  CHECK(text.find("\"scale\": 0.1,") != std::string::npos);
  CHECK(text.find("\"theta\": 500000.0,") != std::string::npos);
  CHECK(text.find("\"hbm_bandwidth_gbs\": 3350.0,") != std::string::npos);
  CHECK(text.find("\"label\": \"tab\\there \\\"q\\\" \\\\ \\u0001\"") != std::string::npos);
}

TEST_CASE("json write: decode is written only when set", "[ir]") {
  Program p = full_program();
  CHECK(program_to_json(p).find("\"decode\"") != std::string::npos);
  p.decode = nullptr;
  CHECK(program_to_json(p).find("\"decode\"") == std::string::npos);
}

TEST_CASE("json round trip: every field survives and the bytes are stable", "[ir]") {
  const Program p = full_program();
  const std::string first = program_to_json(p);
  Result<Program> r = program_from_json_text(first);
  REQUIRE(r.is_ok());
  const Program& q = *r;
  CHECK(program_to_json(q) == first);

  CHECK(q.ir_version == "0.2.1");
  CHECK(q.meta == p.meta);
  REQUIRE(q.target.has_value());
  CHECK(gpu_target_to_json(*q.target) == gpu_target_to_json(*p.target));
  REQUIRE(q.buffers.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(q.buffers[i].id == p.buffers[i].id);
    CHECK(q.buffers[i].name == p.buffers[i].name);
    CHECK(q.buffers[i].kind == p.buffers[i].kind);
    CHECK(q.buffers[i].dtype == p.buffers[i].dtype);
    CHECK(q.buffers[i].shape == p.buffers[i].shape);
    CHECK(q.buffers[i].space == p.buffers[i].space);
    CHECK(q.buffers[i].source == p.buffers[i].source);
  }
  REQUIRE(q.counters.size() == 2);
  CHECK(q.counters[0].note == "first");
  REQUIRE(q.tasks.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const Task& a = p.tasks[i];
    const Task& b = q.tasks[i];
    CHECK(b.id == a.id);
    CHECK(b.op == a.op);
    CHECK(b.inputs == a.inputs);
    CHECK(b.outputs == a.outputs);
    CHECK(b.out_counter == a.out_counter);
    CHECK(b.waits == a.waits);
    CHECK(b.params == a.params);
    CHECK(b.sm == a.sm);
    CHECK(b.est_bytes == a.est_bytes);
    CHECK(b.est_flops == a.est_flops);
    CHECK(b.label == a.label);
  }
  REQUIRE(q.pages.has_value());
  CHECK(q.pages->buffer_to_page == p.pages->buffer_to_page);
  CHECK(q.pages->pages[0].nbytes == 64);
  CHECK(q.pages->pages[0].live_end == 1);
  REQUIRE(q.config.has_value());
  CHECK(schedule_config_to_json(*q.config) == schedule_config_to_json(*p.config));
  CHECK(q.decode == p.decode);
}

TEST_CASE("json round trip: a buffer bound twice stays bound twice (validate() reports it)", "[ir]") {
  Program p = full_program();
  p.pages->buffer_to_page.push_back({BufferId(2), PageId(0)});
  const std::string first = program_to_json(p);
  Result<Program> r = program_from_json_text(first);
  REQUIRE(r.is_ok());
  CHECK(r->pages->buffer_to_page.size() == 2);
  CHECK(program_to_json(*r) == first);
}

TEST_CASE("json round trip: reals and integers at the edges", "[ir]") {
  Program p = full_program();
  const std::vector<double> reals = {0.1, 1.0 / 3.0, 1e-300, 4.9e-324, 1.7976931348623157e308, -0.0, 123456789.0, 1e21};
  for (size_t i = 0; i < reals.size(); ++i) p.tasks[1].params.set("r" + std::to_string(i), reals[i]);
  p.tasks[1].params.set("imin", INT64_MIN);
  p.tasks[1].params.set("imax", INT64_MAX);
  const std::string first = program_to_json(p);
  Result<Program> r = program_from_json_text(first);
  REQUIRE(r.is_ok());
  CHECK(program_to_json(*r) == first);
  for (size_t i = 0; i < reals.size(); ++i) {
    const ParamValue* v = r->tasks[1].params.find("r" + std::to_string(i));
    REQUIRE(v != nullptr);
    REQUIRE(std::holds_alternative<double>(*v));
    CHECK(std::get<double>(*v) == reals[i]);
  }
  CHECK(r->tasks[1].params.get_int("imin") == INT64_MIN);
  CHECK(r->tasks[1].params.get_int("imax") == INT64_MAX);
}

TEST_CASE("json round trip: a program big enough to size the task list from the text", "[ir]") {
  Program p = full_program();
  p.tasks.resize(5000, p.tasks[0]);
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    p.tasks[i].id = TaskId(static_cast<int32_t>(i));
    p.tasks[i].label = "t" + std::to_string(i);
  }
  const std::string first = program_to_json(p);
  Result<Program> r = program_from_json_text(first);
  REQUIRE(r.is_ok());
  REQUIRE(r->tasks.size() == 5000);
  CHECK(r->tasks[4999].label == "t4999");
  CHECK(program_to_json(*r) == first);
}

TEST_CASE("program_save: writes atomically and reads back", "[ir]") {
  TempDir dir("json_save");
  const fs::path path = dir.path / "program.json";
  const Program p = full_program();
  Status s = program_save(p, path.string());
  REQUIRE(s.is_ok());
  CHECK(read_file(path) == program_to_json(p) + "\n");
  // Overwriting keeps nothing of the old file and leaves no temporary behind.
  Program small;
  s = program_save(small, path.string());
  REQUIRE(s.is_ok());
  CHECK(read_file(path) == program_to_json(small) + "\n");
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) {
    ++entries;
    CHECK(e.path().filename() == "program.json");
  }
  CHECK(entries == 1);
  Result<Program> r = program_load(path.string());
  REQUIRE(r.is_ok());
  CHECK(program_to_json(*r) == program_to_json(small));
}

TEST_CASE("program_save: a failure names the path and leaves the old file", "[ir]") {
  TempDir dir("json_save_fail");
  const fs::path missing = dir.path / "no_such_dir" / "p.json";
  Status s = program_save(full_program(), missing.string());
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.code() == StatusCode::IoError);
  CHECK_THAT(s.message(), Catch::StartsWith(missing.string() + ": cannot create a temporary file: "));

  // Renaming over a directory fails after the temporary was written: it must be removed again.
  const fs::path target = dir.path / "is_a_dir";
  fs::create_directories(target / "child");
  s = program_save(full_program(), target.string());
  REQUIRE_FALSE(s.is_ok());
  CHECK_THAT(s.message(), Catch::StartsWith(target.string() + ": cannot rename the temporary file into place: "));
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) entries += e.path().filename() == "is_a_dir" ? 0 : 1;
  CHECK(entries == 0);
}

TEST_CASE("program_load: \"-\" reads standard input", "[ir]") {
  TempDir dir("json_stdin");
  const fs::path path = dir.path / "in.json";
  const Program p = full_program();
  REQUIRE(program_save(p, path.string()).is_ok());
  const int saved = ::dup(STDIN_FILENO);
  REQUIRE(saved >= 0);
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::dup2(fd, STDIN_FILENO) == STDIN_FILENO);
  ::close(fd);
  Result<Program> r = program_load("-");
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
  REQUIRE(r.is_ok());
  CHECK(program_to_json(*r) == program_to_json(p));
}

TEST_CASE("gpu_target json: round trip in field order", "[ir]") {
  GpuTarget t = *full_program().target;
  const nlohmann::ordered_json j = gpu_target_to_json(t);
  CHECK(j.size() == 16);
  Result<GpuTarget> back = gpu_target_from_json(nlohmann::json(j), "target");
  REQUIRE(back.is_ok());
  CHECK(gpu_target_to_json(*back) == j);
  CHECK(back->hbm_bytes == 85899345920);
  CHECK(back->fp16_tflops == 989.4);
}
