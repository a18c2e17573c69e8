// tests/ir/validate_step_gemv_test.cpp: validate() on the step-position GEMVs (FUSED
// RMSNORM_GEMV_ROPE, _APPEND, _ROPE_APPEND; docs/ROPE_IN_GEMV.md), starting from the tiny Llama
// lowered with rope in the q / k GEMVs (accepted) and breaking one rule at a time: each error
// names its rule, the task and the buffer. Also the access model: an append writes its tile's
// columns of the cache, so the k tiles of one stage do not race, and two that overlap do.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <string>

#include "ir/validate.h"
#include "schedule/fusion.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "targets/registry.h"

using namespace amk;
using Catch::Contains;

namespace {

ir::Program tiny_rope_qkv() {
  auto m = schedule::model_config_load(std::string(AMK_SOURCE_DIR) + "/tests/fixtures/tiny_llama/config.json");
  REQUIRE(m.is_ok());
  ir::ScheduleConfig c;
  c.fusion_grouping = {schedule::rope_qkv_group()};
  c.tiling["q_proj"]["N_tile"] = 64;
  c.tiling["k_proj"]["N_tile"] = 16;
  auto p = schedule::lower(*m, c, *targets::target_find("cpu"), schedule::LowerOptions{64, ir::DType::F32, ir::DType::F32});
  INFO(p.status().message());
  REQUIRE(p.is_ok());
  return std::move(p).value();
}

// The first task of `recipe` (layer 0's first tile).
ir::Task& first(ir::Program& p, const std::string& recipe) {
  for (ir::Task& t : p.tasks)
    if (t.params.get_string("recipe") == recipe) return t;
  FAIL("no " << recipe << " task");
  return p.tasks.front();
}

ir::Buffer& buffer(ir::Program& p, ir::BufferId id) {
  for (ir::Buffer& b : p.buffers)
    if (b.id == id) return b;
  FAIL("no buffer " << id.value);
  return p.buffers.front();
}

// The error with `rule` containing `text`, which must name task `task` (and buffer `buf` if given).
void expect_error(const ir::Program& p, const std::string& rule, const std::string& text, const ir::Task& task,
                  const ir::Buffer* buf = nullptr) {
  const ir::ValidationResult r = ir::validate(p);
  INFO(r.report());
  REQUIRE_FALSE(r.ok);
  for (const ir::Diagnostic& d : r.errors) {
    if (d.rule != rule || d.message.find(text) == std::string::npos) continue;
    CHECK(std::find(d.tasks.begin(), d.tasks.end(), task.id) != d.tasks.end());
    if (buf != nullptr) CHECK(std::find(d.buffers.begin(), d.buffers.end(), buf->id) != d.buffers.end());
    CHECK_THAT(d.message, Contains(task.label));
    return;
  }
  FAIL("no " << rule << " error containing \"" << text << "\"");
}

}  // namespace

TEST_CASE("step-position GEMVs: the lowered tiny Llama is accepted", "[ir][rope]") {
  const ir::Program p = tiny_rope_qkv();
  const ir::ValidationResult r = ir::validate(p);
  INFO(r.report());
  CHECK(r.ok);
}

TEST_CASE("step-position GEMVs: each rule rejects by name", "[ir][rope]") {
  SECTION("a tile that splits a rope pair") {
    ir::Program p = tiny_rope_qkv();
    ir::Task& q = first(p, "RMSNORM_GEMV_ROPE");
    q.params.set("N_tile", *q.params.get_int("N_tile") - 1);
    expect_error(p, "tile.bounds", "even row", q);
  }
  SECTION("W not in rope-pair order") {
    ir::Program p = tiny_rope_qkv();
    ir::Task& k = first(p, "RMSNORM_GEMV_ROPE_APPEND");
    ir::Buffer& w = buffer(p, k.inputs[2]);
    w.rope_pairs = 0;
    expect_error(p, "contract", "not in rope-pair order", k, &w);
  }
  SECTION("W in rope-pair order for another head_dim") {
    ir::Program p = tiny_rope_qkv();
    ir::Task& q = first(p, "RMSNORM_GEMV_ROPE");
    ir::Buffer& w = buffer(p, q.inputs[2]);
    w.rope_pairs = 16;
    expect_error(p, "contract", "rope-pair order for head_dim 16", q, &w);
  }
  SECTION("no STEP_POS") {
    ir::Program p = tiny_rope_qkv();
    ir::Task& v = first(p, "RMSNORM_GEMV_APPEND");
    v.params.set("flags", int64_t{11} << 16);
    expect_error(p, "contract", "requires STEP_POS", v);
  }
  SECTION("an append into a buffer that is not a KV cache") {
    ir::Program p = tiny_rope_qkv();
    ir::Task& v = first(p, "RMSNORM_GEMV_APPEND");
    ir::Buffer& cache = buffer(p, v.outputs[0]);
    cache.kind = ir::BufferKind::Activation;
    expect_error(p, "contract", "must be a KV_CACHE", v, &cache);
  }
  SECTION("an inv_freq of the wrong length") {
    ir::Program p = tiny_rope_qkv();
    ir::Task& q = first(p, "RMSNORM_GEMV_ROPE");
    q.params.set("head_dim", int64_t{64});
    expect_error(p, "shape", "inv_freq holds head_dim/2 entries", q);
  }
}

TEST_CASE("step-position GEMVs: appends write their columns of the cache", "[ir][rope]") {
  ir::Program p = tiny_rope_qkv();
  // Layer 0's second k tile moved onto the first one's columns: two writers of the same cache
  // bytes in one stage, which nothing orders.
  std::vector<ir::Task*> k;
  for (ir::Task& t : p.tasks)
    if (t.params.get_string("recipe") == std::string("RMSNORM_GEMV_ROPE_APPEND") && t.label.rfind("L0.", 0) == 0)
      k.push_back(&t);
  REQUIRE(k.size() >= 2);
  k[1]->params.set("n_off", *k[0]->params.get_int("n_off"));
  const ir::ValidationResult r = ir::validate(p);
  INFO(r.report());
  REQUIRE_FALSE(r.ok);
  bool race = false;
  for (const ir::Diagnostic& d : r.errors)
    if (d.rule.rfind("race", 0) == 0 && std::find(d.tasks.begin(), d.tasks.end(), k[1]->id) != d.tasks.end()) race = true;
  CHECK(race);
}
