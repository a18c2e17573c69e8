// instructions/gemv_like.h: the matmul tile of any weight-streaming instruction (GEMV_TILE,
// GEMM_TILE, FUSED), for the code that plans around weights rather than runs the task: the GPU
// kernel's L2 prefetch and weight stream, and the executor building that stream's table. Host and
// device, so the host's plan and the kernel's decode of a task are the same function.
#pragma once
#include "instructions/attention_gemv.h"
#include "instructions/fused.h"
#include "instructions/gemv_tile.h"
#include "instructions/mlp_fold.h"

namespace amk::instructions {

/// What is applied to x while it is staged.
/// kGemvAttention: x is FUSED ATTENTION_GEMV_ADD's attention (GemvPlan::attn), computed into the
/// staged x by instructions/attention_row.cuh; streamed tasks only.
enum GemvPrologue : int32_t { kGemvPlain = 0, kGemvRmsNorm = 1, kGemvSiluMul = 2, kGemvAttention = 3 };

/// Most rows one item of the weight stream's chunk consumer takes (instructions/gemv_stream.cuh):
/// its warp loads each x vector once for all of them.
inline constexpr int32_t kStreamRowsPerItem = 4;

/// How the compute warps share out one chunk of the GPU weight stream: `rows` whole rows of
/// `row_vecs` 16-byte vectors, cut into items of `r` rows (a row group) times one segment of their
/// columns, one warp per item. A warp's x loads then serve r rows (fp32 x is 32 bytes of shared
/// memory per 16 bytes of bf16 weights), and segments are whole warp-widths of vectors, so every
/// lane does the same work. Decided by the host (gemv_stream_split), so the device spends no
/// integer divisions on it per chunk: the consumer is instruction-issue bound
/// (docs/PERFORMANCE.md, the stream probe).
struct StreamSplit {
  int32_t rows = 0;      ///< rows in the chunk (0: no split, the task does not stream)
  int32_t r = 0;         ///< rows per item, 1..kStreamRowsPerItem
  int32_t groups = 0;    ///< row groups: ceil(rows / r)
  int32_t nseg = 0;      ///< segments per row; groups * nseg items
  int32_t seg_vecs = 0;  ///< vectors per segment, a multiple of the warp width (the last may be shorter)
};

/// A split's rows and row groups: items of `r` rows (at most kStreamRowsPerItem and the rows), or
/// no split (rows 0) for a shape that makes none. The segments come after (below).
AMK_HD StreamSplit stream_split_rows(int64_t rows, int64_t row_vecs, int32_t r, int32_t lanes) {
  StreamSplit sp;
  if (rows <= 0 || row_vecs <= 0 || r <= 0 || lanes <= 0 || rows > 0x7fffffff || row_vecs > 0x7fffffff) return sp;
  sp.rows = static_cast<int32_t>(rows);
  sp.r = sp.rows < r ? sp.rows : (r < kStreamRowsPerItem ? r : kStreamRowsPerItem);
  sp.groups = (sp.rows + sp.r - 1) / sp.r;
  return sp;
}

/// Segments of `seg_blocks` warp widths (at most the whole row): sp.nseg and sp.seg_vecs.
AMK_HD void stream_split_segments_of(int64_t row_vecs, int64_t seg_blocks, int32_t lanes, StreamSplit& sp) {
  const int64_t blocks = (row_vecs + lanes - 1) / lanes;
  if (seg_blocks > blocks) seg_blocks = blocks;
  sp.nseg = static_cast<int32_t>((blocks + seg_blocks - 1) / seg_blocks);
  sp.seg_vecs = static_cast<int32_t>(seg_blocks * lanes);
}

/// The segments of a split whose sp.groups row groups are set: as many items (groups x segments)
/// as there are warps where the row allows it, segments of whole warp widths, none empty.
AMK_HD void stream_split_segments(int64_t row_vecs, int32_t warps, int32_t lanes, StreamSplit& sp) {
  const int64_t blocks = (row_vecs + lanes - 1) / lanes;
  int64_t nseg = sp.groups >= warps ? 1 : warps / sp.groups;
  if (nseg > blocks) nseg = blocks;
  stream_split_segments_of(row_vecs, (blocks + nseg - 1) / nseg, lanes, sp);
}

/// The split of a chunk of `rows` rows of `row_vecs` vectors over `warps` warps of `lanes` lanes:
/// as many items as there are warps where the rows allow it, never an empty segment.
AMK_HD StreamSplit gemv_stream_split(int64_t rows, int64_t row_vecs, int32_t warps, int32_t lanes) {
  StreamSplit sp = warps > 0 ? stream_split_rows(rows, row_vecs, kStreamRowsPerItem, lanes) : StreamSplit{};
  if (sp.rows > 0) stream_split_segments(row_vecs, warps, lanes, sp);
  return sp;
}

/// A split with `r` rows per item and segments of `seg_blocks` warp widths (the host's measuring
/// knobs AMK_STREAM_ROWS_PER_ITEM / AMK_STREAM_SEG_BLOCKS, docs/PERFORMANCE.md row 140), or no
/// split (rows 0) when those do not make one.
AMK_HD StreamSplit gemv_stream_split_fixed(int64_t rows, int64_t row_vecs, int32_t r, int32_t seg_blocks, int32_t lanes) {
  StreamSplit sp = seg_blocks > 0 ? stream_split_rows(rows, row_vecs, r, lanes) : StreamSplit{};
  if (sp.rows > 0) stream_split_segments_of(row_vecs, seg_blocks, lanes, sp);
  return sp;
}

/// Whether chunks of `rows` rows of `row_vecs` vectors can run with `sp` (the host computed it;
/// the device checks it once per task, guarding its shared memory): 1..kStreamRowsPerItem rows per
/// item whose groups cover exactly the rows, segments that cover each row, and at most
/// `max_partials` partial sums.
AMK_HD bool gemv_stream_split_ok(const StreamSplit& sp, int64_t rows, int64_t row_vecs, int64_t max_partials) {
  return sp.rows == rows && sp.r >= 1 && sp.r <= kStreamRowsPerItem && int64_t{sp.groups} * sp.r >= rows &&
         int64_t{sp.groups - 1} * sp.r < rows && sp.nseg >= 1 && sp.seg_vecs >= 1 &&
         int64_t{sp.nseg} * sp.seg_vecs >= row_vecs && rows * sp.nseg <= max_partials;
}

/// How a streamed task's rows fall into chunks of `chunk_bytes`: the host splits each kind of chunk
/// (gemv_stream_split) and the device checks those splits (gemv_stream_split_ok) from the same
/// figures. Zero rows_per_chunk when the chunk holds no whole row.
struct StreamChunking {
  int64_t row_vecs = 0;        ///< 16-byte vectors per row
  int64_t rows_per_chunk = 0;  ///< rows of every chunk but the last
  int64_t last_rows = 0;       ///< rows of the last chunk (1..rows_per_chunk)
};

AMK_HD StreamChunking gemv_stream_chunking(int64_t row_bytes, int64_t n_rows, int64_t chunk_bytes) {
  StreamChunking c;
  if (row_bytes <= 0 || row_bytes % 16 != 0 || n_rows <= 0 || chunk_bytes < row_bytes) return c;
  c.row_vecs = row_bytes / 16;
  // In 32 bits where the figures fit (every ring chunk does): a 64-bit division is a subroutine
  // of ~70 instructions on the GPU, and this runs at the head of every streamed task.
  if (chunk_bytes <= INT32_MAX && n_rows <= INT32_MAX) {
    const auto rpc = static_cast<uint32_t>(chunk_bytes) / static_cast<uint32_t>(row_bytes);
    const auto n = static_cast<uint32_t>(n_rows);
    c.rows_per_chunk = rpc;
    c.last_rows = n - (n - 1u) / rpc * rpc;
    return c;
  }
  c.rows_per_chunk = chunk_bytes / row_bytes;
  c.last_rows = n_rows - (n_rows - 1) / c.rows_per_chunk * c.rows_per_chunk;
  return c;
}

/// Every operand of a GEMV-like task: the tile, the prologue on x and the epilogue's addends.
struct GemvPlan {
  MatmulArgs mm;
  Tensor aux;       ///< norm_w (kGemvRmsNorm) or up (kGemvSiluMul)
  Tensor bias;      ///< GEMV_TILE / GEMM_TILE bias [n_out]
  Tensor residual;  ///< FUSED *_ADD residual [rows, n_out]
  /// GEMV_ADD_COPY's second output [rows, n_out]; for a rotating tile on the GPU weight stream
  /// (step.inv_freq set, has_copy false), the real output, while mm.y is the fp32 scratch that
  /// gemv_stream_rotate_after rotates from (cuda_executor.cpp, stream_share).
  Tensor copy;
  float eps = 0.0f;
  int32_t prologue = kGemvPlain;
  bool has_bias = false, has_residual = false, has_copy = false;
  /// When the task rides the GPU weight stream (set by the host with its chunk size; rows 0
  /// otherwise): the split of its full chunks and of its last chunk, which may be shorter.
  /// For the fold, both splits are for the most columns a chunk touches (fold_stream_split).
  StreamSplit split_full, split_last;
  /// RMSNORM_MLP_FOLD (docs/FOLD.md): mm is the stacked weight viewed as [3 I, K] rows, its tile
  /// rows [3 n_off, 3 (n_off + N_tile)), each triple gate, up, down^T; y is the F32 output the
  /// task adds into; aux is norm_w (prologue kGemvRmsNorm).
  bool fold = false;
  /// ATTENTION_GEMV_ADD (prologue kGemvAttention): the attention that is x; mm.x has x's dtype and
  /// length but no storage (the x is made in shared memory).
  AttentionRowPlan attn;
  /// FUSED recipes 10-12: the rotation and the cache row; the device binds the step's position
  /// (the persistent kernel's loader, bind_step_gemv) into its staged copy.
  StepGemv step;
};

/// Decode a GEMV-like `inst` into `*plan`: the opcode's own decode error, or BAD_PARAMS for an
/// opcode that streams no weights.
AMK_HD int32_t decode_gemv_plan(const amk_program_t& p, const amk_instruction_t& inst, GemvPlan* plan) {
  if (inst.op == AMK_OP_GEMV_TILE || inst.op == AMK_OP_GEMM_TILE) {
    GemvTileArgs a;
    AMK_TRY_DEV(decode_gemv_tile(p, inst, &a));
    plan->mm = a.mm;
    plan->bias = a.bias;
    plan->has_bias = a.has_bias;
    plan->aux = a.mm.x;
    plan->prologue = kGemvPlain;
    plan->has_residual = false;
    plan->has_copy = false;
    plan->eps = 0.0f;
    return AMK_DEVERR_NONE;
  }
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  // Host only: the device gets a fold's plan in its blob, and a fold that does not stream runs
  // mlp_fold_run. On the device this branch would only grow the loader's inlined L2-prefetch
  // decode (decode_gemv_like), which the persistent kernel's registers pay for.
  if (inst.op == AMK_OP_FUSED && fused_recipe(inst) == kRecipeMlpFold) {
    MlpFoldArgs f;
    AMK_TRY_DEV(decode_mlp_fold(p, inst, &f));
    plan->mm.x = f.x;
    plan->mm.w = f.w;
    plan->mm.w.rank = 2;  // [I, 3, K] as [3 I, K]: a tile's triples are consecutive rows
    plan->mm.w.shape[0] = 3 * f.inter;
    plan->mm.w.shape[1] = f.K;
    plan->mm.w.stride[0] = f.K;
    plan->mm.w.stride[1] = 1;
    plan->mm.y = f.out;
    plan->mm.K = f.K;
    plan->mm.rows = f.rows;
    plan->mm.n_out = 3 * f.inter;
    plan->mm.n_begin = 3 * f.n_begin;
    plan->mm.n_end = 3 * f.n_end;
    plan->mm.m_begin = 0;
    plan->mm.m_end = f.rows;
    plan->aux = f.norm_w;
    plan->prologue = kGemvRmsNorm;
    plan->eps = f.eps;
    plan->has_bias = plan->has_residual = plan->has_copy = false;
    plan->fold = true;
    return AMK_DEVERR_NONE;
  }
  // ATTENTION_GEMV_ADD streams W_o behind its attention where the GPU path has its layout
  // (attention_row_plan); elsewhere it runs its halves unstreamed (fused_run). The device's step
  // block is the executor's to set (attn.step).
  if (inst.op == AMK_OP_FUSED && fused_recipe(inst) == kRecipeAttentionGemvAdd) {
    alignas(16) static unsigned char placeholder[16];  // the row's storage: never read
    AttentionGemvSplit s;
    amk_program_t view;
    AMK_TRY_DEV(split_attention_gemv(p, inst, placeholder, &s, &view));
    AttentionTileArgs at;
    AMK_TRY_DEV(decode_attention_tile_static(view, s.attention, &at));
    FusedArgs g;
    AMK_TRY_DEV(decode_fused(view, s.gemv, &g));
    if (!attention_row_plan(at, inst.params, nullptr, &plan->attn)) return AMK_DEVERR_BAD_PARAMS;
    plan->mm = g.mm;
    plan->mm.x.ptr = nullptr;
    plan->prologue = kGemvAttention;
    plan->aux = plan->mm.x;
    plan->residual = g.residual;
    plan->has_residual = true;
    plan->has_copy = plan->has_bias = false;
    plan->eps = 0.0f;
    return AMK_DEVERR_NONE;
  }
#endif  // host only
  if (inst.op == AMK_OP_FUSED) {
    FusedArgs a;
    AMK_TRY_DEV(decode_fused(p, inst, &a));
    plan->mm = a.mm;
    plan->prologue = recipe_is_rmsnorm_gemv(a.recipe) ? kGemvRmsNorm : (a.has_aux ? kGemvSiluMul : kGemvPlain);
    plan->aux = a.has_aux ? a.aux : a.mm.x;
    plan->residual = a.residual;
    plan->has_residual = a.has_residual;
    plan->copy = a.copy;
    plan->has_copy = a.has_copy;
    plan->has_bias = false;
    plan->eps = a.eps;
#if AMK_STEP_GEMV_DECODE
    plan->step = a.step;  // (decode_fused leaves it zero in a kernel without step-position GEMVs)
#endif  // a kernel with the step-position GEMVs, or the host
    return AMK_DEVERR_NONE;
  }
  return AMK_DEVERR_BAD_PARAMS;
}

/// The tile of a GEMV-like `inst` into `*mm`; false for other opcodes and for operands that do
/// not decode (the task itself reports those when it runs).
AMK_HD bool decode_gemv_like(const amk_program_t& p, const amk_instruction_t& inst, MatmulArgs* mm) {
  if (inst.op != AMK_OP_GEMV_TILE && inst.op != AMK_OP_GEMM_TILE && inst.op != AMK_OP_FUSED) return false;
  GemvPlan plan;
  if (decode_gemv_plan(p, inst, &plan) != AMK_DEVERR_NONE) return false;
  *mm = plan.mm;
  return true;
}

/// The contiguous byte range of the weight rows a GEMV-like tile streams ([*ptr, *ptr + *bytes));
/// bytes = 0 when the rows are not one contiguous range.
AMK_HD void gemv_weight_range(const MatmulArgs& mm, const void** ptr, uint64_t* bytes) {
  const int64_t esize = dtype_bits(mm.w.dtype) / 8;
  if (!mm.w.contiguous || esize == 0 || mm.n_end <= mm.n_begin) {
    *ptr = nullptr;
    *bytes = 0;
    return;
  }
  *ptr = static_cast<const char*>(mm.w.ptr) + mm.n_begin * mm.K * esize;
  *bytes = static_cast<uint64_t>((mm.n_end - mm.n_begin) * mm.K * esize);
}

/// Most weight bytes a task streams through the GPU kernel's ring; a larger one loads its weights
/// itself (vm/cuda/cuda_executor.cpp stream_share, docs/PERFORMANCE.md row 65). The decode
/// preset keeps its wide tiles within it (schedule::DecodePreset::wide_tile_max_bytes).
inline constexpr uint64_t kStreamMaxTaskBytes = uint64_t{4} << 20;

/// Most rows one chunk of the GPU weight stream holds (its per-row partial sums live in shared
/// memory: persistent_kernel.cu sizes them by this).
inline constexpr int64_t kStreamChunkMaxRows = 256;

/// Bytes per chunk when the GPU kernel streams this tile through its shared-memory ring of
/// `slot_bytes` slots, or 0 when the tile does not ride the ring: the ring path reads whole
/// 16-byte-aligned rows of bf16/f16/f32 (K * esize a multiple of 16, contiguous W), one row of x
/// (decode, batch 1) staged whole in `x_floats` of shared memory, and at least one row per slot.
AMK_HD int64_t gemv_stream_chunk_bytes(const MatmulArgs& mm, int64_t slot_bytes, int64_t x_floats) {
  const int32_t dt = mm.w.dtype;
  if (dt != AMK_DTYPE_BF16 && dt != AMK_DTYPE_F16 && dt != AMK_DTYPE_F32) return 0;
  const int64_t row_bytes = mm.K * (dtype_bits(dt) / 8);
  if (!mm.w.contiguous || row_bytes % 16 != 0 || (reinterpret_cast<uintptr_t>(mm.w.ptr) & 15u) != 0) return 0;
  if (mm.n_end <= mm.n_begin || mm.m_end - mm.m_begin != 1 || mm.K > x_floats) return 0;
  if (row_bytes > slot_bytes) return 0;
  int64_t rows = slot_bytes / row_bytes;
  if (rows > kStreamChunkMaxRows) rows = kStreamChunkMaxRows;
  return rows * row_bytes;
}

/// Most columns (triples of gate, up and down^T rows) whose gate or up rows one chunk of a streamed
/// fold holds: its partial sums live in shared memory (fold_stream_split_ok).
inline constexpr int64_t kFoldMaxPieces = 32;
/// Most 16-byte vectors per output row a streamed fold keeps in each compute thread's registers.
inline constexpr int64_t kFoldVecsPerThread = 2;

/// The columns whose gate or up rows lie in the fold chunk of task rows [r0, r1) (row 3j is
/// column j's gate row, 3j + 1 its up row, 3j + 2 its down^T row): columns [*first, *first + n),
/// n returned (0 for a chunk of one down row).
AMK_HD int32_t fold_chunk_pieces(int32_t r0, int32_t r1, int32_t* first) {
  *first = r0 / 3 + (r0 % 3 == 2 ? 1 : 0);
  const int32_t last_row = r1 - 1;
  // The last column touched: the last row's, unless that is a down row whose up row is before r0.
  const int32_t last = last_row / 3 - (last_row % 3 == 2 && last_row - 1 < r0 ? 1 : 0);
  return last >= *first ? last - *first + 1 : 0;
}

/// Most columns any chunk of a task cut into chunks of `rows` rows touches: fold_chunk_pieces
/// over the rows a chunk can start at modulo 3, which is only 0 when `rows` is a multiple of 3
/// (whole columns: the split must not plan for a column more, which on the 1B's 15-row chunks
/// halved the items of the gate / up dots, 5 over 11 warps instead of 10).
AMK_HD int32_t fold_chunk_pieces_max(int32_t rows) {
  int32_t most = 0, first;
  for (int32_t p = 0; p < (rows % 3 == 0 ? 1 : 3); ++p) {
    const int32_t n = fold_chunk_pieces(p, p + rows, &first);
    most = n > most ? n : most;
  }
  return most;
}

/// How the compute warps share out a fold chunk that touches up to `pieces` columns (rows of
/// `row_vecs` vectors): an item is one column's gate and up rows times one segment of their
/// vectors (r = 1, groups = pieces); the down^T rows go by output vectors, every thread its own.
AMK_HD StreamSplit fold_stream_split(int64_t pieces, int64_t row_vecs, int32_t warps, int32_t lanes) {
  StreamSplit sp;
  if (pieces <= 0 || pieces > kFoldMaxPieces || row_vecs <= 0 || row_vecs > 0x7fffffff || warps <= 0 || lanes <= 0)
    return sp;
  sp.rows = static_cast<int32_t>(pieces);
  sp.r = 1;
  sp.groups = sp.rows;
  stream_split_segments(row_vecs, warps, lanes, sp);
  return sp;
}

/// Whether fold chunks touching up to `pieces` columns can run with `sp` (the device's check of
/// the host's split): segments that cover a row, and room for two partial sums per column segment.
AMK_HD bool fold_stream_split_ok(const StreamSplit& sp, int64_t pieces, int64_t row_vecs, int64_t max_partials) {
  return pieces >= 1 && pieces <= kFoldMaxPieces && sp.rows == pieces && sp.r == 1 && sp.groups == pieces &&
         sp.nseg >= 1 && sp.seg_vecs >= 1 && int64_t{sp.nseg} * sp.seg_vecs >= row_vecs &&
         2 * pieces * sp.nseg <= max_partials;
}

/// The chunk size in bytes of a streamed fold (`plan.fold`) on `slot_bytes` slots with `x_floats`
/// of staging room and `threads` compute threads, or 0 when it does not ride the ring: one row of
/// x, bf16 / f16 / f32 rows of 16-byte multiples, x and the task's activations (one per column) in
/// the work area, every output vector in kFoldVecsPerThread registers of a thread, a 16-byte
/// aligned F32 output (its sums are added four at a time), and whole columns per task. A chunk
/// holds whole columns (gate, up and down^T rows) when they fill at least 7/8 of a slot, and
/// otherwise as many rows as a slot does, a column's rows then spanning chunks: with 8 KiB rows
/// (Llama-3-8B), whole columns would leave a quarter of a 64 KiB slot empty (6 rows of 8), and on
/// the H200 the 8B's fold went from 5.90 to 5.79 ms with 8 rows (docs/PERFORMANCE.md row 139);
/// with 4 KiB rows (Llama-3.2-1B), 15 rows are 5 whole columns. At most 3 (kFoldMaxPieces - 1)
/// rows, which touch at most kFoldMaxPieces columns.
AMK_HD int64_t fold_stream_chunk_bytes(const GemvPlan& plan, int64_t slot_bytes, int64_t x_floats, int64_t threads) {
  const MatmulArgs& mm = plan.mm;
  const int32_t dt = mm.w.dtype;
  if (!plan.fold || (dt != AMK_DTYPE_BF16 && dt != AMK_DTYPE_F16 && dt != AMK_DTYPE_F32)) return 0;
  const int64_t row_bytes = mm.K * (dtype_bits(dt) / 8);
  if (!mm.w.contiguous || row_bytes % 16 != 0 || (reinterpret_cast<uintptr_t>(mm.w.ptr) & 15u) != 0) return 0;
  if (mm.y.dtype != AMK_DTYPE_F32 || !mm.y.contiguous || (reinterpret_cast<uintptr_t>(mm.y.ptr) & 15u) != 0) return 0;
  const int64_t task_rows = mm.n_end - mm.n_begin;
  if (task_rows <= 0 || task_rows % 3 != 0 || mm.n_begin % 3 != 0 || task_rows > 0x7fffffff) return 0;
  if (mm.m_end - mm.m_begin != 1 || mm.K + task_rows / 3 > x_floats) return 0;
  if (row_bytes / 16 > kFoldVecsPerThread * threads || row_bytes > slot_bytes) return 0;
  int64_t rows = slot_bytes / row_bytes;
  if (rows > 3 * (kFoldMaxPieces - 1)) rows = 3 * (kFoldMaxPieces - 1);
  const int64_t whole = rows / 3 * 3;  // whole columns
  return (whole * 8 >= rows * 7 ? whole : rows) * row_bytes;
}

}  // namespace amk::instructions
