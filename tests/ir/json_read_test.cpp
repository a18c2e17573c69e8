// tests/ir/json_read_test.cpp: program_from_json_text and program_load on good and bad input.
// Every malformed case checks the exact message (JSON path first, then expected and got) and the
// status code, and that nothing throws.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/json.h"

using amk::StatusCode;
using amk::Result;
using amk::Status;
using namespace amk::ir;

namespace {

const std::string kFixtures = std::string(AMK_SOURCE_DIR) + "/tests/fixtures/json/";

Result<Program> parse(const std::string& text) {
  std::optional<Result<Program>> r;
  REQUIRE_NOTHROW(r.emplace(program_from_json_text(text)));
  return std::move(*r);
}

// A small well-formed program: two buffers, one counter, a COPY and a NOP waiting on it.
nlohmann::ordered_json base_program() {
  return nlohmann::ordered_json::parse(R"({
    "ir_version": "0.2.0", "abi_version": "0.2", "meta": {"model": "t"},
    "buffers": [
      {"id": 0, "name": "x", "kind": "IO_INPUT", "dtype": "F32", "shape": [4]},
      {"id": 1, "name": "y", "kind": "IO_OUTPUT", "dtype": "F32", "shape": [4]}],
    "counters": [{"id": 0}, {"id": 1}],
    "tasks": [
      {"id": 0, "op": "COPY", "inputs": [0], "outputs": [1], "out_counter": 0, "params": {"eps": 1e-06, "K": 4}},
      {"id": 1, "op": "NOP", "inputs": [], "outputs": [], "out_counter": 1,
       "waits": [{"counter": 0, "threshold": 1}]}],
    "pages": {"buffer_to_page": {"1": 0}, "pages": [{"id": 0, "space": "SMEM", "nbytes": 16}]},
    "config": {"sm_assignment": {"0": 0}},
    "target": {"name": "h100", "num_sms": 132}
  })");
}

// base_program() with the value at JSON pointer `ptr` replaced by the raw JSON text `raw` (raw text,
// so that literals a DOM cannot hold, such as 1e400, can be written).
std::string with_value(const std::string& ptr, const std::string& raw) {
  nlohmann::ordered_json j = base_program();
  j[nlohmann::ordered_json::json_pointer(ptr)] = "@@RAW@@";
  std::string text = j.dump();
  text.replace(text.find("\"@@RAW@@\""), 9, raw);
  return text;
}

// base_program() without the key at `ptr`.
std::string without(const std::string& ptr) {
  nlohmann::ordered_json j = base_program();
  const auto p = nlohmann::ordered_json::json_pointer(ptr);
  j[p.parent_pointer()].erase(p.back());
  return j.dump();
}

void check_error(const std::string& text, StatusCode code, const std::string& message) {
  Result<Program> r = parse(text);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message() == message);
  CHECK(r.status().code() == code);
}

}  // namespace

TEST_CASE("json read: the base program loads with every field", "[ir]") {
  Result<Program> r = parse(base_program().dump());
  REQUIRE(r.is_ok());
  const Program& p = *r;
  CHECK(p.ir_version == "0.2.0");
  CHECK(p.meta == nlohmann::ordered_json{{"model", "t"}});
  REQUIRE(p.buffers.size() == 2);
  CHECK(p.buffers[1].kind == BufferKind::IoOutput);
  CHECK(p.buffers[1].shape == std::vector<int64_t>{4});
  REQUIRE(p.tasks.size() == 2);
  CHECK(p.tasks[0].op == Opcode::Copy);
  CHECK(p.tasks[0].inputs == std::vector<BufferId>{BufferId(0)});
  CHECK(p.tasks[0].params.get_int("K") == 4);
  CHECK(p.tasks[0].params.get_real("eps") == 1e-06);
  CHECK(p.tasks[1].waits == std::vector<Wait>{Wait{CounterId(0), 1}});
  REQUIRE(p.pages.has_value());
  REQUIRE(p.pages->buffer_to_page.size() == 1);
  CHECK(p.pages->buffer_to_page[0] == std::make_pair(BufferId(1), PageId(0)));
  CHECK(p.pages->pages[0].space == MemSpace::Smem);
  REQUIRE(p.config.has_value());
  CHECK(std::get<std::map<int64_t, int64_t>>(p.config->sm_assignment) == std::map<int64_t, int64_t>{{0, 0}});
  REQUIRE(p.target.has_value());
  CHECK(p.target->num_sms == 132);
}

