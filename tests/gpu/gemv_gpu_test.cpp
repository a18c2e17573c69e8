// tests/gpu/gemv_gpu_test.cpp: GEMV_TILE, GEMM_TILE and the FUSED recipes on the GPU against the
// CPU reference: f32 / f16 / bf16, odd K (scalar path), aligned K (16-byte path), K larger than the
// shared-memory scratch (chunked staging), tiles spread over workers, bias, in-place residual.
#ifdef AMK_GPU_TESTS
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <set>

#include "gpu_harness.h"
#include "vm/trace_export.h"

using namespace amk;
using ir::BufferKind;
using ir::DType;
using ir::Opcode;

namespace {

/// The kernel report of a CUDA executor made for `p` with gputest::load's random weights (REQUIREs
/// that one can be made).
vm::GpuKernelReport kernel_report(const ir::Program& p) {
  loader::LoadOptions lo;
  lo.random_weights_seed = 11;
  return gputest::cuda_kernel_report(p, lo);
}

ir::Program gemv_program(DType xt, DType wt, DType yt, int64_t K, int64_t n_out, int tiles, bool bias, int rows = 1) {
  gputest::ProgramBuilder b;
  const int x = b.buffer("x", BufferKind::IoInput, xt, {rows, K});
  const int w = b.buffer("W", BufferKind::Weight, wt, {n_out, K});
  const int bb = bias ? b.buffer("bias", BufferKind::IoInput, DType::F32, {n_out}) : -1;
  const int y = b.buffer("y", BufferKind::IoOutput, yt, {rows, n_out});
  const int64_t tile = n_out / tiles;
  for (int t = 0; t < tiles; ++t) {
    std::vector<int> in = {x, w};
    if (bias) in.push_back(bb);
    ir::Task& g = b.task(Opcode::GemvTile, in, {y}, t % 3, "gemv.t" + std::to_string(t));
    g.params.set("K", K);
    g.params.set("N_tile", t == tiles - 1 ? n_out - tile * t : tile);
    g.params.set("n_off", tile * t);
  }
  return b.p;
}

/// Streamed and non-streamed tiles interleaved on three workers: bf16 GEMV tiles of 40 rows
/// (K 2048: many chunks per task at small slot sizes), odd-K tiles the stream must skip, f32
/// tiles whose rows are longer than small slots, and FUSED RMSNORM_GEMV / SILU_MUL_GEMV_ADD
/// tiles (the prologue and the residual epilogue on the stream path). With `long_x`, also fused
/// tiles whose x is longer than one round of the block's threads (several staging rounds: f16
/// RMSNORM at K 3072, bf16 SILU_MUL and a plain bf16 GEMV at K 6144, whose 12 KiB rows ride slots
/// of 16 KiB and more).
ir::Program mixed_stream_program(bool long_x = false) {
  gputest::ProgramBuilder b;
  const int64_t K = 2048, n = 240;
  const int x = b.buffer("x", BufferKind::IoInput, DType::BF16, {K});
  const int w = b.buffer("W", BufferKind::Weight, DType::BF16, {n, K});
  const int y = b.buffer("y", BufferKind::IoOutput, DType::F32, {n});
  const int xo = b.buffer("x_odd", BufferKind::IoInput, DType::F32, {777});
  const int wo = b.buffer("W_odd", BufferKind::Weight, DType::BF16, {60, 777});
  const int yo = b.buffer("y_odd", BufferKind::IoOutput, DType::F32, {60});
  const int xf = b.buffer("x_f32", BufferKind::IoInput, DType::F32, {4096});
  const int wf = b.buffer("W_f32", BufferKind::Weight, DType::F32, {30, 4096});
  const int yf = b.buffer("y_f32", BufferKind::IoOutput, DType::F32, {30});
  const int nw = b.buffer("norm_w", BufferKind::Weight, DType::BF16, {K});
  const int yr = b.buffer("y_rms", BufferKind::IoOutput, DType::BF16, {n});
  const int up = b.buffer("up", BufferKind::IoInput, DType::BF16, {K});
  const int res = b.buffer("res", BufferKind::IoInput, DType::BF16, {n});
  const int ys = b.buffer("y_silu", BufferKind::IoOutput, DType::BF16, {n});
  const int64_t kh = 3072, kl = 6144, nl = 24;
  int xh = -1, nwh = -1, wh = -1, yh = -1, xl = -1, upl = -1, wl = -1, resl = -1, yl = -1, ypl = -1;
  if (long_x) {
    xh = b.buffer("x_f16", BufferKind::IoInput, DType::F16, {kh});
    nwh = b.buffer("norm_w_f16", BufferKind::Weight, DType::F16, {kh});
    wh = b.buffer("W_f16", BufferKind::Weight, DType::F16, {nl, kh});
    yh = b.buffer("y_rms_f16", BufferKind::IoOutput, DType::F32, {nl});
    xl = b.buffer("gate_long", BufferKind::IoInput, DType::BF16, {kl});
    upl = b.buffer("up_long", BufferKind::IoInput, DType::BF16, {kl});
    wl = b.buffer("W_long", BufferKind::Weight, DType::BF16, {nl, kl});
    resl = b.buffer("res_long", BufferKind::IoInput, DType::BF16, {nl});
    yl = b.buffer("y_silu_long", BufferKind::IoOutput, DType::BF16, {nl});
    ypl = b.buffer("y_plain_long", BufferKind::IoOutput, DType::F32, {nl});
  }
  auto tile = [&](Opcode op, std::vector<int> in, int out, int64_t k, int64_t tile_rows, int t, int sm,
                  const std::string& label) -> ir::Task& {
    ir::Task& g = b.task(op, std::move(in), {out}, sm, label + std::to_string(t));
    g.params.set("K", k);
    g.params.set("N_tile", tile_rows);
    g.params.set("n_off", tile_rows * t);
    return g;
  };
  for (int t = 0; t < 6; ++t) {
    const int sm = t % 3;
    tile(Opcode::GemvTile, {x, w}, y, K, 40, t, sm, "gemv.t");
    tile(Opcode::GemvTile, {xo, wo}, yo, 777, 10, t, sm, "odd.t");
    tile(Opcode::GemvTile, {xf, wf}, yf, 4096, 5, t, sm, "f32.t");
    tile(Opcode::Fused, {x, nw, w}, yr, K, 40, t, sm, "rms.t").params.set("recipe", std::string("RMSNORM_GEMV"));
    ir::Task& f = tile(Opcode::Fused, {x, up, w, res}, ys, K, 40, t, sm, "silu.t");
    f.params.set("recipe", std::string("SILU_MUL_GEMV_ADD"));
    if (!long_x) continue;
    tile(Opcode::Fused, {xh, nwh, wh}, yh, kh, nl / 6, t, sm, "rms_f16.t").params.set("recipe", std::string("RMSNORM_GEMV"));
    tile(Opcode::Fused, {xl, upl, wl, resl}, yl, kl, nl / 6, t, sm, "silu_long.t")
        .params.set("recipe", std::string("SILU_MUL_GEMV_ADD"));
    tile(Opcode::GemvTile, {xl, wl}, ypl, kl, nl / 6, t, sm, "plain_long.t");
  }
  for (ir::Task& t : b.p.tasks)
    if (t.op == Opcode::Fused) t.params.set("eps", 1e-5);
  return b.p;
}

}  // namespace

