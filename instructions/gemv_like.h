// instructions/gemv_like.h: the matmul tile of any weight-streaming instruction (GEMV_TILE,
// GEMM_TILE, FUSED), for the code that plans around weights rather than runs the task: the GPU
// kernel's L2 prefetch and weight stream, and the executor building that stream's table. Host and
// device, so the host's plan and the kernel's decode of a task are the same function.
#pragma once
#include "instructions/fused.h"
#include "instructions/gemv_tile.h"
#include "instructions/mlp_fold.h"

namespace amk::instructions {

/// What is applied to x while it is staged.
enum GemvPrologue : int32_t { kGemvPlain = 0, kGemvRmsNorm = 1, kGemvSiluMul = 2 };

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

/// The segments of a split whose sp.groups row groups are set: as many items (groups x segments)
/// as there are warps where the row allows it, segments of whole warp widths, none empty.
AMK_HD void stream_split_segments(int64_t row_vecs, int32_t warps, int32_t lanes, StreamSplit& sp) {
  const int64_t blocks = (row_vecs + lanes - 1) / lanes;
  int64_t nseg = sp.groups >= warps ? 1 : warps / sp.groups;
  if (nseg > blocks) nseg = blocks;
  const int64_t seg_blocks = (blocks + nseg - 1) / nseg;
  sp.nseg = static_cast<int32_t>((blocks + seg_blocks - 1) / seg_blocks);
  sp.seg_vecs = static_cast<int32_t>(seg_blocks * lanes);
}

/// The split of a chunk of `rows` rows of `row_vecs` vectors over `warps` warps of `lanes` lanes:
/// as many items as there are warps where the rows allow it, never an empty segment.
AMK_HD StreamSplit gemv_stream_split(int64_t rows, int64_t row_vecs, int32_t warps, int32_t lanes) {
  StreamSplit sp;
  if (rows <= 0 || row_vecs <= 0 || warps <= 0 || lanes <= 0 || rows > 0x7fffffff || row_vecs > 0x7fffffff) return sp;
  sp.rows = static_cast<int32_t>(rows);
  sp.r = sp.rows < kStreamRowsPerItem ? sp.rows : kStreamRowsPerItem;
  sp.groups = (sp.rows + sp.r - 1) / sp.r;
  stream_split_segments(row_vecs, warps, lanes, sp);
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
  Tensor copy;      ///< GEMV_ADD_COPY's second output [rows, n_out]
  float eps = 0.0f;
  int32_t prologue = kGemvPlain;
  bool has_bias = false, has_residual = false, has_copy = false;
  /// When the task rides the GPU weight stream (set by the host with its chunk size; rows 0
  /// otherwise): the split of its full chunks and of its last chunk, which may be shorter.
  /// For the fold, the splits count triples (fold_stream_split).
  StreamSplit split_full, split_last;
  /// RMSNORM_MLP_FOLD (docs/FOLD.md): mm is the stacked weight viewed as [3 I, K] rows, its tile
  /// rows [3 n_off, 3 (n_off + N_tile)), each triple gate, up, down^T; y is the F32 output the
  /// task adds into; aux is norm_w (prologue kGemvRmsNorm).
  bool fold = false;
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
#endif  // host only
  if (inst.op == AMK_OP_FUSED) {
    FusedArgs a;
    AMK_TRY_DEV(decode_fused(p, inst, &a));
    plan->mm = a.mm;
    plan->prologue = a.recipe == kRecipeRmsNormGemv ? kGemvRmsNorm : (a.has_aux ? kGemvSiluMul : kGemvPlain);
    plan->aux = a.has_aux ? a.aux : a.mm.x;
    plan->residual = a.residual;
    plan->has_residual = a.has_residual;
    plan->copy = a.copy;
    plan->has_copy = a.has_copy;
    plan->has_bias = false;
    plan->eps = a.eps;
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

/// Most triples one chunk of a streamed fold holds (its activations sit beside x in the work area).
inline constexpr int64_t kFoldMaxTriples = 32;
/// Most 16-byte vectors per output row a streamed fold keeps in each compute thread's registers.
inline constexpr int64_t kFoldVecsPerThread = 2;

/// How the compute warps share out one fold chunk of `triples` triples (gate, up, down^T rows of
/// `row_vecs` vectors): an item is one triple's gate and up rows times one segment of their
/// vectors (r = 1, groups = triples); the down^T rows go by columns, every thread its own.
AMK_HD StreamSplit fold_stream_split(int64_t triples, int64_t row_vecs, int32_t warps, int32_t lanes) {
  StreamSplit sp;
  if (triples <= 0 || triples > kFoldMaxTriples || row_vecs <= 0 || row_vecs > 0x7fffffff || warps <= 0 || lanes <= 0)
    return sp;
  sp.rows = static_cast<int32_t>(triples);
  sp.r = 1;
  sp.groups = sp.rows;
  stream_split_segments(row_vecs, warps, lanes, sp);
  return sp;
}

/// Whether fold chunks of `triples` triples can run with `sp` (the device's check of the host's split).
AMK_HD bool fold_stream_split_ok(const StreamSplit& sp, int64_t triples, int64_t row_vecs, int64_t max_partials) {
  return triples >= 1 && triples <= kFoldMaxTriples && sp.rows == triples && sp.r == 1 && sp.groups == triples &&
         sp.nseg >= 1 && sp.seg_vecs >= 1 && int64_t{sp.nseg} * sp.seg_vecs >= row_vecs &&
         2 * triples * sp.nseg <= max_partials;
}

/// The chunk size in bytes of a streamed fold (`plan.fold`) on `slot_bytes` slots with `x_floats`
/// of staging room and `threads` compute threads, or 0 when it does not ride the ring: one row of
/// x, bf16 / f16 / f32 rows of 16-byte multiples, x and a chunk's activations in the work area,
/// every output vector in kFoldVecsPerThread registers of a thread, a 16-byte aligned F32 output
/// (its sums are added four at a time), and whole triples per chunk.
AMK_HD int64_t fold_stream_chunk_bytes(const GemvPlan& plan, int64_t slot_bytes, int64_t x_floats, int64_t threads) {
  const MatmulArgs& mm = plan.mm;
  const int32_t dt = mm.w.dtype;
  if (!plan.fold || (dt != AMK_DTYPE_BF16 && dt != AMK_DTYPE_F16 && dt != AMK_DTYPE_F32)) return 0;
  const int64_t row_bytes = mm.K * (dtype_bits(dt) / 8);
  if (!mm.w.contiguous || row_bytes % 16 != 0 || (reinterpret_cast<uintptr_t>(mm.w.ptr) & 15u) != 0) return 0;
  if (mm.y.dtype != AMK_DTYPE_F32 || !mm.y.contiguous || (reinterpret_cast<uintptr_t>(mm.y.ptr) & 15u) != 0) return 0;
  if (mm.m_end - mm.m_begin != 1 || mm.K + kFoldMaxTriples > x_floats) return 0;
  if (row_bytes / 16 > kFoldVecsPerThread * threads || (mm.n_end - mm.n_begin) % 3 != 0 || mm.n_end <= mm.n_begin)
    return 0;
  int64_t triples = slot_bytes / (3 * row_bytes);
  if (triples > kFoldMaxTriples) triples = kFoldMaxTriples;
  return triples * 3 * row_bytes;  // 0 when a triple does not fit a slot
}

}  // namespace amk::instructions
