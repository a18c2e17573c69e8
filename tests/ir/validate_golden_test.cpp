// tests/ir/validate_golden_test.cpp: invalid programs on disk (tests/golden/invalid/<case>.json)
// with the diagnostics they must produce (<case>.expected.txt: the report without its stats line),
// and valid ones (tests/golden/valid/<case>.json) that must be accepted with the recorded report.
// The fixtures are written from the builder programs below by the hidden test
// amk_tests "[.golden-write]"; review the diff of the .expected.txt files when they change.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <sstream>

#include "attention_gemv_programs.h"
#include "fold_programs.h"
#include "ir/json.h"
#include "ir/validate.h"
#include "ir/program_builder.h"

using namespace amk::ir;
using amk::testing::AttentionGemvLayer;
using amk::testing::FoldJoin;
using amk::testing::ProgramBuilder;

namespace {

Program cycle() {
  ProgramBuilder b;
  const int x = b.input("x", {4}), h = b.act("h", {4}), g = b.act("g", {4});
  const int ca = b.counter("a done"), cb = b.counter("b done");
  b.copy("a", x, h).signal(ca).wait(cb, 1);
  b.copy("b", x, g).signal(cb).wait(ca, 1);
  return b.build();
}

Program queue_order() {
  ProgramBuilder b;
  const int x = b.input("x", {4}), h = b.act("h", {4}), g = b.act("g", {4});
  const int ca = b.counter("consumer done"), cb = b.counter("h ready");
  b.copy("consumer", h, g).signal(ca).wait(cb, 1).sm(0);
  b.copy("producer", x, h).signal(cb).sm(0);
  return b.build();
}

Program race_war() {
  ProgramBuilder b;
  const int x = b.input("x", {8}), h = b.act("h", {8}), y = b.output("y", {8}), z = b.output("z", {8});
  const int c0 = b.counter("h v1"), c1 = b.counter("read v1"), c2 = b.counter("h v2");
  b.copy("write1", x, h).signal(c0);
  b.copy("read1", h, y).signal(c1).wait(c0, 1);
  b.copy("write2", x, h).signal(c2).wait(c0, 1);
  b.copy("read2", h, z).wait(c2, 1);
  return b.build();
}

Program overlapping_tiles() {
  ProgramBuilder b;
  const int x = b.input("x", {1, 16}), w = b.weight("W", {16, 16}), q = b.act("q", {1, 16}), y = b.output("y", {1, 16});
  const int c = b.counter("q tiles");
  for (int i = 0; i < 4; ++i) b.gemv("q.t" + std::to_string(i), x, w, q, 16, i == 2 ? 6 : 4 * i, 4).signal(c);
  b.copy("rope", q, y).wait(c, 4);
  return b.build();
}

Program self_read() {
  ProgramBuilder b;
  const int x = b.input("x", {8}), h = b.act("h", {8});
  b.task(Opcode::Add, "accumulate").in({h, x}).out({h});
  return b.build();
}

Program kv_before_append() {
  ProgramBuilder b;
  const int q = b.input("q", {8}), knew = b.input("k_new", {4});
  const int kc = b.kv("k_cache", {16, 4}), vc = b.kv("v_cache", {16, 4}), o = b.output("attn", {8});
  const int ca = b.counter("attn done");
  b.task(Opcode::AttentionTile, "attn").in({q, kc, vc}).out({o}).signal(ca).i("head_dim", 4).i("kv_start", 0).i("kv_len", 4)
      .param("scale", 0.5).i("n_heads", 2).i("n_kv_heads", 1);
  b.task(Opcode::KvAppend, "kv_append").in({knew, kc}).out({kc}).i("pos", 3).wait(ca, 1);
  return b.build();
}

Program partial_wait() {
  ProgramBuilder b;
  const int x = b.input("x", {8}), a = b.act("a", {8}), bb = b.act("b", {8}), y = b.output("y", {8});
  const int c = b.counter("either");
  b.copy("p1", x, a).signal(c);
  b.copy("p2", x, bb).signal(c);
  b.copy("consumer", a, y).wait(c, 1);
  return b.build();
}

Program page_clobber() {
  ProgramBuilder b;
  const int x = b.input("x", {8}), a = b.act("a", {8}), bv = b.act("b", {8}), ya = b.output("ya", {8}), yb = b.output("yb", {8});
  const int ca = b.counter("a ready"), cra = b.counter("a consumed"), cb = b.counter("b ready");
  b.copy("write_a", x, a).signal(ca);
  b.copy("read_a", a, ya).signal(cra).wait(ca, 1);
  b.copy("write_b", x, bv).signal(cb).wait(ca, 1);
  b.copy("read_b", bv, yb).wait(cb, 1);
  b.page({a, bv}, 32);
  return b.build();
}

Program structural() {
  // One program, several structural errors: a write into a WEIGHT, a counter init, a mistyped
  // int param, a tile outside its buffer, an unsatisfiable wait, an unwritten output.
  ProgramBuilder b;
  const int x = b.input("x", {1, 16}), w = b.weight("W", {32, 16}), y = b.output("y", {1, 32}), z = b.output("z", {4});
  const int c = b.counter("tiles");
  b.gemv("lm.t0", x, w, y, 16, 0, 16).signal(c).param("K", 16.0);
  b.gemv("lm.t1", x, w, y, 16, 24, 16).signal(c);
  b.copy("bad_copy", x, w).wait(c, 3);
  b.program().counters[0].init = 1;
  (void)z;
  return b.build();
}

// The fold (docs/FOLD.md): a reader of h waiting for only two of three accumulating tasks, by
// their own counters or by a first-2-of-3 wait on their shared one; h in BF16.
Program accumulate_reader_some() { return amk::testing::fold_program(FoldJoin::Some); }
Program accumulate_partial_join() { return amk::testing::fold_program(FoldJoin::Partial); }
Program accumulate_bf16() { return amk::testing::fold_program(FoldJoin::All, 3, DType::BF16); }

// RMSNORM_MLP_FOLD without ACCUMULATE (one fold, so the store races with nothing).
Program fold_without_accumulate() {
  Program p = amk::testing::fold_program(FoldJoin::All, 1);
  p.tasks[2].params.set("flags", int64_t{7} << kFlagRecipeShift);
  return p;
}

// ACCUMULATE on a recipe that stores, and GEMV_ADD_COPY with one output.
Program accumulate_on_gemv_add() {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), w = b.weight("W_o", {8, 8}), h = b.act("h", {1, 8}), y = b.output("y", {1, 8});
  const int c0 = b.counter("h ready"), c1 = b.counter("o_proj");
  b.copy("embed", x, h).signal(c0);
  b.task(Opcode::Fused, "o_proj").in({x, w, h}).out({h}).tile(8, 0, 8).wait(c0, 1).signal(c1)
      .i("flags", kFlagAccumulate | int64_t{1} << kFlagRecipeShift).param("recipe", std::string("GEMV_ADD"));
  b.copy("read", h, y).wait(c1, 1);
  return b.build();
}