TEST_CASE("gpu weight stream: every ring shape gives the CPU reference's results", "[gpu][stream]") {
  gputest::require_gpu();
  const ir::Program p = mixed_stream_program(/*long_x=*/true);
  struct Shape { const char* slots; const char* kib; };
  // 8 KiB slots: 2 rows per chunk, 20 chunks per 40-row tile, the f32 rows do not fit; 2 slots:
  // every chunk waits for the one before; 8 slots of 32 KiB: chunks of several tasks in flight.
  for (const Shape sh : {Shape{"2", "8"}, Shape{"3", "8"}, Shape{"4", "32"}, Shape{"8", "16"}}) {
    INFO("ring " << sh.slots << " x " << sh.kib << " KiB");
    gputest::ScopedEnv slots("AMK_RING_SLOTS", sh.slots), kib("AMK_RING_SLOT_KIB", sh.kib);
    if (gputest::device_sm_major() >= 9) {  // the stream exists on sm_90 builds only
      const vm::GpuKernelReport rep = kernel_report(p);
      INFO(rep.summary());
      CHECK(rep.ring_slots == std::atoi(sh.slots));
      CHECK(rep.kernel == "default");  // no folds: the kernel without the fold's streamed path
      // 24 streamed tiles (gemv, rms, silu, rms_f16) always; the 6 f32 tiles (16 KiB rows) and the
      // 6 silu_long and 6 plain_long tiles (12 KiB rows) from 16 KiB slots.
      CHECK(rep.streamed_tasks == (std::atoi(sh.kib) >= 16 ? 42 : 24));
    }
    Status st = gputest::compare_with_cpu(p, {});
    INFO(st.message());
    CHECK(st.is_ok());
  }
  // The loader warp's two jobs at their extremes: staging one task at a time (the stream runs
  // ahead of the staged tasks) and four (staged tasks run ahead of the stream).
  for (int staged : {1, 4}) {
    gputest::ScopedEnv slots("AMK_RING_SLOTS", "3"), kib("AMK_RING_SLOT_KIB", "8");
    gputest::CompareOptions o;
    o.staged_tasks = staged;
    Status st = gputest::compare_with_cpu(p, o);
    INFO("ring 3 x 8 KiB, staged tasks " << staged << ": " << st.message());
    CHECK(st.is_ok());
  }
  gputest::ScopedEnv off("AMK_RING", "0");
  Status st = gputest::compare_with_cpu(p, {});
  INFO("ring off: " << st.message());
  CHECK(st.is_ok());
}