TEST_CASE("json read: absent optional fields take their defaults", "[ir]") {
  Result<Program> r = parse(R"({"buffers": [{"id": 0, "name": "w", "kind": "WEIGHT", "dtype": "BF16", "shape": []}],
    "counters": [{"id": 0}],
    "tasks": [{"id": 0, "op": "NOP", "inputs": [], "outputs": [], "out_counter": 0}]})");
  REQUIRE(r.is_ok());
  const Program& p = *r;
  CHECK(p.ir_version == kIrVersion);
  CHECK(p.abi_version == kAbiVersion);
  CHECK(p.meta == nlohmann::ordered_json::object());
  CHECK_FALSE(p.target.has_value());
  CHECK_FALSE(p.pages.has_value());
  CHECK_FALSE(p.config.has_value());
  CHECK(p.decode.is_null());
  CHECK(p.buffers[0].space == MemSpace::Hbm);
  CHECK_FALSE(p.buffers[0].source.has_value());
  CHECK(p.buffers[0].shape.empty());
  CHECK(p.counters[0].init == 0);
  CHECK(p.counters[0].note.empty());
  const Task& t = p.tasks[0];
  CHECK(t.waits.empty());
  CHECK(t.params.empty());
  CHECK_FALSE(t.sm.has_value());
  CHECK(t.est_bytes == 0);
  CHECK(t.est_flops == 0);
  CHECK(t.label.empty());
}

TEST_CASE("json read: null target, pages, config and meta are accepted", "[ir]") {
  Result<Program> r = parse(R"({"meta": null, "target": null, "pages": null, "config": null,
    "buffers": [], "counters": [], "tasks": []})");
  REQUIRE(r.is_ok());
  CHECK(r->meta == nlohmann::ordered_json::object());
  CHECK_FALSE(r->target.has_value());
  CHECK_FALSE(r->pages.has_value());
  CHECK_FALSE(r->config.has_value());
}

TEST_CASE("json read: params keep their JSON types for validate() to judge", "[ir]") {
  Result<Program> r = parse(with_value("/tasks/0/params",
                                       R"({"K": 4.0, "N_tile": true, "recipe": "GEMV_ADD", "n_off": -3, "x": 1e-300})"));
  REQUIRE(r.is_ok());
  const Params& params = r->tasks[0].params;
  REQUIRE(params.size() == 5);
  CHECK(std::get<double>(*params.find("K")) == 4.0);
  CHECK(std::get<bool>(*params.find("N_tile")) == true);
  CHECK(std::get<std::string>(*params.find("recipe")) == "GEMV_ADD");
  CHECK(std::get<int64_t>(*params.find("n_off")) == -3);
  CHECK(params.items()[4].first == "x");
}

TEST_CASE("json read: sm may be negative (validate reports it) or null", "[ir]") {
  Result<Program> r = parse(with_value("/tasks/0/sm", "-3"));
  REQUIRE(r.is_ok());
  CHECK(r->tasks[0].sm == -3);
  r = parse(with_value("/tasks/0/sm", "null"));
  REQUIRE(r.is_ok());
  CHECK_FALSE(r->tasks[0].sm.has_value());
}

TEST_CASE("json read: versions: only the major component must match", "[ir]") {
  Result<Program> r = parse(with_value("/ir_version", "\"0.9.7\""));
  REQUIRE(r.is_ok());
  CHECK(r->ir_version == "0.9.7");
  check_error(with_value("/ir_version", "\"1.0.0\""), StatusCode::Unsupported,
              "ir_version: expected major version 0 (this build reads 0.2.0), got \"1.0.0\"");
  check_error(with_value("/abi_version", "\"1.0\""), StatusCode::Unsupported,
              "abi_version: expected major version 0 (this build reads 0.2), got \"1.0\"");
  check_error(with_value("/ir_version", "2"), StatusCode::InvalidArgument,
              "ir_version: expected a version string like \"0.2.0\", got 2");
  check_error(with_value("/ir_version", "\"v0.2\""), StatusCode::InvalidArgument,
              "ir_version: expected a version string like \"0.2.0\", got \"v0.2\"");
}

