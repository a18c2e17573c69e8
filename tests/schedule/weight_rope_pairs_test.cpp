// tests/schedule/weight_rope_pairs_test.cpp: LowerContext::weight_rope_pairs, the lowering's way to
// ask for a q / k weight in rope-pair row order (docs/JSON.md "rope_pairs"): a WEIGHT like
// weight()'s, with rope_pairs = head_dim, that validates and loads as a permutation.
#include <catch2/catch.hpp>

#include "ir/validate.h"
#include "schedule/emit.h"

using namespace amk;

TEST_CASE("weight_rope_pairs: a WEIGHT like weight()'s, its rows in rope-pair order", "[schedule]") {
  const schedule::ModelConfig model{};
  const schedule::TilingPlan tiling{};
  const schedule::FusionPlan fusion{};
  schedule::LowerContext c{model, tiling, fusion, ir::DType::F32, ir::DType::BF16, 16,
                           schedule::ProgramBuilder{}, {}, {}, {}, {}};
  const ir::BufferId plain = c.weight("L0.wq", {128, 64}, "model.layers.0.self_attn.q_proj.weight");
  const ir::BufferId rope = c.weight_rope_pairs("L0.wq_rope", {128, 64}, "model.layers.0.self_attn.q_proj.weight", 64);
  CHECK(rope.value == plain.value + 1);  // ids stay dense in call order
  const ir::Buffer& p = c.b.buffer(plain);
  const ir::Buffer& r = c.b.buffer(rope);
  CHECK(r.name == "L0.wq_rope");
  CHECK(r.rope_pairs == 64);
  CHECK(p.rope_pairs == 0);
  // Everything else is what weight() gives.
  CHECK(r.kind == p.kind);
  CHECK(r.kind == ir::BufferKind::Weight);
  CHECK(r.dtype == ir::DType::BF16);  // the context's weight dtype, not the activation dtype
  CHECK(r.shape == p.shape);
  CHECK(r.space == p.space);
  CHECK(r.source == p.source);
  CHECK_FALSE(r.stacked());
  const ir::ValidationResult v = ir::validate(c.b.take());
  for (const ir::Diagnostic& d : v.errors) CHECK(d.rule != "source.rope_pairs");
}
