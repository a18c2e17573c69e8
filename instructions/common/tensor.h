// instructions/common/tensor.h: a checked, flat logical view of one amk_buffer_t, plus the helpers
// every decode_<op>() shares (arity, optional inputs, step position). Element i of a Tensor is the
// i-th element in row-major order of its shape, wherever its strides put it; ops interpret that
// flat order with their params (docs/OPCODES.md "Matrix view"). Invariant after tensor_bind():
// numel == prod(shape) and strides are >= 0, so offset(i) for i < numel stays inside the buffer.
#pragma once
#include <stdint.h>

#include "instructions/common/dtype.h"
#include "instructions/common/hd.h"
#include "vm/abi.h"

namespace amk::instructions {

/// A buffer seen as `numel` elements in row-major order of its shape.
struct Tensor {
  void* ptr = nullptr;
  int32_t dtype = AMK_DTYPE_F32;
  int32_t rank = 0;
  int64_t numel = 0;
  int64_t shape[AMK_MAX_RANK] = {};
  int64_t stride[AMK_MAX_RANK] = {};
  bool contiguous = true;  ///< strides are the dense row-major ones: offset(i) == i

  /// Storage offset (in elements) of flat element i.
  AMK_HD int64_t offset(int64_t i) const { return contiguous ? i : strided_offset(i); }
  /// offset() of a view that is not contiguous: the walk over its dimensions. Kept rolled on the
  /// GPU: every lowered program's tensors are contiguous, and unrolled to AMK_MAX_RANK steps of
  /// 64-bit divisions at each inlined load and store of every micro-kernel, this walk was ~70% of
  /// the persistent kernel's 3.5 MB of code (1.8 MB rolled), spread between the hot instructions
  /// of its callers: the code a once-per-layer task fetches cold (the attention task ~-0.5 us,
  /// Llama-1B -1.2%, 8B -0.9%; docs/PERFORMANCE.md row 156). Out of line instead (a call at each
  /// site), ptxas spilled around the calls and every stage slowed. -DAMK_TENSOR_OFFSET_UNROLLED
  /// restores the unrolled walk for the A/B.
  AMK_HD int64_t strided_offset(int64_t i) const {
    int64_t off = 0;
#if !defined(AMK_TENSOR_OFFSET_UNROLLED) && (defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__))
#pragma unroll 1
#endif  // !AMK_TENSOR_OFFSET_UNROLLED, device pass
    for (int32_t d = rank - 1; d >= 0; --d) {
      off += (i % shape[d]) * stride[d];
      i /= shape[d];
    }
    return off;
  }
  /// The last dimension (1 for rank 0): the `cols` of the matrix view.
  AMK_HD int64_t cols() const { return rank == 0 ? 1 : shape[rank - 1]; }
  /// Flat element i as a float.
  AMK_HD float load(int64_t i) const { return load_elem(ptr, dtype, offset(i)); }
  /// Store v at flat element i, cast once to the dtype.
  AMK_HD void store(int64_t i, float v) const { store_elem(ptr, dtype, offset(i), v); }
  /// True when elements [i, i + n) are consecutive in memory (so a kernel may stream them).
  AMK_HD bool run_is_contiguous(int64_t i, int64_t n) const {
    if (contiguous) return true;
    if (rank == 0 || stride[rank - 1] != 1) return false;
    const int64_t c = shape[rank - 1];
    return i % c + n <= c;
  }
};

/// Check buffer `index` of `prog` and view it. BAD_PARAMS for an index outside the table, a rank
/// outside 0..4, a negative dimension or stride, numel != prod(shape), or a null pointer holding
/// elements; BAD_DTYPE for an unknown dtype.
AMK_HD int32_t tensor_bind(const amk_program_t& prog, int32_t index, Tensor* t) {
  if (index < 0 || index >= prog.n_buffers || prog.buffers == nullptr) return AMK_DEVERR_BAD_PARAMS;
  const amk_buffer_t& b = prog.buffers[index];
  if (b.rank < 0 || b.rank > AMK_MAX_RANK) return AMK_DEVERR_BAD_PARAMS;
  if (b.dtype < 0 || b.dtype >= AMK_DTYPE_COUNT || dtype_bits(b.dtype) == 0) return AMK_DEVERR_BAD_DTYPE;
  int64_t n = 1, dense = 1;
  bool contiguous = true;
  for (int32_t d = b.rank - 1; d >= 0; --d) {
    if (b.shape[d] < 0 || b.stride[d] < 0) return AMK_DEVERR_BAD_PARAMS;
    if (b.shape[d] > 1 && b.stride[d] != dense) contiguous = false;
    if (b.shape[d] != 0 && n > INT64_MAX / b.shape[d]) return AMK_DEVERR_BAD_PARAMS;
    n *= b.shape[d];
    dense *= b.shape[d] > 0 ? b.shape[d] : 1;
  }
  if (n != b.numel) return AMK_DEVERR_BAD_PARAMS;
  if (n > 0 && b.ptr == nullptr) return AMK_DEVERR_BAD_PARAMS;
  t->ptr = b.ptr;
  t->dtype = b.dtype;
  t->rank = b.rank;
  t->numel = n;
  for (int32_t d = 0; d < AMK_MAX_RANK; ++d) {
    t->shape[d] = d < b.rank ? b.shape[d] : 1;
    t->stride[d] = d < b.rank ? b.stride[d] : 0;
  }
  t->contiguous = contiguous;
  return AMK_DEVERR_NONE;
}

/// Bind input i of `inst` (BAD_PARAMS when the instruction has fewer inputs).
AMK_HD int32_t bind_input(const amk_program_t& p, const amk_instruction_t& inst, int32_t i, Tensor* t) {
  if (i < 0 || i >= inst.n_inputs || i >= AMK_MAX_INPUTS) return AMK_DEVERR_BAD_PARAMS;
  return tensor_bind(p, inst.inputs[i], t);
}
/// Bind output i of `inst`.
AMK_HD int32_t bind_output(const amk_program_t& p, const amk_instruction_t& inst, int32_t i, Tensor* t) {
  if (i < 0 || i >= inst.n_outputs || i >= AMK_MAX_OUTPUTS) return AMK_DEVERR_BAD_PARAMS;
  return tensor_bind(p, inst.outputs[i], t);
}
/// Rows of a stacked operand (split-KV partials, docs/OPCODES.md): shape[0] of a rank-2 tensor;
/// any other rank is one row.
AMK_HD int64_t stacked_rows(const Tensor& t) { return t.rank == 2 ? t.shape[0] : 1; }
/// Narrow a float tensor to its row r (a rank-1 view of a rank-2 tensor; a tensor of any other
/// rank is its own row 0). BAD_PARAMS when r is not a row.
AMK_HD int32_t select_row(Tensor* t, int64_t r) {
  if (r < 0 || r >= stacked_rows(*t)) return AMK_DEVERR_BAD_PARAMS;
  if (t->rank != 2) return AMK_DEVERR_NONE;
  if (!dtype_is_float(t->dtype)) return AMK_DEVERR_BAD_DTYPE;
  const int64_t elem_bytes = t->dtype == AMK_DTYPE_F32 ? 4 : 2;
  t->ptr = static_cast<char*>(t->ptr) + r * t->stride[0] * elem_bytes;
  t->rank = 1;
  t->shape[0] = t->shape[1];
  t->stride[0] = t->stride[1];
  t->shape[1] = 0;
  t->stride[1] = 0;
  t->numel = t->shape[0];
  t->contiguous = t->stride[0] == 1;
  return AMK_DEVERR_NONE;
}
/// BAD_PARAMS unless lo <= n_inputs <= hi and the instruction has at least `outs` outputs.
AMK_HD int32_t check_arity(const amk_instruction_t& inst, int32_t lo, int32_t hi, int32_t outs) {
  if (inst.n_inputs < lo || inst.n_inputs > hi || inst.n_inputs > AMK_MAX_INPUTS) return AMK_DEVERR_BAD_PARAMS;
  if (inst.n_outputs < outs || inst.n_outputs > AMK_MAX_OUTPUTS) return AMK_DEVERR_BAD_PARAMS;
  return AMK_DEVERR_NONE;
}
/// The head range [n_off, n_off + N_tile) of an ATTENTION_TILE or ATTENTION_COMBINE task (N_tile 0:
/// all n_heads). BAD_PARAMS unless it lies inside [0, n_heads).
AMK_HD int32_t decode_head_range(const amk_params_t& pr, int64_t n_heads, int64_t* begin, int64_t* end) {
  const int64_t n_tile = pr.N_tile == 0 ? n_heads : pr.N_tile;
  if (pr.n_off < 0 || n_tile < 1 || pr.n_off + n_tile > n_heads) return AMK_DEVERR_BAD_PARAMS;
  *begin = pr.n_off;
  *end = pr.n_off + n_tile;
  return AMK_DEVERR_NONE;
}
/// BAD_DTYPE unless t holds F32, F16 or BF16.
AMK_HD int32_t require_float(const Tensor& t) { return dtype_is_float(t.dtype) ? AMK_DEVERR_NONE : AMK_DEVERR_BAD_DTYPE; }

/// The step's decode position (0 when the program has no step block).
AMK_HD int64_t step_pos(const amk_program_t& p) { return p.step != nullptr ? p.step->pos : 0; }
/// The effective position of a ROPE / KV_APPEND task: params.pos, plus step.pos under STEP_POS.
AMK_HD int64_t effective_pos(const amk_program_t& p, const amk_instruction_t& inst) {
  const int64_t pos = inst.params.pos;
  return (inst.params.flags & AMK_FLAG_STEP_POS) ? pos + step_pos(p) : pos;
}

}  // namespace amk::instructions

/// Return the error code of `expr` when it is not AMK_DEVERR_NONE (decode helpers chain checks).
#define AMK_TRY_DEV(expr)                              \
  do {                                                 \
    const int32_t amk_try_rc_ = (expr);                \
    if (amk_try_rc_ != AMK_DEVERR_NONE) return amk_try_rc_; \
  } while (0)