TEST_CASE("gpu weight stream: a traced launch records every chunk in stream order, slots refilled only once consumed",
          "[gpu][stream][trace]") {
  gputest::require_gpu();
  if (gputest::device_sm_major() < 9) FAIL("the weight stream exists on sm_90 builds only; this device has none");
  gputest::ScopedEnv slots("AMK_RING_SLOTS", "3"), kib("AMK_RING_SLOT_KIB", "8");
  const ir::Program p = mixed_stream_program();
  auto image = gputest::load(p);
  auto ex = vm::make_cuda_executor(*image);
  INFO(ex.status().message());
  REQUIRE(ex.is_ok());
  vm::LaunchTrace tr;
  vm::LaunchOptions lo;
  lo.trace = &tr;
  for (int launch = 0; launch < 2; ++launch) {  // the records are the last launch's
    Status st = (*ex)->launch(launch, lo, nullptr);
    INFO(st.message());
    REQUIRE(st.is_ok());
  }
  REQUIRE(tr.ring_slots == 3);
  REQUIRE(tr.chunks_per_worker > 0);
  const amk_program_t& v = image->view();
  REQUIRE(tr.chunks.size() == static_cast<size_t>(v.n_sms) * static_cast<size_t>(tr.chunks_per_worker));
  // Bytes per streamed queue slot: every bf16 40-row tile (gemv, rms, silu) of K 2048 is 160 KiB,
  // in 8 KiB chunks of 2 rows; the odd-K and f32 tiles are not streamed at 8 KiB.
  std::map<int32_t, uint64_t> bytes_of_slot;
  int64_t consumed = 0;
  for (int32_t w = 0; w < v.n_sms; ++w) {
    const vm::ChunkTiming* c = &tr.chunks[static_cast<size_t>(w) * static_cast<size_t>(tr.chunks_per_worker)];
    int32_t n_used = 0;
    while (n_used < tr.chunks_per_worker && c[n_used].t_done != 0) ++n_used;
    for (int32_t n = n_used; n < tr.chunks_per_worker; ++n) CHECK(c[n].t_done == 0);  // consumed chunks come first
    for (int32_t n = 0; n < n_used; ++n) {
      INFO("SM " << w << " chunk " << n);
      CHECK(c[n].bytes == 8192);
      REQUIRE(c[n].queue_slot >= v.sm_queue_offsets[w]);
      REQUIRE(c[n].queue_slot < v.sm_queue_offsets[w + 1]);
      if (n > 0) CHECK(c[n].queue_slot >= c[n - 1].queue_slot);  // the stream follows the queue
      bytes_of_slot[c[n].queue_slot] += c[n].bytes;
      const vm::TaskTiming& task = tr.records[static_cast<size_t>(c[n].queue_slot)];
      CHECK(c[n].t_issue <= c[n].t_ready);
      CHECK(task.t_run_begin <= c[n].t_wait);
      CHECK(c[n].t_wait <= c[n].t_ready);
      CHECK(c[n].t_ready <= c[n].t_done);
      CHECK(c[n].t_done <= task.t_end);
      if (n >= tr.ring_slots) CHECK(c[n].t_issue >= c[n - tr.ring_slots].t_done);  // a slot is reused once consumed
    }
    consumed += n_used;
  }
  CHECK(consumed == 18 * 20);
  CHECK(bytes_of_slot.size() == 18);
  for (const auto& [slot, bytes] : bytes_of_slot) CHECK(bytes == 40u * 2048u * 2u);
  // The Chrome trace shows them: one "chunk" slice per consumed chunk, on weight-stream tracks.
  vm::TraceInfo info{"mixed stream", "cuda", v.n_sms};
  const nlohmann::ordered_json doc = vm::trace_to_chrome_json(p, {tr}, info);
  int64_t slices = 0;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.value("cat", "") != "chunk") continue;
    ++slices;
    CHECK(e.at("tid").get<int>() > v.n_sms);
    CHECK(e.at("args").at("bytes").get<int>() == 8192);
  }
  CHECK(slices == consumed);
  CHECK(doc.at("otherData").at("ring_slots").get<int>() == 3);
}

