// tools/bench/cublas_baseline.cu: the graphed cuBLAS decode step (see cublas_baseline.h). Every
// projection is one cublasGemmEx with m = out, n = 1 (a GEMV: bf16 in, fp32 accumulate); o_proj
// and down_proj use beta = 1 with C = h, so the residual add happens in cuBLAS's fp32 epilogue and
// h is rounded to bf16 once (amk's GEMV_ADD recipe). create() runs one eager step first, so cuBLAS
// picks its kernels and allocates nothing during the capture; the graph is then instantiated once.
#include "targets/gpu.h"

#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "tools/bench/baseline_kernels.cuh"
#include "tools/bench/cublas_baseline.h"

/// Evaluate a cuBLAS call; on failure return Status::GpuRuntime naming it and cuBLAS's words.
#define AMK_CUBLAS_TRY(expr)                                                                        \
  do {                                                                                              \
    const cublasStatus_t amk_cublas_st_ = (expr);                                                   \
    if (amk_cublas_st_ != CUBLAS_STATUS_SUCCESS) return cublas_status(amk_cublas_st_, #expr, __LINE__); \
  } while (0)

/// Check the launch just enqueued (bad configurations are reported here, also during capture).
#define AMK_KERNEL_TRY(name)                                                                  \
  do {                                                                                        \
    const ::amk::gpu::Error amk_kernel_err_ = ::amk::gpu::get_last_error();                   \
    if (amk_kernel_err_ != ::amk::gpu::kSuccess)                                              \
      return ::amk::gpu::runtime_status(amk_kernel_err_, "launch of " name, __FILE__, __LINE__); \
  } while (0)

namespace amk::bench {
namespace {

constexpr size_t kCublasWorkspaceBytes = 32u << 20;  // cuBLAS's recommendation for Hopper
constexpr int kElementwiseThreads = 256;
constexpr int64_t kInt32Max = 2147483647;

Status bad(const std::string& what) { return Status(StatusCode::InvalidArgument, what); }

Status cublas_status(cublasStatus_t st, const char* expr, int line) {
  return Status(StatusCode::GpuRuntime, std::string(expr) + " failed at " + __FILE__ + ":" + std::to_string(line) +
                                            ": " + cublasGetStatusName(st) + " (" + cublasGetStatusString(st) + ")");
}

Status check_shape(const LlamaShape& s) {
  const std::pair<const char*, int64_t> fields[] = {
      {"hidden", s.hidden},   {"n_layers", s.n_layers},         {"n_heads", s.n_heads},
      {"n_kv_heads", s.n_kv_heads}, {"head_dim", s.head_dim}, {"intermediate", s.intermediate},
      {"vocab", s.vocab},     {"max_seq", s.max_seq}};
  for (const auto& [name, v] : fields)
    if (v < 1 || v > kInt32Max)
      return bad(std::string("LlamaShape.") + name + " must be in [1, 2147483647] (got " + std::to_string(v) + ")");
  if (s.n_heads % s.n_kv_heads != 0)
    return bad("LlamaShape: n_heads (" + std::to_string(s.n_heads) + ") must be a multiple of n_kv_heads (" +
               std::to_string(s.n_kv_heads) + ") for grouped-query attention");
  if (s.head_dim % 2 != 0 || s.head_dim > kBaselineMaxHeadDim)
    return bad("LlamaShape.head_dim must be even and at most " + std::to_string(kBaselineMaxHeadDim) + " (got " +
               std::to_string(s.head_dim) + ")");
  if (s.n_heads * s.head_dim > kInt32Max)
    return bad("LlamaShape: n_heads * head_dim (" + std::to_string(s.n_heads * s.head_dim) + ") exceeds INT32_MAX");
  if ((s.max_seq + kernels::kAttnBlockKeys - 1) / kernels::kAttnBlockKeys > 65535)
    return bad("LlamaShape.max_seq " + std::to_string(s.max_seq) + " needs more than 65535 attention splits");
  if (!std::isfinite(s.rms_eps) || s.rms_eps < 0.0f)
    return bad("LlamaShape.rms_eps must be finite and >= 0 (got " + std::to_string(s.rms_eps) + ")");
  return Status::ok();
}

/// `p` must be device (or managed) memory aligned to `align` bytes.
Status check_pointer(const void* p, const std::string& name, uintptr_t align) {
  if (p == nullptr) return bad("ModelWeights." + name + " is null");
  if (reinterpret_cast<uintptr_t>(p) % align != 0)
    return bad("ModelWeights." + name + " is not " + std::to_string(align) + "-byte aligned");
  cudaPointerAttributes attr{};
  AMK_GPU_TRY(cudaPointerGetAttributes(&attr, p));
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
    return bad("ModelWeights." + name + " is not device memory (the baseline reads weights on the GPU)");
  return Status::ok();
}

Status check_weights(const LlamaShape& s, const ModelWeights& w) {
  if (static_cast<int64_t>(w.layers.size()) != s.n_layers)
    return bad("ModelWeights.layers has " + std::to_string(w.layers.size()) + " entries, the shape " +
               std::to_string(s.n_layers) + " layers");
  const std::pair<const void*, std::string> top[] = {
      {w.embed, "embed"}, {w.final_norm, "final_norm"}, {w.lm_head, "lm_head"}};
  for (const auto& [p, name] : top)
    if (Status st = check_pointer(p, name, 2); !st) return st;
  if (Status st = check_pointer(w.rope_inv_freq, "rope_inv_freq", 4); !st) return st;
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& l = w.layers[i];
    const std::pair<const void*, const char*> ps[] = {{l.attn_norm, "attn_norm"}, {l.q, "q"},       {l.k, "k"},
                                                      {l.v, "v"},                 {l.o, "o"},       {l.mlp_norm, "mlp_norm"},
                                                      {l.gate, "gate"},           {l.up, "up"},     {l.down, "down"}};
    for (const auto& [p, name] : ps)
      if (Status st = check_pointer(p, "layers[" + std::to_string(i) + "]." + name, 2); !st) return st;
  }
  return Status::ok();
}

unsigned blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace

struct CublasGraphBaseline::Impl {
  LlamaShape s;
  ModelWeights w;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::vector<void*> allocations;  // freed in the destructor
  int32_t* h_scalars = nullptr;    // pinned [token, pos, next_token]
  int32_t* d_scalars = nullptr;    // device [token, pos, next_token]
  uint16_t *h = nullptr, *xn = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *attn = nullptr;  // bf16
  uint16_t *gate = nullptr, *up = nullptr, *act = nullptr, *k_cache = nullptr, *v_cache = nullptr;  // bf16
  float *logits = nullptr, *partial = nullptr;
  int64_t q_dim = 0, kv_dim = 0, n_splits = 0;

  ~Impl() {
    if (stream != nullptr) (void)gpu::stream_sync(stream);
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    if (cublas != nullptr) (void)cublasDestroy(cublas);
    if (stream != nullptr) (void)gpu::stream_destroy(stream);
    for (void* p : allocations) (void)gpu::free_device(p);
    if (h_scalars != nullptr) (void)gpu::host_free(h_scalars);
  }

  template <typename T>
  Status alloc(T** p, int64_t count) {
    void* raw = nullptr;
    AMK_GPU_TRY(gpu::malloc_device(&raw, static_cast<size_t>(count) * sizeof(T)));
    allocations.push_back(raw);
    *p = static_cast<T*>(raw);
    return Status::ok();
  }

  Status init() {
    q_dim = s.n_heads * s.head_dim;
    kv_dim = s.n_kv_heads * s.head_dim;
    n_splits = (s.max_seq + kernels::kAttnBlockKeys - 1) / kernels::kAttnBlockKeys;
    AMK_GPU_TRY(gpu::stream_create(&stream));
    void* pinned = nullptr;
    AMK_GPU_TRY(gpu::host_alloc_mapped(&pinned, 4 * sizeof(int32_t)));
    h_scalars = static_cast<int32_t*>(pinned);
    const int64_t cache = s.n_layers * s.max_seq * kv_dim;
    Status st;
    if (!(st = alloc(&d_scalars, 4)) || !(st = alloc(&h, s.hidden)) || !(st = alloc(&xn, s.hidden)) ||
        !(st = alloc(&q, q_dim)) || !(st = alloc(&k, kv_dim)) || !(st = alloc(&v, kv_dim)) ||
        !(st = alloc(&attn, q_dim)) || !(st = alloc(&gate, s.intermediate)) || !(st = alloc(&up, s.intermediate)) ||
        !(st = alloc(&act, s.intermediate)) || !(st = alloc(&k_cache, cache)) || !(st = alloc(&v_cache, cache)) ||
        !(st = alloc(&logits, s.vocab)) || !(st = alloc(&partial, s.n_heads * n_splits * (s.head_dim + 2))))
      return st;
    // Zeroed caches: timing at a pos whose earlier rows were never decoded reads zeros, not NaNs.
    AMK_GPU_TRY(gpu::memset_async(k_cache, 0, static_cast<size_t>(cache) * 2, stream));
    AMK_GPU_TRY(gpu::memset_async(v_cache, 0, static_cast<size_t>(cache) * 2, stream));
    AMK_GPU_TRY(gpu::memset_async(d_scalars, 0, 4 * sizeof(int32_t), stream));

    char* workspace = nullptr;
    if (Status a = alloc(&workspace, static_cast<int64_t>(kCublasWorkspaceBytes)); !a) return a;
    AMK_CUBLAS_TRY(cublasCreate(&cublas));
    AMK_CUBLAS_TRY(cublasSetStream(cublas, stream));
    AMK_CUBLAS_TRY(cublasSetWorkspace(cublas, workspace, kCublasWorkspaceBytes));
    // fp32 accumulation all the way (no reduced-precision split-K reductions).
    AMK_CUBLAS_TRY(cublasSetMathMode(
        cublas, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));

    // Eager step at (token 0, pos 0): loads every kernel and settles cuBLAS's heuristics outside
    // the capture. It writes KV row 0, which the caller's first step at pos 0 overwrites.
    if (Status e = enqueue_step(); !e) return e;
    AMK_GPU_TRY(gpu::stream_sync(stream));

    AMK_GPU_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const Status captured = enqueue_step();
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    if (!captured) return captured;  // the first failure, not the invalidated capture it caused
    if (end != cudaSuccess) return gpu::runtime_status(end, "cudaStreamEndCapture(stream, &graph)", __FILE__, __LINE__);
    AMK_GPU_TRY(cudaGraphInstantiate(&exec, graph, 0));
    AMK_GPU_TRY(cudaGraphUpload(exec, stream));
    AMK_GPU_TRY(gpu::stream_sync(stream));
    return Status::ok();
  }

  /// y[out] (= or +=, by beta) W[out, in] . x[in]: column-major, W is an in x out matrix, so op(A) = W^T.
  Status gemv(const void* W, const void* x, void* y, int64_t out, int64_t in, cudaDataType_t y_type, float beta) {
    const float alpha = 1.0f;
    AMK_CUBLAS_TRY(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(out), 1, static_cast<int>(in),
                                &alpha, W, CUDA_R_16BF, static_cast<int>(in), x, CUDA_R_16BF, static_cast<int>(in),
                                &beta, y, y_type, static_cast<int>(out), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return Status::ok();
  }

  Status rms_norm(const uint16_t* x, const void* weight, uint16_t* y) {
    kernels::rms_norm_kernel<<<1, kernels::kNormThreads, 0, stream>>>(x, static_cast<const uint16_t*>(weight), y,
                                                                        s.hidden, s.rms_eps);
    AMK_KERNEL_TRY("rms_norm_kernel");
    return Status::ok();
  }

  /// Enqueue one whole decode step on `stream` (eagerly, or into the capture).
  Status enqueue_step() {
    const int32_t* d_token = d_scalars;
    const int32_t* d_pos = d_scalars + 1;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));  // as amk's lowering
    const int64_t rope_items = s.n_heads * (s.head_dim / 2) + s.n_kv_heads * (s.head_dim / 2) + kv_dim;
    const int attn_threads = kernels::kAttnWarps * gpu::kWarpSize;
    const int64_t lane_pairs = (s.head_dim / 2 + gpu::kWarpSize - 1) / gpu::kWarpSize;
    Status st;
    kernels::embed_kernel<<<blocks_for(s.hidden, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
        static_cast<const uint16_t*>(w.embed), d_token, h, s.hidden, s.vocab);
    AMK_KERNEL_TRY("embed_kernel");
    for (int64_t i = 0; i < s.n_layers; ++i) {
      const LayerWeights& L = w.layers[static_cast<size_t>(i)];
      uint16_t* kc = k_cache + i * s.max_seq * kv_dim;
      uint16_t* vc = v_cache + i * s.max_seq * kv_dim;
      if (!(st = rms_norm(h, L.attn_norm, xn)) || !(st = gemv(L.q, xn, q, q_dim, s.hidden, CUDA_R_16BF, 0.0f)) ||
          !(st = gemv(L.k, xn, k, kv_dim, s.hidden, CUDA_R_16BF, 0.0f)) ||
          !(st = gemv(L.v, xn, v, kv_dim, s.hidden, CUDA_R_16BF, 0.0f)))
        return st;
      kernels::rope_kv_kernel<<<blocks_for(rope_items, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
          q, k, v, w.rope_inv_freq, d_pos, kc, vc, s.n_heads, s.n_kv_heads, s.head_dim, s.max_seq);
      AMK_KERNEL_TRY("rope_kv_kernel");
      const dim3 grid(static_cast<unsigned>(s.n_heads), static_cast<unsigned>(n_splits));
      const auto split_kernel = lane_pairs <= 1   ? kernels::attention_split_kernel<1>
                                : lane_pairs <= 2 ? kernels::attention_split_kernel<2>
                                                  : kernels::attention_split_kernel<kernels::kMaxPairsPerLane>;
      split_kernel<<<grid, attn_threads, 0, stream>>>(q, kc, vc, d_pos, partial, s.n_heads / s.n_kv_heads,
                                                      s.head_dim, kv_dim, scale, n_splits);
      AMK_KERNEL_TRY("attention_split_kernel");
      kernels::attention_combine_kernel<<<static_cast<unsigned>(s.n_heads), attn_threads, 0, stream>>>(
          partial, d_pos, attn, s.head_dim, n_splits);
      AMK_KERNEL_TRY("attention_combine_kernel");
      if (!(st = gemv(L.o, attn, h, s.hidden, q_dim, CUDA_R_16BF, 1.0f)) || !(st = rms_norm(h, L.mlp_norm, xn)) ||
          !(st = gemv(L.gate, xn, gate, s.intermediate, s.hidden, CUDA_R_16BF, 0.0f)) ||
          !(st = gemv(L.up, xn, up, s.intermediate, s.hidden, CUDA_R_16BF, 0.0f)))
        return st;
      kernels::silu_mul_kernel<<<blocks_for(s.intermediate, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
          gate, up, act, s.intermediate);
      AMK_KERNEL_TRY("silu_mul_kernel");
      if (!(st = gemv(L.down, act, h, s.hidden, s.intermediate, CUDA_R_16BF, 1.0f))) return st;
    }
    if (!(st = rms_norm(h, w.final_norm, xn)) || !(st = gemv(w.lm_head, xn, logits, s.vocab, s.hidden, CUDA_R_32F, 0.0f)))
      return st;
    kernels::argmax_kernel<<<1, kernels::kNormThreads, 0, stream>>>(logits, s.vocab, d_scalars + 2);
    AMK_KERNEL_TRY("argmax_kernel");
    return Status::ok();
  }

  /// Refuse a token or position the graph cannot run, then stage both for the next replay.
  Status stage(const char* who, int32_t token, int32_t pos) {
    if (token < 0 || token >= s.vocab)
      return bad(std::string(who) + ": token " + std::to_string(token) + " is outside the vocabulary [0, " +
                 std::to_string(s.vocab) + ")");
    if (pos < 0 || pos >= s.max_seq)
      return bad(std::string(who) + ": pos " + std::to_string(pos) + " is outside the KV cache [0, " +
                 std::to_string(s.max_seq) + ") (max_seq)");
    AMK_GPU_TRY(gpu::stream_sync(stream));  // the pinned staging words are free again
    h_scalars[0] = token;
    h_scalars[1] = pos;
    AMK_GPU_TRY(gpu::memcpy_h2d_async(d_scalars, h_scalars, 2 * sizeof(int32_t), stream));
    return Status::ok();
  }
};

CublasGraphBaseline::CublasGraphBaseline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CublasGraphBaseline::~CublasGraphBaseline() = default;

Status CublasGraphBaseline::create(const LlamaShape& shape, const ModelWeights& weights,
                                   std::unique_ptr<CublasGraphBaseline>* out) {
  if (out == nullptr) return bad("CublasGraphBaseline::create: out is null");
  if (Status st = check_shape(shape); !st) return st;
  if (Status st = check_weights(shape, weights); !st) return st;
  auto impl = std::make_unique<Impl>();
  impl->s = shape;
  impl->w = weights;
  if (Status st = impl->init(); !st) return st;
  out->reset(new CublasGraphBaseline(std::move(impl)));
  return Status::ok();
}

Status CublasGraphBaseline::step(int32_t token, int32_t pos, int32_t* next_token) {
  if (next_token == nullptr) return bad("CublasGraphBaseline::step: next_token is null");
  Impl& m = *impl_;
  if (Status st = m.stage("CublasGraphBaseline::step", token, pos); !st) return st;
  AMK_GPU_TRY(cudaGraphLaunch(m.exec, m.stream));
  AMK_GPU_TRY(gpu::memcpy_d2h_async(m.h_scalars + 2, m.d_scalars + 2, sizeof(int32_t), m.stream));
  AMK_GPU_TRY(gpu::stream_sync(m.stream));
  *next_token = m.h_scalars[2];
  return Status::ok();
}

Status CublasGraphBaseline::time_steps(int32_t token, int32_t pos, int iters, std::vector<double>* ms) {
  if (ms == nullptr) return bad("CublasGraphBaseline::time_steps: ms is null");
  if (iters < 1 || iters > 1000000)
    return bad("CublasGraphBaseline::time_steps: iters must be in [1, 1000000] (got " + std::to_string(iters) + ")");
  Impl& m = *impl_;
  if (Status st = m.stage("CublasGraphBaseline::time_steps", token, pos); !st) return st;
  // iters + 1 events between back-to-back replays: event i..i+1 brackets replay i on the GPU.
  struct Events {
    std::vector<cudaEvent_t> e;
    ~Events() {
      for (cudaEvent_t x : e) (void)cudaEventDestroy(x);
    }
  } ev;
  for (int i = 0; i <= iters; ++i) {
    cudaEvent_t e = nullptr;
    AMK_GPU_TRY(cudaEventCreate(&e));
    ev.e.push_back(e);
  }
  AMK_GPU_TRY(cudaEventRecord(ev.e[0], m.stream));
  for (int i = 0; i < iters; ++i) {
    AMK_GPU_TRY(cudaGraphLaunch(m.exec, m.stream));
    AMK_GPU_TRY(cudaEventRecord(ev.e[static_cast<size_t>(i) + 1], m.stream));
  }
  AMK_GPU_TRY(gpu::stream_sync(m.stream));
  ms->assign(static_cast<size_t>(iters), 0.0);
  for (int i = 0; i < iters; ++i) {
    float t = 0.0f;
    AMK_GPU_TRY(cudaEventElapsedTime(&t, ev.e[static_cast<size_t>(i)], ev.e[static_cast<size_t>(i) + 1]));
    (*ms)[static_cast<size_t>(i)] = t;
  }
  return Status::ok();
}

Status CublasGraphBaseline::read_logits(std::vector<float>* out) {
  if (out == nullptr) return bad("CublasGraphBaseline::read_logits: out is null");
  Impl& m = *impl_;
  AMK_GPU_TRY(gpu::stream_sync(m.stream));
  out->resize(static_cast<size_t>(m.s.vocab));
  AMK_GPU_TRY(gpu::memcpy_d2h(out->data(), m.logits, out->size() * sizeof(float)));
  return Status::ok();
}

}  // namespace amk::bench