Program gemv_add_copy_one_output() {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), w = b.weight("W_o", {8, 8}), h = b.act("h", {1, 8}), y = b.output("y", {1, 8});
  const int c0 = b.counter("h ready"), c1 = b.counter("o_proj");
  b.copy("embed", x, h).signal(c0);
  b.task(Opcode::Fused, "o_proj").in({x, w, h}).out({h}).tile(8, 0, 8).wait(c0, 1).signal(c1)
      .param("recipe", std::string("GEMV_ADD_COPY"));
  b.copy("read", h, y).wait(c1, 1);
  return b.build();
}

// FUSED ATTENTION_GEMV_ADD (docs/ATTENTION_IN_O.md): an o_proj tile without STEP_POS (a contract
// error, and its cache reads lose the exemption from the step's appends: race.kv) ...
Program attention_gemv_add_unstepped() {
  AttentionGemvLayer s;
  s.standard();
  s.b.program().tasks[4].params.set("flags", amk::testing::kAttentionGemvFlags & ~kFlagStepPos);
  return s.b.build();
}

// ... and tiles that do not fit: K != n_heads * head_dim (and W_o's width), PARTIAL_WRITE, a tile
// past h's 8 columns.
Program attention_gemv_add_shapes() {
  AttentionGemvLayer s;
  s.standard();
  s.b.program().tasks[4].params.set("K", int64_t{12});
  s.b.program().tasks[5].params.set("flags", amk::testing::kAttentionGemvFlags | kFlagPartialWrite);
  s.b.program().tasks[5].params.set("n_off", int64_t{6});
  return s.b.build();
}