TEST_CASE("gpu trace: a traced launch records the SM each worker ran on, one worker per SM", "[gpu][trace]") {
  gputest::require_gpu();
  const ir::Program p = mixed_stream_program();
  auto image = gputest::load(p);
  auto ex = vm::make_cuda_executor(*image);
  INFO(ex.status().message());
  REQUIRE(ex.is_ok());
  const amk_program_t& v = image->view();
  vm::LaunchTrace tr;
  vm::LaunchOptions lo;
  lo.trace = &tr;
  for (int launch = 0; launch < 2; ++launch) {
    Status st = (*ex)->launch(launch, lo, nullptr);
    INFO(st.message());
    REQUIRE(st.is_ok());
    // The placement is the launch's own: the buffer is reset before each traced launch, so a
    // worker that did not write leaves -1.
    REQUIRE(tr.worker_sm.size() == static_cast<size_t>(v.n_sms));
    std::set<int32_t> sms;
    for (int32_t sm : tr.worker_sm) {
      CHECK(sm >= 0);
      sms.insert(sm);
    }
    // One block per SM (the kernel's registers allow no second) and all of them resident at once
    // (a cooperative launch): no two workers share an SM.
    CHECK(sms.size() == tr.worker_sm.size());
  }
  const nlohmann::ordered_json doc = vm::trace_to_chrome_json(p, {tr}, vm::TraceInfo{"mixed stream", "cuda", v.n_sms});
  int64_t tasks = 0;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.value("ph", "") != "X" || e.value("cat", "") == "wait" || e.value("cat", "") == "chunk" ||
        e.value("cat", "") == "launch")
      continue;
    const int worker = e.at("args").at("sm").get<int>();
    REQUIRE(worker >= 0);
    REQUIRE(worker < v.n_sms);
    CHECK(e.at("args").at("hw_sm").get<int>() == tr.worker_sm[static_cast<size_t>(worker)]);
    ++tasks;
  }
  CHECK(tasks == static_cast<int64_t>(p.tasks.size()));
}

