// tests/instructions/gemv_stream_split_test.cpp: the host's split of a weight-stream chunk over the
// compute warps (gemv_stream_split, instructions/gemv_like.h) against the rules the device relies
// on (gemv_stream_split_ok, checked once per task before any shared-memory write) and the ones
// that make it fast: every row covered by exactly one row group, segments of whole warp widths
// covering each row with no empty one, no more items than warps where the rows allow it.
#include <catch2/catch.hpp>

#include <algorithm>

#include "instructions/block_geometry.h"
#include "instructions/gemv_like.h"
#include "schedule/decode_preset.h"

using amk::instructions::gemv_stream_chunking;
using amk::instructions::gemv_stream_split;
using amk::instructions::gemv_stream_split_ok;
using amk::instructions::kStreamChunkMaxRows;
using amk::instructions::kStreamRowsPerItem;
using amk::instructions::StreamSplit;

namespace {

// The smallest partial-sum buffer of any build (kStreamPartials is at least the chunk's row cap).
constexpr int64_t kPartials = kStreamChunkMaxRows;

/// A streamed fold's plan for fold_stream_chunk_bytes: one row of x of K bf16, the task's columns
/// [first, first + columns) (three rows each), an aligned F32 output; only the pointers' alignment
/// is looked at.
amk::instructions::GemvPlan fold_plan(int64_t K, int64_t first, int64_t columns) {
  alignas(16) static float out[16];
  alignas(16) static uint16_t w[16];
  amk::instructions::GemvPlan p;
  p.fold = true;
  p.mm.K = K;
  p.mm.w.ptr = w;
  p.mm.w.dtype = AMK_DTYPE_BF16;
  p.mm.y.ptr = out;
  p.mm.y.dtype = AMK_DTYPE_F32;
  p.mm.m_begin = 0;
  p.mm.m_end = 1;
  p.mm.n_begin = 3 * first;
  p.mm.n_end = 3 * (first + columns);
  return p;
}

}  // namespace

TEST_CASE("stream split: every chunk shape the ring can carry gets a split the device accepts", "[instructions]") {
  // CUDA: 11 compute warps of 32 lanes (15 in 512-thread blocks); HIP: 8 wavefronts of 64; a few others.
  for (const auto& [warps, lanes] : {std::pair<int32_t, int32_t>{11, 32}, {15, 32}, {8, 64}, {16, 32}, {1, 32}}) {
    for (int64_t row_vecs : {1, 5, 31, 32, 33, 64, 100, 256, 512, 1024, 1792, 4096}) {
      for (int64_t rows = 1; rows <= kStreamChunkMaxRows; ++rows) {
        INFO("warps " << warps << " lanes " << lanes << " row_vecs " << row_vecs << " rows " << rows);
        const StreamSplit sp = gemv_stream_split(rows, row_vecs, warps, lanes);
        REQUIRE(gemv_stream_split_ok(sp, rows, row_vecs, kPartials));
        CHECK(sp.r == std::min<int64_t>(rows, kStreamRowsPerItem));
        CHECK(sp.seg_vecs % lanes == 0);                                    // whole warp widths
        CHECK(static_cast<int64_t>(sp.nseg - 1) * sp.seg_vecs < row_vecs);  // no empty segment
        const int64_t items = static_cast<int64_t>(sp.groups) * sp.nseg;
        CHECK(items <= std::max<int64_t>(sp.groups, warps));  // one item per warp where rows allow
        if (sp.groups < warps && (row_vecs + lanes - 1) / lanes >= warps / sp.groups)
          CHECK(items > warps / 2);  // and most warps busy when the row is long enough
      }
    }
  }
}