TEST_CASE("json read: unknown keys are ignored or dropped", "[ir]") {
  nlohmann::ordered_json j = base_program();
  j["future_section"] = {{"a", {1, 2, {{"b", nullptr}}}}};
  j["target"]["pcie_gen"] = 5;
  j["config"]["autotune"] = {{"budget", 3}};
  j["tasks"][0]["priority"] = 7;
  j["buffers"][0]["alignment"] = {64};
  j["pages"]["pages"][0]["bank"] = 2;
  Result<Program> r = parse(j.dump());
  REQUIRE(r.is_ok());
  const std::string out = program_to_json(*r);
  for (const char* dropped : {"future_section", "pcie_gen", "autotune", "priority", "alignment", "bank"})
    CHECK(out.find(dropped) == std::string::npos);
}

TEST_CASE("json read: decode is kept verbatim", "[ir]") {
  Result<Program> r = parse(with_value("/decode", R"({"advance": [{"task": 0, "param": "pos", "step": 1}], "z": 1.5})"));
  REQUIRE(r.is_ok());
  CHECK(r->decode.dump() == R"({"advance":[{"task":0,"param":"pos","step":1}],"z":1.5})");
  r = parse(with_value("/decode", "[1, \"two\"]"));
  REQUIRE(r.is_ok());
  CHECK(r->decode == nlohmann::ordered_json::array({1, "two"}));
}

TEST_CASE("json read: wrong types name the path, what was expected and what was got", "[ir]") {
  const StatusCode bad = StatusCode::InvalidArgument;
  check_error(with_value("/tasks/1/waits/0/threshold", "1.5"), bad,
              "tasks[1].waits[0].threshold: expected a positive integer, got 1.5");
  check_error(with_value("/tasks/1/waits/0/threshold", "-1"), bad,
              "tasks[1].waits[0].threshold: expected a positive integer, got -1");
  check_error(with_value("/tasks/1/waits/0/threshold", "0"), bad,
              "tasks[1].waits[0].threshold: expected a positive integer, got 0");
  check_error(with_value("/tasks/0/out_counter", "true"), bad,
              "tasks[0].out_counter: expected a non-negative int32 id, got true");
  check_error(with_value("/tasks/0/inputs/0", "-1"), bad,
              "tasks[0].inputs[0]: expected a non-negative int32 id, got -1");
  check_error(with_value("/tasks/0/inputs/0", "\"0\""), bad,
              "tasks[0].inputs[0]: expected a non-negative int32 id, got \"0\"");
  check_error(with_value("/tasks/0/sm", "1.5"), bad, "tasks[0].sm: expected an int32 SM index or null, got 1.5");
  check_error(with_value("/tasks/0/sm", "2147483648"), bad,
              "tasks[0].sm: expected an int32 SM index or null, got 2147483648");
  check_error(with_value("/tasks/0/est_bytes", "1.0"), bad, "tasks[0].est_bytes: expected an int64 integer, got 1.0");
  check_error(with_value("/tasks/0/label", "5"), bad, "tasks[0].label: expected a string, got 5");
  check_error(with_value("/tasks/0/inputs", "{}"), bad,
              "tasks[0].inputs: expected an array of non-negative int32 ids, got an object");
  check_error(with_value("/tasks/0/params", "[]"), bad, "tasks[0].params: expected an object of scalar params, got an array");
  check_error(with_value("/tasks/0/params/K", "null"), bad,
              "tasks[0].params.K: expected a scalar param value (integer, finite real, string or bool), got null");
  check_error(with_value("/tasks/0/params/K", "[4]"), bad,
              "tasks[0].params.K: expected a scalar param value (integer, finite real, string or bool), got an array");
  check_error(with_value("/tasks", "{}"), bad, "tasks: expected an array, got an object");
  check_error(with_value("/buffers/0", "3"), bad, "buffers[0]: expected a buffer object, got 3");
  check_error(with_value("/buffers/0/shape/0", "\"4\""), bad, "buffers[0].shape[0]: expected an int64 integer, got \"4\"");
  check_error(with_value("/buffers/1/source", "7"), bad, "buffers[1].source: expected a string or null, got 7");
  check_error(with_value("/counters/1/init", "false"), bad, "counters[1].init: expected an int64 integer, got false");
  check_error(with_value("/meta", "[1]"), bad, "meta: expected an object, got an array");
  check_error(with_value("/target", "\"h100\""), bad, "target: expected an object or null, got \"h100\"");
  check_error(with_value("/target/num_sms", "\"132\""), bad, "target.num_sms: expected an int64 integer, got \"132\"");
  check_error(with_value("/target/supports_cooperative", "1"), bad,
              "target.supports_cooperative: expected a bool, got 1");
  check_error(with_value("/config/pipelining_depth", "2.5"), bad,
              "config.pipelining_depth: expected an int64 integer, got 2.5");
  check_error(with_value("/config/sm_assignment", "3"), bad,
              "config.sm_assignment: expected a strategy name or an object {task id: sm}, got 3");
  check_error(with_value("/config/tiling", R"({"gemv": {"N_tile": 1.5}})"), bad,
              "config.tiling.gemv.N_tile: expected an int64 integer, got 1.5");
  check_error(with_value("/pages/pages/0/nbytes", "\"16\""), bad,
              "pages.pages[0].nbytes: expected an int64 integer, got \"16\"");
  check_error(with_value("/pages/buffer_to_page/1", "1.5"), bad,
              "pages.buffer_to_page[\"1\"]: expected a non-negative int32 id, got 1.5");
}

