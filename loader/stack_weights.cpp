// loader/stack_weights.cpp: stacked WEIGHT/CONST buffers from a safetensors file or seeded random
// values. Every part is checked before anything is copied, so a bad last part fails fast. The
// copy is a row memcpy when the dtypes match and the part is not transposed, a tiled element copy
// when it is transposed, and a per-row float round trip (dtype_cast.h) when the dtypes differ.
#include "loader/stack_weights.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "loader/dtype_cast.h"
#include "loader/names.h"
#include "loader/random_weights.h"
#include "loader/synth_constants.h"

namespace amk::loader {
namespace {

/// The buffer's [N, P, K].
struct Dims {
  int64_t n = 0, p = 0, k = 0;
};

/// One part's data as stored: [N, K] row-major, or [K, N] when `transpose`.
struct PartData {
  ir::DType dtype;
  const void* data;
  bool transpose;
};

Status bad(std::string message) { return Status(StatusCode::InvalidArgument, std::move(message)); }

Status stack_dims(const ir::Buffer& b, Dims* d) {
  const auto parts = static_cast<int64_t>(b.stack.size());
  if (b.shape.size() != 3 || b.shape[1] != parts)
    return bad(buffer_name(b) + ": a stack of " + std::to_string(parts) + " parts needs a buffer of shape [N, " +
               std::to_string(parts) + ", K], but its shape is " + shape_text(b.shape));
  *d = Dims{b.shape[0], b.shape[1], b.shape[2]};
  return Status::ok();
}

std::string tensor_text(const TensorInfo& t) {
  return "tensor \"" + t.name + "\" is " + std::string(st_dtype_name(t.dtype)) + " " + shape_text(t.shape);
}

/// Same dtype (whole bytes): rows of a plain part are contiguous in both; a transposed part is
/// read down its columns, in tiles so that reads and writes both stay within a few cache lines.
template <typename T>
void copy_same(const Dims& d, int64_t p, const PartData& src, void* dst) {
  const auto* in = static_cast<const uint8_t*>(src.data);
  auto* out = static_cast<uint8_t*>(dst);
  const auto at = [&](int64_t n, int64_t k) { return out + ((n * d.p + p) * d.k + k) * int64_t{sizeof(T)}; };
  if (!src.transpose) {
    for (int64_t n = 0; n < d.n; ++n)
      std::memcpy(at(n, 0), in + n * d.k * int64_t{sizeof(T)}, static_cast<size_t>(d.k) * sizeof(T));
    return;
  }
  constexpr int64_t kTile = 64;
  for (int64_t n0 = 0; n0 < d.n; n0 += kTile)
    for (int64_t k0 = 0; k0 < d.k; k0 += kTile)
      for (int64_t n = n0; n < std::min(n0 + kTile, d.n); ++n)
        for (int64_t k = k0; k < std::min(k0 + kTile, d.k); ++k)
          std::memcpy(at(n, k), in + (k * d.n + n) * int64_t{sizeof(T)}, sizeof(T));
}

/// Different dtypes (or I4, whose elements share bytes): each row through floats, as
/// dtype_load / dtype_store_array round and saturate.
void copy_cast(ir::DType dst_dtype, const Dims& d, int64_t p, const PartData& src, void* dst) {
  std::vector<float> row(static_cast<size_t>(d.k));
  for (int64_t n = 0; n < d.n; ++n) {
    for (int64_t k = 0; k < d.k; ++k)
      row[static_cast<size_t>(k)] = dtype_load(src.dtype, src.data, src.transpose ? k * d.n + n : n * d.k + k);
    dtype_store_array(dst_dtype, dst, (n * d.p + p) * d.k, row.data(), d.k);
  }
}

/// buf[n, p, :] = row n of `src` (after its transpose), for every n.
void copy_part(ir::DType dst_dtype, const Dims& d, int64_t p, const PartData& src, void* dst) {
  if (d.n == 0 || d.k == 0) return;  // nothing to copy, and an empty part's data may be null
  if (src.dtype == dst_dtype && dst_dtype != ir::DType::I4) {
    switch (ir::dtype_bits(dst_dtype)) {
      case 8: copy_same<uint8_t>(d, p, src, dst); return;
      case 16: copy_same<uint16_t>(d, p, src, dst); return;
      case 32: copy_same<uint32_t>(d, p, src, dst); return;
      default: break;
    }
  }
  copy_cast(dst_dtype, d, p, src, dst);
}

/// The part's tensor in `file`, checked against the buffer's [N, K].
Status check_part(const ir::Buffer& b, size_t i, const Dims& d, const SafetensorsFile& file, const TensorInfo** out) {
  const ir::StackPart& part = b.stack[i];
  const std::string who = stack_part_name(b, i);
  if (synth_is_source(part.source))
    return bad(who + ": a synthesized (amk:) source cannot be stacked; only file tensors can");
  const TensorInfo* t = file.find(part.source);
  if (t == nullptr) return Status(StatusCode::NotFound, who + ": tensor not found in " + file.path());
  if (!st_dtype_to_ir(t->dtype))
    return bad(who + ": " + tensor_text(*t) + " in " + file.path() + "; " + std::string(st_dtype_name(t->dtype)) +
               " is not an IR dtype, so it cannot be cast to " + std::string(ir::dtype_name(b.dtype)));
  if (t->shape.size() != 2)
    return bad(who + ": a part must be rank 2, but " + tensor_text(*t) + " in " + file.path());
  const std::vector<int64_t> rows_cols =
      part.transpose ? std::vector<int64_t>{t->shape[1], t->shape[0]} : t->shape;
  if (rows_cols != std::vector<int64_t>{d.n, d.k})
    return bad(who + ": shape mismatch: the buffer is " + std::string(ir::dtype_name(b.dtype)) + " " +
               shape_text(b.shape) + ", so each part must be " + shape_text({d.n, d.k}) + " after its transpose, but " +
               tensor_text(*t) + (part.transpose ? " (transposed: " + shape_text(rows_cols) + ")" : "") + " in " +
               file.path());
  *out = t;
  return Status::ok();
}

}  // namespace

Status stack_from_file(const ir::Buffer& b, const SafetensorsFile& file, void* dst) {
  Dims d;
  if (Status s = stack_dims(b, &d); !s) return s;
  std::vector<const TensorInfo*> tensors(b.stack.size(), nullptr);
  for (size_t i = 0; i < b.stack.size(); ++i)
    if (Status s = check_part(b, i, d, file, &tensors[i]); !s) return s;
  for (size_t i = 0; i < b.stack.size(); ++i) {
    const PartData src{*st_dtype_to_ir(tensors[i]->dtype), file.data(*tensors[i]), b.stack[i].transpose};
    copy_part(b.dtype, d, static_cast<int64_t>(i), src, dst);
  }
  return Status::ok();
}

Status stack_random(const ir::Program& program, const ir::Buffer& b, uint64_t seed, void* dst) {
  Dims d;
  if (Status s = stack_dims(b, &d); !s) return s;
  std::vector<uint8_t> part_bytes;
  for (size_t i = 0; i < b.stack.size(); ++i) {
    const ir::StackPart& part = b.stack[i];
    // Generated in the part's own layout (down_proj: [K, N]), so its values and their order are
    // those of an unstacked buffer of the same source; then interleaved like a file tensor.
    const std::vector<int64_t> shape = part.transpose ? std::vector<int64_t>{d.k, d.n} : std::vector<int64_t>{d.n, d.k};
    part_bytes.assign(static_cast<size_t>(ir::dtype_nbytes(b.dtype, d.n * d.k)), 0);
    random_fill_tensor(b.dtype, shape, random_key_of_source(program, part.source), seed, part_bytes.data());
    copy_part(b.dtype, d, static_cast<int64_t>(i), PartData{b.dtype, part_bytes.data(), part.transpose}, dst);
  }
  return Status::ok();
}

}  // namespace amk::loader