TEST_CASE("stream split: a split made for other rows or a bad shape is refused", "[instructions]") {
  const StreamSplit sp = gemv_stream_split(12, 256, 15, 32);  // a 48 KiB chunk of 4 KiB rows
  CHECK(sp.rows == 12);
  CHECK(sp.r == 4);
  CHECK(sp.groups == 3);
  CHECK(sp.nseg == 4);       // 8 warp-widths per row, 5 warps per group: 2 widths per segment
  CHECK(sp.seg_vecs == 64);
  CHECK(gemv_stream_split_ok(sp, 12, 256, kPartials));
  CHECK_FALSE(gemv_stream_split_ok(sp, 11, 256, kPartials));  // the last chunk needs its own split
  CHECK_FALSE(gemv_stream_split_ok(sp, 12, 257, kPartials));  // segments no longer cover the row
  CHECK_FALSE(gemv_stream_split_ok(sp, 12, 256, 47));         // 48 partial sums do not fit
  CHECK_FALSE(gemv_stream_split_ok(StreamSplit{}, 12, 256, kPartials));  // a plan without a split

  // Nothing to split: the host gets rows 0, which no chunk accepts.
  CHECK(gemv_stream_split(0, 256, 15, 32).rows == 0);
  CHECK(gemv_stream_split(12, 0, 15, 32).rows == 0);
  CHECK(gemv_stream_split(12, 256, 0, 32).rows == 0);
  CHECK(gemv_stream_split(int64_t{1} << 40, 256, 15, 32).rows == 0);
}

TEST_CASE("stream chunking: rows per chunk and the last chunk's rows", "[instructions]") {
  // 4 KiB rows in 64 KiB chunks: 16 per chunk; a 125-row task ends with a chunk of 13.
  auto c = gemv_stream_chunking(4096, 125, 65536);
  CHECK(c.row_vecs == 256);
  CHECK(c.rows_per_chunk == 16);
  CHECK(c.last_rows == 13);
  c = gemv_stream_chunking(4096, 32, 65536);  // an exact multiple: the last chunk is full
  CHECK(c.last_rows == 16);
  c = gemv_stream_chunking(4096, 5, 65536);  // fewer rows than a chunk holds
  CHECK(c.last_rows == 5);
  // No whole row per chunk, rows not of 16-byte vectors, or nothing to stream: rows_per_chunk 0.
  CHECK(gemv_stream_chunking(28672, 10, 16384).rows_per_chunk == 0);
  CHECK(gemv_stream_chunking(4100, 10, 65536).rows_per_chunk == 0);
  CHECK(gemv_stream_chunking(4096, 0, 65536).rows_per_chunk == 0);
}

TEST_CASE("stream chunking: the 32-bit path and the 64-bit one agree at their border", "[instructions]") {
  // Figures up to INT32_MAX take 32-bit divisions (cheap on the GPU), larger ones 64-bit: the same
  // arithmetic on either side of the border.
  const int64_t big = INT32_MAX;
  auto c = gemv_stream_chunking(4096, big, 65536);  // 32-bit: 2^31 - 1 = 16 * 134217727 + 15
  CHECK(c.rows_per_chunk == 16);
  CHECK(c.last_rows == 15);
  c = gemv_stream_chunking(4096, big + 1, 65536);  // 64-bit: 2^31 = 16 * 2^27
  CHECK(c.rows_per_chunk == 16);
  CHECK(c.last_rows == 16);
  c = gemv_stream_chunking(4096, big + 2, 65536);
  CHECK(c.last_rows == 1);
  c = gemv_stream_chunking(16, 7, big + 1);  // a chunk past 2 GiB: 64-bit, 2^27 rows of 16 bytes
  CHECK(c.rows_per_chunk == int64_t{1} << 27);
  CHECK(c.last_rows == 7);
  c = gemv_stream_chunking(16, 7, big);  // 32-bit: 2^27 - 1 whole rows (15 bytes left over)
  CHECK(c.rows_per_chunk == (int64_t{1} << 27) - 1);
  CHECK(c.last_rows == 7);
}

