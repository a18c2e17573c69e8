// tests/ir/fold_programs.h: small programs shaped like a layer's MLP fold (docs/FOLD.md), shared by
// the accumulate tests and the golden fixtures: h is written, an o_proj GEMV_ADD_COPY tile adds into
// h and leaves a copy in h_mlp, RMSNORM_MLP_FOLD tasks accumulate their partial sums into h
// (intermediate columns [0, 1), [1, 2), [2, 4), ... of I = 4), and a reader copies h to y.
// How the reader waits for the folds is the variable.
#pragma once
#include <cstdint>
#include <string>

#include "ir/params.h"
#include "ir/program_builder.h"

namespace amk::testing {

/// flags of an RMSNORM_MLP_FOLD task: ACCUMULATE and the recipe id 7.
inline constexpr int64_t kFoldFlags = ir::kFlagAccumulate | int64_t{7} << ir::kFlagRecipeShift;

/// How the reader of h is ordered after the fold tasks.
enum class FoldJoin {
  All,      ///< every fold signals counter "mlp"; the reader waits mlp >= n_folds (an all-join)
  Partial,  ///< the same counter, but the reader waits mlp >= n_folds - 1
  Some,     ///< each fold signals its own counter; the reader waits on all but the last one's
};

/// An RMSNORM_MLP_FOLD task over intermediate columns [n_off, n_off + n_tile) of w_mlp [4, 3, 8].
inline ProgramBuilder::TaskRef fold_task(ProgramBuilder& b, const std::string& label, int x, int norm_w, int w_mlp,
                                         int out, int64_t n_off, int64_t n_tile) {
  return b.task(ir::Opcode::Fused, label).in({x, norm_w, w_mlp}).out({out}).param("recipe", std::string("RMSNORM_MLP_FOLD"))
      .param("eps", 1e-5).tile(8, n_off, n_tile).i("flags", kFoldFlags);
}

/// The program (n_folds from 1 to 3; h's dtype may be changed to show the F32 rule).
inline ir::Program fold_program(FoldJoin join, int n_folds = 3, ir::DType h_dtype = ir::DType::F32) {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), w = b.weight("W_o", {8, 8}), norm_w = b.weight("norm_w", {8});
  const int w_mlp = b.weight("w_mlp", {4, 3, 8});
  const int h = b.act("h", {1, 8}, h_dtype), h_mlp = b.act("h_mlp", {1, 8}), y = b.output("y", {1, 8});
  const int c_h = b.counter("h ready"), c_o = b.counter("o_proj done");
  b.copy("embed", x, h).signal(c_h);
  b.task(ir::Opcode::Fused, "o_proj").in({x, w, h}).out({h, h_mlp}).tile(8, 0, 8).wait(c_h, 1).signal(c_o)
      .param("recipe", std::string("GEMV_ADD_COPY"));
  const int64_t offs[] = {0, 1, 2, 4};
  const int shared = join == FoldJoin::Some ? -1 : b.counter("mlp");
  int own[3] = {-1, -1, -1};
  for (int i = 0; i < n_folds; ++i) {
    own[i] = join == FoldJoin::Some ? b.counter("mlp.t" + std::to_string(i)) : shared;
    fold_task(b, "mlp.t" + std::to_string(i), h_mlp, norm_w, w_mlp, h, offs[i], offs[i + 1] - offs[i])
        .wait(c_o, 1).signal(own[i]);
  }
  auto reader = b.copy("read", h, y);
  if (join == FoldJoin::All) reader.wait(shared, n_folds);
  if (join == FoldJoin::Partial) reader.wait(shared, n_folds - 1);
  if (join == FoldJoin::Some)
    for (int i = 0; i + 1 < n_folds; ++i) reader.wait(own[i], 1);
  return b.build();
}

}  // namespace amk::testing