TEST_CASE("json read: object keys that must be integers", "[ir]") {
  const StatusCode bad = StatusCode::InvalidArgument;
  check_error(with_value("/pages/buffer_to_page", R"({"x": 0})"), bad,
              "pages.buffer_to_page.x: expected a non-negative int32 buffer id as the key, got \"x\"");
  check_error(with_value("/pages/buffer_to_page", R"({"-1": 0})"), bad,
              "pages.buffer_to_page[\"-1\"]: expected a non-negative int32 buffer id as the key, got \"-1\"");
  check_error(with_value("/pages/buffer_to_page", R"({"2147483648": 0})"), bad,
              "pages.buffer_to_page[\"2147483648\"]: expected a non-negative int32 buffer id as the key, got \"2147483648\"");
  check_error(with_value("/config/sm_assignment", R"({"t1": 0})"), bad,
              "config.sm_assignment.t1: expected an integer task id as the key, got \"t1\"");
  Result<Program> r = parse(with_value("/config/sm_assignment", R"({"10": 1, "2": 0})"));
  REQUIRE(r.is_ok());
  CHECK(std::get<std::map<int64_t, int64_t>>(r->config->sm_assignment) == std::map<int64_t, int64_t>{{2, 0}, {10, 1}});
}

TEST_CASE("json read: unknown enum names", "[ir]") {
  const StatusCode bad = StatusCode::InvalidArgument;
  check_error(with_value("/buffers/0/dtype", "\"FP32\""), bad,
              "buffers[0].dtype: expected a dtype name (F32, F16, BF16, F8E4M3, F8E5M2, I32, I8, I4, U8, BOOL), got \"FP32\"");
  check_error(with_value("/buffers/0/kind", "\"WEIGHTS\""), bad,
              "buffers[0].kind: expected a buffer kind name (WEIGHT, ACTIVATION, KV_CACHE, IO_INPUT, IO_OUTPUT, CONST), "
              "got \"WEIGHTS\"");
  check_error(with_value("/pages/pages/0/space", "\"DRAM\""), bad,
              "pages.pages[0].space: expected a memory space name (HBM, GLOBAL_SCRATCH, SMEM, REGISTER), got \"DRAM\"");
  check_error(with_value("/buffers/0/dtype", "2"), bad,
              "buffers[0].dtype: expected a dtype name (F32, F16, BF16, F8E4M3, F8E5M2, I32, I8, I4, U8, BOOL), got 2");
  Result<Program> r = parse(with_value("/tasks/0/op", "\"GEMV\""));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::StartsWith("tasks[0].op: expected an opcode name (NOP, COPY, "));
  CHECK_THAT(r.status().message(), Catch::EndsWith("ATTENTION_COMBINE, FUSED), got \"GEMV\""));
}