TEST_CASE("stream split: a fold chunk's columns, and the fold's splits its device check accepts", "[instructions][fold]") {
  using amk::instructions::fold_chunk_pieces;
  using amk::instructions::fold_chunk_pieces_max;
  using amk::instructions::fold_stream_split;
  using amk::instructions::fold_stream_split_ok;
  using amk::instructions::kFoldMaxPieces;
  // fold_chunk_pieces against the rows counted one by one: task row 3j is column j's gate row,
  // 3j + 1 its up row, 3j + 2 its down^T row.
  for (int32_t r0 = 0; r0 < 12; ++r0) {
    for (int32_t r1 = r0 + 1; r1 <= r0 + 40; ++r1) {
      int32_t lo = -1, hi = -2;
      for (int32_t r = r0; r < r1; ++r) {
        if (r % 3 == 2) continue;
        if (lo < 0) lo = r / 3;
        hi = r / 3;
      }
      int32_t first = -7;
      const int32_t n = fold_chunk_pieces(r0, r1, &first);
      INFO("rows [" << r0 << ", " << r1 << ")");
      CHECK(n == (lo < 0 ? 0 : hi - lo + 1));
      if (lo >= 0) CHECK(first == lo);
    }
  }
  int32_t first = 0;
  CHECK(fold_chunk_pieces(2, 3, &first) == 0);  // a lone down row
  CHECK(fold_chunk_pieces(1, 2, &first) == 1);  // a lone up row: its gate came before
  CHECK(first == 0);
  // The most columns a chunk of n rows touches, over the rows a chunk can start at (modulo 3),
  // against every chunk of a long task cut into chunks of n rows.
  for (int32_t rows = 1; rows <= 3 * (static_cast<int32_t>(kFoldMaxPieces) - 1); ++rows) {
    int32_t most = 0;
    for (int32_t r0 = 0; r0 < 300 * 3; r0 += rows) most = std::max(most, fold_chunk_pieces(r0, r0 + rows, &first));
    INFO("chunks of " << rows << " rows");
    CHECK(fold_chunk_pieces_max(rows) == most);
  }
  CHECK(fold_chunk_pieces_max(1) == 1);
  CHECK(fold_chunk_pieces_max(8) == 3);    // 8 KiB rows in 64 KiB (Llama-3-8B)
  CHECK(fold_chunk_pieces_max(15) == 5);   // whole columns: 4 KiB rows in 64 KiB (Llama-3.2-1B)
  CHECK(fold_chunk_pieces_max(16) == 6);
  CHECK(fold_chunk_pieces_max(3 * (static_cast<int32_t>(kFoldMaxPieces) - 1)) == kFoldMaxPieces - 1);
  for (const auto& [warps, lanes] : {std::pair<int32_t, int32_t>{11, 32}, {15, 32}, {8, 64}}) {
    for (int64_t row_vecs : {4, 32, 256, 512, 700}) {
      for (int64_t pieces = 1; pieces <= kFoldMaxPieces; ++pieces) {
        INFO("warps " << warps << " row_vecs " << row_vecs << " pieces " << pieces);
        const StreamSplit sp = fold_stream_split(pieces, row_vecs, warps, lanes);
        REQUIRE(fold_stream_split_ok(sp, pieces, row_vecs, kPartials));
        CHECK(sp.r == 1);
        CHECK(sp.seg_vecs % lanes == 0);
        CHECK(static_cast<int64_t>(sp.nseg - 1) * sp.seg_vecs < row_vecs);  // no empty segment
        CHECK(static_cast<int64_t>(sp.groups) * sp.nseg <= std::max<int64_t>(pieces, warps));
      }
    }
  }
  // Out of range: no split, and the check refuses a split for another count.
  CHECK(fold_stream_split(kFoldMaxPieces + 1, 256, 11, 32).rows == 0);
  CHECK(fold_stream_split(0, 256, 11, 32).rows == 0);
  CHECK_FALSE(fold_stream_split_ok(fold_stream_split(4, 256, 11, 32), 5, 256, kPartials));
}

