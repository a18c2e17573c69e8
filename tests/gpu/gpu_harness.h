// tests/gpu/gpu_harness.h: helpers for the [gpu] tests (binary amk_gpu_tests, CUDA builds only):
// build small ir::Programs in C++, load them twice (one image for the CPU reference, one for the
// GPU), fill the same random inputs into both, run the tasks through instructions::cpu_execute and
// through the GPU executor, and compare every output in its dtype. Also the Session-less
// "run an image on the GPU" helper the decode tests use.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <optional>

#include "ir/program.h"
#include "loader/loader.h"
#include "schedule/decode_preset.h"
#include "tests/env_guard.h"
#include "vm/cuda/cuda_executor.h"
#include "vm/executor.h"

namespace amk::gputest {

/// FAIL (never pass, never skip) when this process has no usable CUDA device.
void require_gpu();
/// Compute capability major of the current device (9 = Hopper), 0 when it cannot be read.
int device_sm_major();
/// Streaming multiprocessors of the current device, 0 when they cannot be read.
int device_sm_count();

/// The built-in target of this device as amk-bench picks it (the h200 spec where none matches),
/// with the device's SM count: what the gpu-decode preset is lowered for in these tests, so its
/// auto choices (the MLP fold) are the ones users of this device get.
ir::GpuTarget device_target();

/// The bundled tiny Llama (tests/fixtures/tiny_llama) lowered by the gpu-decode preset `preset` for
/// this device's SMs: max_seq 256, activations / caches of `dtype`, weights of `weight_dtype`
/// (nullopt: the lowering's default). REQUIREs every step.
ir::Program lower_tiny_preset(const schedule::DecodePreset& preset, ir::DType dtype, std::optional<ir::DType> weight_dtype);

/// The kernel report of a CUDA executor made for `p` loaded with `lo` (which kernel runs it, the
/// weight ring, the streamed tasks). REQUIREs that the image loads and the executor is made.
vm::GpuKernelReport cuda_kernel_report(const ir::Program& p, const loader::LoadOptions& lo);
/// `p`'s GEMV-like tasks: GEMV_TILE, and FUSED tasks whose recipe has a GEMV in it.
int64_t count_gemv_like(const ir::Program& p);

/// `p` on the CUDA VM and on the CPU VM, both with seeded random weights (`seed`), fed the CPU's
/// greedy tokens from `first_token` for `steps` steps: every step's logits within `tol` (relative)
/// and the same token. REQUIREs every step.
void check_gpu_equals_cpu_random(const ir::Program& p, uint64_t seed, int32_t first_token, int steps, double tol);

/// A program under construction: one counter per task, tasks on explicit workers.
struct ProgramBuilder {
  ir::Program p;
  /// Add a buffer; returns its id.
  int buffer(const std::string& name, ir::BufferKind kind, ir::DType dtype, std::vector<int64_t> shape);
  /// Add a task writing counter == its id; waits are (counter, threshold) pairs.
  ir::Task& task(ir::Opcode op, std::vector<int> inputs, std::vector<int> outputs, int sm, const std::string& label,
                 std::vector<std::pair<int, int>> waits = {});
};

/// Load `p` (random weights, seed fixed; validation skipped when `skip_validation`).
std::unique_ptr<loader::ProgramImage> load(const ir::Program& p, bool skip_validation = true, int workers = 0);

/// Bytes of buffer `i` in `image`.
size_t buffer_bytes(const loader::ProgramImage& image, int i);

/// An environment variable set for the lifetime of the object, then put back as it was (the
/// executor reads its measuring knobs, AMK_RING_SLOTS, AMK_KERNEL, ..., when it is created).
using ScopedEnv = testing::EnvGuard;

/// Per-test knobs of compare_with_cpu().
struct CompareOptions {
  int32_t pos = 0;                            ///< step position
  std::vector<int> outputs;                   ///< buffers to compare (default: every task output)
  std::function<void(int, void*, size_t)> fill;  ///< custom fill for buffer i (else random in [-1, 1))
  double tol_scale = 1.0;                     ///< multiplies the dtype tolerance
  int prefetch_depth = -1;                    ///< GpuOptions::prefetch_depth
  int staged_tasks = -1;                      ///< GpuOptions::staged_tasks
  std::vector<int32_t> block_workers;         ///< GpuOptions::block_workers
  uint64_t seed = 1;
};

/// Run `p` once on the CPU reference (cpu_execute in task order) and once on the GPU from the same
/// inputs; CHECK every compared output (norm-relative error and per-element bound in its dtype;
/// NaN-poisoned pure outputs catch elements the GPU never wrote). Returns the GPU launch status.
Status compare_with_cpu(const ir::Program& p, const CompareOptions& options = {});

/// Session-less decode helper: an executor over `image` plus one launch at `pos` after writing
/// `token` into the image's decode token input; returns the logits (as f32) and the next token.
struct GpuStep {
  std::vector<float> logits;
  int32_t next_token = -1;
};
Result<GpuStep> run_image_step(vm::Executor& gpu, const loader::ProgramImage& image, int32_t token, int32_t pos);

}  // namespace amk::gputest