TEST_CASE("json read: huge and non-finite numbers", "[ir]") {
  const StatusCode bad = StatusCode::InvalidArgument;
  check_error(with_value("/tasks/0/id", "1e400"), bad, "tasks[0].id: expected a finite number, got 1e400");
  check_error(with_value("/tasks/0/params/eps", "1e400"), bad, "tasks[0].params.eps: expected a finite number, got 1e400");
  check_error(with_value("/meta/x", "-1e400"), bad, "meta.x: expected a finite number, got -1e400");
  check_error(with_value("/unknown_key", "[0, 1E999]"), bad, "unknown_key[1]: expected a finite number, got 1E999");
  check_error(with_value("/tasks/0/id", "99999999999999999999"), bad,
              "tasks[0].id: expected a non-negative int32 id, got 99999999999999999999");
  check_error(with_value("/tasks/0/params/K", "99999999999999999999"), bad,
              "tasks[0].params.K: expected an integer within int64, got 99999999999999999999");
  check_error(with_value("/tasks/0/params/K", "9223372036854775808"), bad,
              "tasks[0].params.K: expected an integer within int64, got 9223372036854775808");
  check_error(with_value("/tasks/0/est_flops", "18446744073709551615"), bad,
              "tasks[0].est_flops: expected an int64 integer, got 18446744073709551615");
  check_error(with_value("/buffers/1/id", "2147483648"), bad,
              "buffers[1].id: expected a non-negative int32 id, got 2147483648");
  check_error(with_value("/counters/0/id", "4294967296"), bad,
              "counters[0].id: expected a non-negative int32 id, got 4294967296");
  // The extremes that do fit are kept exactly.
  Result<Program> r = parse(with_value("/tasks/0/params/K", "-9223372036854775808"));
  REQUIRE(r.is_ok());
  CHECK(r->tasks[0].params.get_int("K") == INT64_MIN);
  r = parse(with_value("/buffers/1/id", "2147483647"));
  REQUIRE(r.is_ok());
  CHECK(r->buffers[1].id.value == 2147483647);
}

TEST_CASE("json read: missing and duplicate keys", "[ir]") {
  const StatusCode bad = StatusCode::InvalidArgument;
  check_error(without("/tasks/0/out_counter"), bad, "tasks[0]: missing required key \"out_counter\"");
  check_error(without("/tasks/1/waits/0/threshold"), bad, "tasks[1].waits[0]: missing required key \"threshold\"");
  check_error(without("/buffers/1/dtype"), bad, "buffers[1]: missing required key \"dtype\"");
  check_error(without("/tasks"), bad, "(root): missing required key \"tasks\"");
  check_error(without("/pages/pages"), bad, "pages: missing required key \"pages\"");
  check_error(without("/target/name"), bad, "target: missing required key \"name\"");
  check_error(R"({"buffers": [], "counters": [], "tasks": [], "tasks": []})", bad, "tasks: duplicate key");
  check_error(with_value("/tasks/0", R"({"id": 0, "id": 1})"), bad, "tasks[0].id: duplicate key");
}