TEST_CASE("stream split: a fold's chunk holds whole columns where they fill a slot, else spans them", "[instructions][fold]") {
  using amk::instructions::fold_stream_chunk_bytes;
  using amk::instructions::GemvPlan;
  const auto plan_for = [](int64_t K, int64_t columns) { return fold_plan(K, 5, columns); };  // column 5 on
  constexpr int64_t kSlot = 64 * 1024, kThreads = 352;
  // Llama-3.2-1B (K 2048, 4 KiB rows): 5 whole columns (15 rows) fill 94% of a slot.
  CHECK(fold_stream_chunk_bytes(plan_for(2048, 62), kSlot, 2048 + 62, kThreads) == 15 * 4096);
  // Llama-3-8B (K 4096, 8 KiB rows): 2 whole columns would fill 75%; 8 rows span columns.
  CHECK(fold_stream_chunk_bytes(plan_for(4096, 109), kSlot, 4096 + 109, kThreads) == 8 * 8192);
  // Short rows: at most 3 (kFoldMaxPieces - 1) rows, whole columns.
  CHECK(fold_stream_chunk_bytes(plan_for(256, 2), kSlot, 4096, kThreads) == 93 * 512);
  // Refused: no room for x and the task's activations, a row longer than a slot, more output
  // vectors than the threads keep, a task of part of a column.
  CHECK(fold_stream_chunk_bytes(plan_for(4096, 109), kSlot, 4096 + 108, kThreads) == 0);
  CHECK(fold_stream_chunk_bytes(plan_for(4096, 109), 4096, 8192, kThreads) == 0);
  CHECK(fold_stream_chunk_bytes(plan_for(4096, 109), kSlot, 8192, 255) == 0);
  GemvPlan partial = plan_for(2048, 4);
  partial.mm.n_end -= 1;
  CHECK(fold_stream_chunk_bytes(partial, kSlot, 4096, kThreads) == 0);
  GemvPlan not_fold = plan_for(2048, 4);
  not_fold.fold = false;
  CHECK(fold_stream_chunk_bytes(not_fold, kSlot, 4096, kThreads) == 0);
}

TEST_CASE("stream split: the preset's auto fold bound is the widest hidden size a streamed fold takes", "[instructions][fold]") {
  // schedule::kMlpFoldAutoMaxHidden restates this consumer's limit (the schedule library does not
  // see the kernel's geometry): 16-bit rows of that width ride the ring, one vector wider do not.
  using amk::instructions::fold_stream_chunk_bytes;
  const auto plan_for = [](int64_t K) { return fold_plan(K, 0, 4); };
  constexpr int64_t kMax = amk::schedule::kMlpFoldAutoMaxHidden, kSlot = 64 * 1024;
  const int64_t threads = amk::instructions::kComputeThreads;
  CHECK(fold_stream_chunk_bytes(plan_for(kMax), kSlot, kMax + 4, threads) > 0);
  CHECK(fold_stream_chunk_bytes(plan_for(kMax + 8), kSlot, kMax + 12, threads) == 0);
}

TEST_CASE("stream split: the measuring knobs' fixed splits cover the rows or are refused", "[instructions]") {
  using amk::instructions::gemv_stream_split_fixed;
  // The Llama-1B's 64 KiB chunks of 4 KiB rows in items of 4 rows x one warp width: 32 items.
  const StreamSplit fine = gemv_stream_split_fixed(16, 256, 4, 1, 32);
  CHECK(fine.r == 4);
  CHECK(fine.groups == 4);
  CHECK(fine.nseg == 8);
  CHECK(fine.seg_vecs == 32);
  CHECK(gemv_stream_split_ok(fine, 16, 256, kPartials));
  for (int32_t r = 1; r <= 6; ++r) {
    for (int32_t seg_blocks = 1; seg_blocks <= 40; seg_blocks += 3) {
      for (int64_t row_vecs : {1, 33, 256, 512, 1792}) {
        for (int64_t rows : {1, 2, 3, 7, 8, 16, 64}) {
          INFO("r " << r << " seg_blocks " << seg_blocks << " row_vecs " << row_vecs << " rows " << rows);
          const StreamSplit sp = gemv_stream_split_fixed(rows, row_vecs, r, seg_blocks, 32);
          CHECK(sp.r == std::min<int64_t>({rows, r, kStreamRowsPerItem}));
          CHECK(static_cast<int64_t>(sp.nseg - 1) * sp.seg_vecs < row_vecs);  // no empty segment
          // Too many partial sums is the only refusal (the executor then keeps gemv_stream_split).
          CHECK(gemv_stream_split_ok(sp, rows, row_vecs, kPartials) == (rows * sp.nseg <= kPartials));
        }
      }
    }
  }
  CHECK(gemv_stream_split_fixed(16, 256, 0, 1, 32).rows == 0);
  CHECK(gemv_stream_split_fixed(16, 256, 4, 0, 32).rows == 0);
}