TEST_CASE("gpu blocks may run any permutation of the workers' queues: the results stay, a bad table is refused",
          "[gpu][stream]") {
  gputest::require_gpu();
  const ir::Program p = mixed_stream_program();
  auto image = gputest::load(p);
  const int32_t n = image->view().n_sms;
  REQUIRE(n >= 2);
  {
    gputest::ScopedEnv env("AMK_BLOCK_WORKERS", "reverse");
    Status st = gputest::compare_with_cpu(p, {});
    INFO("AMK_BLOCK_WORKERS=reverse: " << st.message());
    CHECK(st.is_ok());
  }
  {
    gputest::CompareOptions rotated;  // block b runs worker (b + 1) % n, through GpuOptions
    for (int32_t b = 0; b < n; ++b) rotated.block_workers.push_back((b + 1) % n);
    Status st = gputest::compare_with_cpu(p, rotated);
    INFO("GpuOptions::block_workers rotated: " << st.message());
    CHECK(st.is_ok());
  }
  {
    // Traced, reversed: worker w's records come from block n - 1 - w; every worker still ran on
    // an SM of its own, and the kernel report says which table ran.
    gputest::ScopedEnv env("AMK_BLOCK_WORKERS", "reverse");
    auto ex = vm::make_cuda_executor(*image);
    INFO(ex.status().message());
    REQUIRE(ex.is_ok());
    const vm::GpuKernelReport* rep = vm::gpu_kernel_report(**ex);
    REQUIRE(rep != nullptr);
    CHECK(rep->block_workers == "reverse");
    vm::LaunchTrace tr;
    vm::LaunchOptions lo;
    lo.trace = &tr;
    Status st = (*ex)->launch(0, lo, nullptr);
    INFO(st.message());
    REQUIRE(st.is_ok());
    REQUIRE(tr.worker_sm.size() == static_cast<size_t>(n));
    CHECK(std::set<int32_t>(tr.worker_sm.begin(), tr.worker_sm.end()).size() == static_cast<size_t>(n));
    for (const vm::TaskTiming& r : tr.records) CHECK(r.t_end != 0);
  }
  // Not a permutation: a queue run twice would corrupt its outputs, so the executor refuses it.
  vm::GpuOptions twice_opt;
  twice_opt.block_workers.assign(static_cast<size_t>(n), 0);
  auto bad_opt = vm::make_cuda_executor(*image, twice_opt);
  REQUIRE_FALSE(bad_opt.is_ok());
  CHECK(bad_opt.status().message().find("GpuOptions::block_workers: worker 0 is named twice") != std::string::npos);
  gputest::ScopedEnv twice("AMK_BLOCK_WORKERS", "0,0");
  auto bad = vm::make_cuda_executor(*image);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("AMK_BLOCK_WORKERS") != std::string::npos);
}

TEST_CASE("gpu weight stream: a launch with Llama-3-8B's longest row leaves the SM 60 KiB of L1", "[gpu][stream][smem]") {
  gputest::require_gpu();
  if (gputest::device_sm_major() < 9) FAIL("the weight stream exists on sm_90 builds only; this device has none");
  // Shared memory and L1 share 256 KiB per SM, split at a carve-out of 0, 8, 16, 32, 64, 100,
  // 132, 164, 196 or 228 KiB (sm_90; the block's shared memory plus 1 KiB the system reserves).
  // At 228 the kernel keeps 28 KiB of L1, and that step cost the 1B token 6.5% and the 8B 2.9%
  // (docs/PERFORMANCE.md rows 118-119). The 8B launch (a work area for K 14336, the ring's two
  // 64 KiB slots) sits under 196 with ~1.8 KiB to spare: a kernel whose static shared memory
  // grows by that much fails here instead of costing the 8B its L1 unnoticed.
  const vm::GpuKernelReport rep = kernel_report(gemv_program(DType::BF16, DType::BF16, DType::F32, 14336, 8, 1, false));
  INFO(rep.summary());
  REQUIRE(rep.ring_slots == 2);
  REQUIRE(rep.ring_slot_bytes == 65536);
  CHECK(rep.static_smem_bytes + rep.dyn_smem_bytes + 1024 <= 196 * 1024);
}

TEST_CASE("gpu GEMV_TILE matches the CPU reference across dtypes and K", "[gpu][op:gemv_tile]") {
  gputest::require_gpu();
  struct Case { DType x, w, y; int64_t K, n; int tiles; bool bias; };
  const Case cases[] = {
      {DType::F32, DType::F32, DType::F32, 33, 40, 3, false},    {DType::F32, DType::F32, DType::F32, 1024, 96, 3, true},
      {DType::BF16, DType::BF16, DType::BF16, 4096, 128, 4, false}, {DType::F16, DType::F16, DType::F16, 2048, 96, 3, true},
      {DType::F32, DType::BF16, DType::F32, 777, 50, 2, false},   {DType::BF16, DType::BF16, DType::F32, 8, 7, 1, false},
      {DType::F16, DType::F16, DType::F32, 1000, 33, 3, false},   {DType::BF16, DType::F16, DType::BF16, 14336, 64, 2, false},
  };
  for (const Case& c : cases) {
    INFO("x " << ir::dtype_name(c.x) << " W " << ir::dtype_name(c.w) << " y " << ir::dtype_name(c.y) << " K " << c.K
              << " N " << c.n);
    Status st = gputest::compare_with_cpu(gemv_program(c.x, c.w, c.y, c.K, c.n, c.tiles, c.bias));
    INFO(st.message());
    CHECK(st.is_ok());
  }
}