TEST_CASE("json read: malformed JSON gives a parse error with line and column", "[ir]") {
  const StatusCode parse_error = StatusCode::ParseError;
  check_error("", parse_error, "(root): invalid JSON at line 1, column 1: empty input: expected a JSON value");
  check_error(" \n ", parse_error, "(root): invalid JSON at line 2, column 2: empty input: expected a JSON value");
  check_error(R"({"buffers": [], "counters": [], "tasks": [{"id": 0, "op": "NO)", parse_error,
              "tasks[0].op: invalid JSON at line 1, column 62: invalid string: unexpected end of input (missing "
              "closing '\"')");
  check_error("{\"buffers\": [],\n \"counters\": [{\"id\": 0},", parse_error,
              "counters: invalid JSON at line 2, column 25: unexpected end of input: expected a value");
  check_error(R"({"buffers": [], "counters": [], "tasks": []} x)", parse_error,
              "(root): invalid JSON at line 1, column 46: unexpected 'x' after the JSON value: expected end of input");
  check_error(R"({"buffers": [], "counters": [], "tasks": [],})", parse_error,
              "(root): invalid JSON at line 1, column 45: expected an object key (a string), got '}'");
  check_error(R"({"meta": {"x": NaN}})", parse_error, "meta.x: invalid JSON at line 1, column 16: expected a value, got 'N'");
  check_error("{\"meta\": {\"x\": \"a\xC3\"}}", parse_error,
              "meta.x: invalid JSON at line 1, column 19: invalid string: ill-formed UTF-8 sequence");
  check_error("{\"meta\": {\"x\": \"a\nb\"}}", parse_error,
              "meta.x: invalid JSON at line 1, column 18: invalid string: control character byte 0x0A must be escaped");
}

TEST_CASE("json read: not an object", "[ir]") {
  const StatusCode bad = StatusCode::InvalidArgument;
  check_error("[1, 2]", bad, "(root): expected a JSON object, got an array");
  check_error("null", bad, "(root): expected a JSON object, got null");
  check_error("\"program\"", bad, "(root): expected a JSON object, got \"program\"");
  check_error("3.5", bad, "(root): expected a JSON object, got 3.5");
}

TEST_CASE("json read: deep nesting is an error, never a stack overflow", "[ir]") {
  const std::string deep(100000, '[');
  check_error(deep, StatusCode::InvalidArgument, "(root): expected a JSON object, got an array");

  for (const std::string& prefix : {std::string(R"({"meta": {"x": )"), std::string(R"({"decode": )"),
                                    std::string(R"({"future": )")}) {
    Result<Program> r = parse(prefix + deep);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::ParseError);
    CHECK_THAT(r.status().message(), Catch::EndsWith(": nesting deeper than 512 levels"));
    CHECK_THAT(r.status().message(), Catch::Contains("[0][0][0][...][0][0]"));
  }
  Result<Program> r = parse(R"({"meta": {"x": )" + deep);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::StartsWith("meta.x[0][0][0]"));

  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\": ";
  r = parse(R"({"tasks": [{"params": )" + objects);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message() ==
        "tasks[0].params.a: expected a scalar param value (integer, finite real, string or bool), got an object");

  // Brackets inside strings are not nesting.
  r = parse(R"({"meta": {"s": ")" + deep + R"("}, "buffers": [], "counters": [], "tasks": []})");
  REQUIRE(r.is_ok());
  CHECK(r->meta["s"].get<std::string>().size() == deep.size());
}

