// loader/rope_pairs.cpp: the rope-pair row permutation (rope_pairs.h) and its seeded random
// values. Rows are whole bytes for every dtype but I4 with an odd K, so the copy is a row memcpy
// except there, where elements move one at a time through dtype_load / dtype_store (exact: an I4
// value survives the float round trip).
#include "loader/rope_pairs.h"

#include <cstring>
#include <vector>

#include "loader/dtype_cast.h"
#include "loader/names.h"
#include "loader/random_weights.h"
#include "loader/synth_constants.h"

namespace amk::loader {

int64_t rope_pairs_source_row(int64_t row, int64_t head_dim) {
  const int64_t head = row / head_dim, j = row % head_dim;
  return head * head_dim + j / 2 + (j % 2) * (head_dim / 2);
}

Status rope_pairs_check(const ir::Buffer& b) {
  const std::string who = buffer_name(b) + " (rope_pairs " + std::to_string(b.rope_pairs) + ")";
  auto bad = [](std::string m) { return Status(StatusCode::InvalidArgument, std::move(m)); };
  if (b.kind != ir::BufferKind::Weight && b.kind != ir::BufferKind::Const)
    return bad(who + ": only a WEIGHT or CONST buffer may be permuted");
  if (b.stacked() || !b.source || b.source->empty() || synth_is_source(*b.source))
    return bad(who + ": only a buffer with one file source can be permuted, this one has " + source_text(b));
  if (b.rope_pairs < 2 || b.rope_pairs % 2 != 0)
    return bad(who + ": rope_pairs must be an even head_dim >= 2");
  if (b.shape.size() != 2 || b.shape[0] % b.rope_pairs != 0)
    return bad(who + ": the buffer must be [N, K] with N a multiple of " + std::to_string(b.rope_pairs) +
               ", but its shape is " + shape_text(b.shape));
  return Status::ok();
}

void rope_pairs_permute(const ir::Buffer& b, const void* src, void* dst) {
  const int64_t rows = b.shape[0], k = b.shape[1];
  if (rows == 0 || k == 0) return;  // nothing to copy, and an empty tensor's data may be null
  const int64_t row_bits = int64_t{ir::dtype_bits(b.dtype)} * k;
  if (row_bits % 8 == 0) {
    const int64_t row_bytes = row_bits / 8;
    const auto* in = static_cast<const uint8_t*>(src);
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out + r * row_bytes, in + rope_pairs_source_row(r, b.rope_pairs) * row_bytes,
                  static_cast<size_t>(row_bytes));
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t from = rope_pairs_source_row(r, b.rope_pairs);
    for (int64_t c = 0; c < k; ++c) dtype_store(b.dtype, dst, r * k + c, dtype_load(b.dtype, src, from * k + c));
  }
}

Status rope_pairs_random(const ir::Program& program, const ir::Buffer& b, uint64_t seed, void* dst) {
  if (Status s = rope_pairs_check(b); !s) return s;
  // Generated in the file's row order, then permuted like a file tensor.
  std::vector<uint8_t> rows(static_cast<size_t>(b.nbytes()), 0);
  random_fill_tensor(b.dtype, b.shape, random_key_of_source(program, *b.source), seed, rows.data());
  rope_pairs_permute(b, rows.data(), dst);
  return Status::ok();
}

}  // namespace amk::loader