using Cases = std::vector<std::pair<std::string, std::function<Program()>>>;

const Cases& cases() {
  static const Cases all = {
      {"deadlock_cycle", cycle},         {"queue_order", queue_order},       {"race_war", race_war},
      {"overlapping_tiles", overlapping_tiles}, {"self_read", self_read}, {"kv_before_append", kv_before_append},
      {"partial_wait", partial_wait},    {"page_clobber", page_clobber},     {"structural", structural},
      {"accumulate_reader_some", accumulate_reader_some}, {"accumulate_partial_join", accumulate_partial_join},
      {"accumulate_bf16", accumulate_bf16}, {"fold_without_accumulate", fold_without_accumulate},
      {"accumulate_on_gemv_add", accumulate_on_gemv_add}, {"gemv_add_copy_one_output", gemv_add_copy_one_output},
      {"attention_gemv_add_unstepped", attention_gemv_add_unstepped},
      {"attention_gemv_add_shapes", attention_gemv_add_shapes},
  };
  return all;
}

// Valid programs: three unordered folds accumulating into h, read after an all-join; a layer's
// ATTENTION_GEMV_ADD tiles beside the step's appends.
const Cases& valid_cases() {
  static const Cases all = {
      {"fold_all_join", [] { return amk::testing::fold_program(FoldJoin::All); }},
      {"attention_gemv_add_layer", [] {
         AttentionGemvLayer s;
         s.standard();
         return s.b.build();
       }},
  };
  return all;
}

// The report without its stats line: what a reviewer compares.
std::string diagnostics(const ValidationResult& r) {
  std::istringstream in(r.report());
  std::string line, out;
  while (std::getline(in, line))
    if (line.rfind("stats:", 0) != 0) out += line + "\n";
  return out;
}

std::string golden_path(const std::string& name, const char* ext, const char* dir = "invalid") {
  return std::string(AMK_SOURCE_DIR) + "/tests/golden/" + dir + "/" + name + ext;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("golden: write the invalid-program fixtures", "[.golden-write]") {
  for (const auto& [name, make] : cases()) {
    const Program p = make();
    REQUIRE(program_save(p, golden_path(name, ".json")).is_ok());
    std::ofstream(golden_path(name, ".expected.txt")) << diagnostics(validate(p));
  }
  for (const auto& [name, make] : valid_cases()) {
    const Program p = make();
    REQUIRE(program_save(p, golden_path(name, ".json", "valid")).is_ok());
    std::ofstream(golden_path(name, ".expected.txt", "valid")) << diagnostics(validate(p));
  }
}

TEST_CASE("golden: invalid programs on disk are rejected with the recorded diagnostics", "[ir][golden]") {
  for (const auto& [name, make] : cases()) {
    INFO(name);
    auto loaded = program_load(golden_path(name, ".json"));
    REQUIRE(loaded.is_ok());
    const ValidationResult r = validate(*loaded);
    CHECK_FALSE(r.ok);
    CHECK(diagnostics(r) == slurp(golden_path(name, ".expected.txt")));
    // The builder program and its JSON round trip are judged the same.
    CHECK(diagnostics(validate(make())) == diagnostics(r));
  }
}

TEST_CASE("golden: valid programs on disk are accepted with the recorded report", "[ir][golden]") {
  for (const auto& [name, make] : valid_cases()) {
    INFO(name);
    auto loaded = program_load(golden_path(name, ".json", "valid"));
    REQUIRE(loaded.is_ok());
    const ValidationResult r = validate(*loaded);
    INFO(r.report());
    CHECK(r.ok);
    CHECK(r.warnings.empty());
    CHECK(diagnostics(r) == slurp(golden_path(name, ".expected.txt", "valid")));
    CHECK(diagnostics(validate(make())) == diagnostics(r));
  }
}