TEST_CASE("json read: escapes and UTF-8 in strings", "[ir]") {
  Result<Program> r = parse(with_value("/tasks/0/label", R"("a\"b\\c\/d\n\u00e9\ud83d\ude00")"));
  REQUIRE(r.is_ok());
  CHECK(r->tasks[0].label == "a\"b\\c/d\n\xC3\xA9\xF0\x9F\x98\x80");
  r = parse(with_value("/tasks/0/label", "\"\xE2\x86\x92 ok\""));
  REQUIRE(r.is_ok());
  CHECK(r->tasks[0].label == "\xE2\x86\x92 ok");
}

TEST_CASE("json read: the original Python format loads", "[ir]") {
  Result<Program> r = program_load(kFixtures + "original_format.json");
  REQUIRE(r.is_ok());
  const Program& p = *r;
  CHECK(p.meta["notes"] == "tile 16\xC3\x97" "16 \xE2\x86\x92 argmax");
  REQUIRE(p.target.has_value());
  CHECK(p.target->name == "rtx5090");
  CHECK(p.target->num_sms == 82);
  CHECK(p.target->hbm_bytes == 34359738368);
  CHECK(p.target->hbm_bandwidth_gbs == 1792.0);
  CHECK(p.target->wddm_tdr);
  REQUIRE(p.buffers.size() == 6);
  CHECK(p.buffers[1].source == std::optional<std::string>("model.norm.weight"));
  CHECK(p.buffers[2].space == MemSpace::GlobalScratch);
  REQUIRE(p.tasks.size() == 4);
  for (const Task& t : p.tasks) CHECK_FALSE(t.sm.has_value());
  CHECK(p.tasks[1].est_bytes == 544);
  CHECK(p.tasks[3].waits == std::vector<Wait>{Wait{CounterId(1), 2}});
  REQUIRE(p.pages.has_value());
  CHECK(p.pages->buffer_to_page ==
        std::vector<std::pair<BufferId, PageId>>{{BufferId(2), PageId(0)}, {BufferId(4), PageId(1)}});
  REQUIRE(p.config.has_value());
  CHECK(p.config->fusion_grouping == std::vector<std::vector<std::string>>{{"rmsnorm", "gemv"}});
  CHECK(std::get<std::map<int64_t, int64_t>>(p.config->sm_assignment) ==
        std::map<int64_t, int64_t>{{0, 0}, {1, 1}, {2, 2}, {3, 0}});
  CHECK(p.config->tiling.at("gemv").at("N_tile") == 16);
  const std::string out = program_to_json(p);
  CHECK(out.find("pcie_gen") == std::string::npos);
  CHECK(out.find("autotune_budget_s") == std::string::npos);
  CHECK(out.find("flywheel_run") == std::string::npos);
}

TEST_CASE("json load: files, errors naming the file, empty and truncated files", "[ir]") {
  Result<Program> r = program_load(kFixtures + "does_not_exist.json");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::IoError);
  CHECK(r.status().message() == kFixtures + "does_not_exist.json: cannot open: No such file or directory");

  r = program_load(kFixtures);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::IoError);
  CHECK(r.status().message() == kFixtures + ": cannot read: is a directory");

  r = program_load(kFixtures + "empty.json");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::ParseError);
  CHECK(r.status().message() == "(root): invalid JSON at line 1, column 1: empty input: expected a JSON value");

  r = program_load(kFixtures + "truncated.json");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::ParseError);
  CHECK(r.status().message() ==
        "counters[1]: invalid JSON at line 110, column 8: invalid string: unexpected end of input (missing closing "
        "'\"')");
}

TEST_CASE("gpu_target_from_json: defaults, dropped keys and errors", "[ir]") {
  Result<GpuTarget> t = gpu_target_from_json(nlohmann::json{{"name", "x"}, {"clock_ghz", 2}, {"zzz", 1}}, "target");
  REQUIRE(t.is_ok());
  CHECK(t->name == "x");
  CHECK(t->num_sms == 0);
  CHECK(t->clock_ghz == 2.0);
  CHECK(t->supports_cooperative);
  CHECK_FALSE(t->wddm_tdr);

  t = gpu_target_from_json(nlohmann::json{{"num_sms", 1}}, "");
  REQUIRE_FALSE(t.is_ok());
  CHECK(t.status().message() == "(root): missing required key \"name\"");
  t = gpu_target_from_json(nlohmann::json::array(), "t");
  REQUIRE_FALSE(t.is_ok());
  CHECK(t.status().message() == "t: expected an object, got an array");
  t = gpu_target_from_json(nlohmann::json{{"name", "x"}, {"hbm_bandwidth_gbs", "fast"}}, "t");
  REQUIRE_FALSE(t.is_ok());
  CHECK(t.status().message() == "t.hbm_bandwidth_gbs: expected a finite number, got \"fast\"");
  t = gpu_target_from_json(nlohmann::json{{"name", "x"}, {"l2_bytes", 1.5}}, "");
  REQUIRE_FALSE(t.is_ok());
  CHECK(t.status().message() == "l2_bytes: expected an int64 integer, got 1.5");
}