TEST_CASE("gpu GEMV_TILE streams K beyond the shared-memory scratch in chunks", "[gpu][op:gemv_tile]") {
  gputest::require_gpu();
  Status st = gputest::compare_with_cpu(gemv_program(DType::F32, DType::BF16, DType::F32, 100000, 24, 2, true), {});
  INFO(st.message());
  CHECK(st.is_ok());
}

TEST_CASE("gpu GEMV_TILE with several rows, and GEMM_TILE on a row tile", "[gpu][op:gemm_tile]") {
  gputest::require_gpu();
  Status st = gputest::compare_with_cpu(gemv_program(DType::BF16, DType::BF16, DType::F32, 512, 64, 2, false, 3));
  INFO(st.message());
  CHECK(st.is_ok());

  gputest::ProgramBuilder b;
  const int x = b.buffer("x", BufferKind::IoInput, DType::F32, {5, 256});
  const int w = b.buffer("W", BufferKind::Weight, DType::BF16, {48, 256});
  const int y = b.buffer("y", BufferKind::IoOutput, DType::F32, {5, 48});
  for (int t = 0; t < 2; ++t) {
    ir::Task& g = b.task(Opcode::GemmTile, {x, w}, {y}, t, "gemm.t" + std::to_string(t));
    g.params.set("K", int64_t{256});
    g.params.set("N_tile", int64_t{48});
    g.params.set("n_off", int64_t{0});
    g.params.set("m_off", int64_t{t == 0 ? 0 : 2});
    g.params.set("M_tile", int64_t{t == 0 ? 2 : 3});
  }
  st = gputest::compare_with_cpu(b.p);
  INFO(st.message());
  CHECK(st.is_ok());
}

TEST_CASE("gpu FUSED recipes match the CPU reference", "[gpu][op:fused]") {
  gputest::require_gpu();
  const char* const kRecipes[] = {"", "GEMV_ADD", "RMSNORM_GEMV", "SILU_MUL_GEMV", "SILU_MUL_GEMV_ADD"};
  for (DType dt : {DType::BF16, DType::F16, DType::F32}) {
    for (int64_t K : {int64_t{257}, int64_t{2048}}) {
      for (int recipe = 1; recipe <= 4; ++recipe) {
        INFO("recipe " << recipe << " dtype " << ir::dtype_name(dt) << " K " << K);
        gputest::ProgramBuilder b;
        const int64_t n = 96;
        const int x = b.buffer("x", BufferKind::IoInput, dt, {K});
        const int aux = b.buffer("aux", recipe == 2 ? BufferKind::Weight : BufferKind::IoInput, dt, {K});
        const int w = b.buffer("W", BufferKind::Weight, dt, {n, K});
        const int res = b.buffer("res", BufferKind::IoInput, dt, {n});
        // GEMV_ADD writes its residual in place (y == residual); the others write a fresh y.
        const int y = recipe == 1 ? res : b.buffer("y", BufferKind::IoOutput, dt, {n});
        const std::vector<int> in = recipe == 1   ? std::vector<int>{x, w, res}
                                    : recipe == 4 ? std::vector<int>{x, aux, w, res}
                                                  : std::vector<int>{x, aux, w};
        for (int t = 0; t < 3; ++t) {
          ir::Task& f = b.task(Opcode::Fused, in, {y}, t, "fused.t" + std::to_string(t));
          f.params.set("recipe", std::string(kRecipes[recipe]));
          f.params.set("K", K);
          f.params.set("N_tile", n / 3);
          f.params.set("n_off", n / 3 * t);
          f.params.set("eps", 1e-5);
        }
        Status st = gputest::compare_with_cpu(b.p, {});
        INFO(st.message());
        CHECK(st.is_ok());
      }
    }
  }
}

TEST_CASE("gpu GEMV results do not depend on the L2 prefetch depth", "[gpu][op:gemv_tile][prefetch]") {
  gputest::require_gpu();
  // Many tiles per worker, so the prefetch runs ahead of the queue.
  const ir::Program p = gemv_program(DType::BF16, DType::BF16, DType::F32, 4096, 512, 32, false);
  for (int depth : {0, 1, 4}) {
    gputest::CompareOptions o;
    o.prefetch_depth = depth;
    INFO("prefetch depth " << depth);
    Status st = gputest::compare_with_cpu(p, o);
    INFO(st.message());
    CHECK(st.is_ok());
  }
}
#endif  // AMK_GPU_TESTS
