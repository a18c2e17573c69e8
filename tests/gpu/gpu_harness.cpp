// tests/gpu/gpu_harness.cpp: see gpu_harness.h.
#include "gpu_harness.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "instructions/common/dtype.h"
#include "instructions/cpu_dispatch.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "schedule/schedule_config.h"
#include "targets/gpu.h"
#include "targets/registry.h"
#include "tools/bench/decode_rig.h"
#include "vm/golden_fixture.h"
#include "vm/gpu_backends.h"
#include "vm/session.h"

namespace amk::gputest {

namespace {
/// AMK_GPU_TESTS_DRY_RUN=1: build, load and run the CPU reference of every op program without a
/// device (a developer check of the test programs themselves; the GPU half is skipped loudly).
bool dry_run() {
  const char* e = std::getenv("AMK_GPU_TESTS_DRY_RUN");
  return e != nullptr && std::string(e) == "1";
}
}  // namespace

void require_gpu() {
  if (dry_run()) {
    WARN("AMK_GPU_TESTS_DRY_RUN=1: the GPU half of this test is skipped");
    return;
  }
  std::string why;
  if (!vm::cuda_available(&why)) FAIL("[gpu] test needs a CUDA device and there is none: " << why);
}

namespace {
/// The current device's properties; false when they cannot be read.
bool current_props(gpu::DeviceProps* p) {
  int dev = 0;
  return gpu::get_device(&dev) == gpu::kSuccess && gpu::device_props(p, dev) == gpu::kSuccess;
}
}  // namespace

int device_sm_major() {
  gpu::DeviceProps p{};
  return current_props(&p) ? p.major : 0;
}

int device_sm_count() {
  gpu::DeviceProps p{};
  return current_props(&p) ? p.multiProcessorCount : 0;
}

ir::GpuTarget device_target() {
  auto known = bench::resolve_bench_target("auto", vm::cuda_device_name());
  ir::GpuTarget t = known.is_ok() ? *known : *targets::target_find("h200");
  t.num_sms = device_sm_count();
  return t;
}

ir::Program lower_tiny_preset(const schedule::DecodePreset& preset, ir::DType dtype, std::optional<ir::DType> weight_dtype) {
  auto model = schedule::model_config_load(std::string(AMK_SOURCE_DIR) + "/tests/fixtures/tiny_llama/config.json");
  REQUIRE(model.is_ok());
  auto cfg = schedule::schedule_config_from_json_text(schedule::decode_preset_json(*model, device_target(), 256, preset, dtype),
                                                      "gpu-decode preset");
  INFO(cfg.status().message());
  REQUIRE(cfg.is_ok());
  schedule::LowerOptions lo;
  lo.max_seq = 256;
  lo.dtype = dtype;
  lo.weight_dtype = weight_dtype;
  auto p = schedule::lower(*model, *cfg, *targets::target_find("h100"), lo);
  INFO(p.status().message());
  REQUIRE(p.is_ok());
  return std::move(*p);
}

vm::GpuKernelReport cuda_kernel_report(const ir::Program& p, const loader::LoadOptions& lo) {
  auto image = loader::load_program(p, lo);
  INFO(image.status().message());
  REQUIRE(image.is_ok());
  auto ex = vm::make_cuda_executor(**image);
  INFO(ex.status().message());
  REQUIRE(ex.is_ok());
  const vm::GpuKernelReport* rep = vm::gpu_kernel_report(**ex);
  REQUIRE(rep != nullptr);
  return *rep;
}

int64_t count_gemv_like(const ir::Program& p) {
  return std::count_if(p.tasks.begin(), p.tasks.end(), [](const ir::Task& t) {
    const std::optional<std::string> recipe = t.params.get_string("recipe");
    return t.op == ir::Opcode::GemvTile ||
           (t.op == ir::Opcode::Fused && recipe.has_value() && recipe->find("GEMV") != std::string::npos);
  });
}

void check_gpu_equals_cpu_random(const ir::Program& p, uint64_t seed, int32_t first_token, int steps, double tol) {
  std::unique_ptr<Session> sessions[2];
  const Backend backends[2] = {Backend::Cuda, Backend::Cpu};
  for (int i = 0; i < 2; ++i) {
    SessionOptions o;
    o.random_weights_seed = seed;
    o.backend = backends[i];
    auto s = Session::create(p, o);
    INFO(s.status().message());
    REQUIRE(s.is_ok());
    sessions[i] = std::move(*s);
  }
  int32_t token = first_token;
  for (int step = 0; step < steps; ++step) {
    auto a = sessions[0]->step(token);
    auto b = sessions[1]->step(token);
    REQUIRE(a.is_ok());
    REQUIRE(b.is_ok());
    const double err = testing::relative_error(a->logits, b->logits.data(), b->logits.size());
    INFO("step " << step << " relative error " << err);
    CHECK(err <= tol);
    CHECK(a->token == b->token);
    token = b->token;
  }
}

int ProgramBuilder::buffer(const std::string& name, ir::BufferKind kind, ir::DType dtype, std::vector<int64_t> shape) {
  ir::Buffer b;
  b.id = ir::BufferId(static_cast<int32_t>(p.buffers.size()));
  b.name = name;
  b.kind = kind;
  b.dtype = dtype;
  b.shape = std::move(shape);
  if (kind == ir::BufferKind::Weight || kind == ir::BufferKind::Const) b.source = name;
  p.buffers.push_back(b);
  return b.id.value;
}

ir::Task& ProgramBuilder::task(ir::Opcode op, std::vector<int> inputs, std::vector<int> outputs, int sm,
                               const std::string& label, std::vector<std::pair<int, int>> waits) {
  ir::Task t;
  t.id = ir::TaskId(static_cast<int32_t>(p.tasks.size()));
  t.op = op;
  for (int i : inputs) t.inputs.push_back(ir::BufferId(i));
  for (int o : outputs) t.outputs.push_back(ir::BufferId(o));
  t.out_counter = ir::CounterId(t.id.value);
  p.counters.push_back(ir::Counter{ir::CounterId(t.id.value), 0, label});
  for (auto [c, th] : waits) t.waits.push_back(ir::Wait{ir::CounterId(c), th});
  t.sm = sm;
  t.label = label;
  p.tasks.push_back(t);
  return p.tasks.back();
}

std::unique_ptr<loader::ProgramImage> load(const ir::Program& p, bool skip_validation, int workers) {
  loader::LoadOptions o;
  o.random_weights_seed = 11;
  o.unsafe_skip_validation_for_tests = skip_validation;
  o.workers = workers;
  auto image = loader::load_program(p, o);
  INFO("load_program: " << image.status().message());
  REQUIRE(image.is_ok());
  return std::move(*image);
}

size_t buffer_bytes(const loader::ProgramImage& image, int i) {
  const amk_buffer_t& b = image.view().buffers[i];
  return static_cast<size_t>(ir::dtype_nbytes(static_cast<ir::DType>(b.dtype), b.numel));
}

namespace {

void random_fill(const amk_buffer_t& b, void* dst, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < b.numel; ++i) {
    const float v = u(rng);
    switch (b.dtype) {
      case AMK_DTYPE_F32: static_cast<float*>(dst)[i] = v; break;
      case AMK_DTYPE_F16: static_cast<uint16_t*>(dst)[i] = instructions::f32_to_f16(v); break;
      case AMK_DTYPE_BF16: static_cast<uint16_t*>(dst)[i] = instructions::f32_to_bf16(v); break;
      case AMK_DTYPE_I32: static_cast<int32_t*>(dst)[i] = static_cast<int32_t>(rng() % 7); break;
      case AMK_DTYPE_I8: static_cast<int8_t*>(dst)[i] = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127); break;
      case AMK_DTYPE_I4:
        if ((i & 1) == 0) static_cast<uint8_t*>(dst)[i >> 1] = static_cast<uint8_t>(rng() & 0xff);
        break;
      default: break;
    }
  }
}

double dtype_tol(int32_t dt) {
  switch (dt) {
    case AMK_DTYPE_F32: return 2e-5;
    case AMK_DTYPE_F16: return 2e-3;
    case AMK_DTYPE_BF16: return 1.6e-2;
    default: return 0.0;  // integers: exact
  }
}

}  // namespace

Status compare_with_cpu(const ir::Program& p, const CompareOptions& opt) {
  auto cpu = load(p);
  auto gimg = load(p);
  const amk_program_t& cv = cpu->view();
  std::vector<int> outputs = opt.outputs;
  std::vector<bool> is_output(p.buffers.size(), false), is_input(p.buffers.size(), false);
  for (const ir::Task& t : p.tasks) {
    for (auto b : t.outputs) is_output[static_cast<size_t>(b.value)] = true;
    for (auto b : t.inputs) is_input[static_cast<size_t>(b.value)] = true;
  }
  if (outputs.empty())
    for (size_t i = 0; i < p.buffers.size(); ++i)
      if (is_output[i]) outputs.push_back(static_cast<int>(i));

  if (dry_run()) {
    cpu->view().step->pos = opt.pos;
    std::mt19937_64 rng(opt.seed);
    for (size_t i = 0; i < p.buffers.size(); ++i) {
      if (!is_input[i] || p.buffers[i].kind == ir::BufferKind::Weight) continue;
      const size_t nb = buffer_bytes(*cpu, static_cast<int>(i));
      if (opt.fill) opt.fill(static_cast<int>(i), cv.buffers[i].ptr, nb);
      else random_fill(cv.buffers[i], cv.buffers[i].ptr, rng);
    }
    for (int32_t t = 0; t < cv.n_instructions; ++t) {
      const int32_t rc = instructions::cpu_execute(cv, cv.instructions[t]);
      INFO("CPU reference of task " << t << " returned " << instructions::device_error_name(rc));
      REQUIRE(rc == AMK_DEVERR_NONE);
    }
    return Status::ok();
  }
  vm::GpuOptions go;
  go.prefetch_depth = opt.prefetch_depth;
  go.staged_tasks = opt.staged_tasks;
  go.block_workers = opt.block_workers;
  auto gpu = vm::make_cuda_executor(*gimg, go);
  INFO("make_cuda_executor: " << gpu.status().message());
  REQUIRE(gpu.is_ok());
  if (const auto* rep = vm::gpu_kernel_report(**gpu)) UNSCOPED_INFO("kernel: " << rep->summary());

  // Same inputs on both sides; pure float outputs poisoned with NaN bytes on the GPU (integer
  // outputs stay zero on both sides: an I4 output's spare nibble must match the CPU's).
  std::mt19937_64 rng(opt.seed);
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const ir::BufferKind kind = p.buffers[i].kind;
    if (kind == ir::BufferKind::Weight || kind == ir::BufferKind::Const) continue;
    const size_t nb = buffer_bytes(*cpu, static_cast<int>(i));
    std::vector<uint8_t> data(nb, 0);
    if (is_input[i]) {
      if (opt.fill) opt.fill(static_cast<int>(i), data.data(), nb);
      else random_fill(cv.buffers[i], data.data(), rng);
      std::memcpy(cv.buffers[i].ptr, data.data(), nb);
      REQUIRE((*gpu)->write_buffer(static_cast<int32_t>(i), data.data(), nb).is_ok());
    } else if (is_output[i] && instructions::dtype_is_float(cv.buffers[i].dtype)) {
      std::vector<uint8_t> poison(nb, 0xff);
      REQUIRE((*gpu)->write_buffer(static_cast<int32_t>(i), poison.data(), nb).is_ok());
    }
  }

  // CPU reference: every task in id order (test programs list producers first).
  cpu->view().step->pos = opt.pos;
  for (int32_t t = 0; t < cv.n_instructions; ++t) {
    const int32_t rc = instructions::cpu_execute(cv, cv.instructions[t]);
    INFO("CPU reference of task " << t << " returned " << instructions::device_error_name(rc));
    REQUIRE(rc == AMK_DEVERR_NONE);
  }

  vm::LaunchOptions lo;
  lo.deadline = std::chrono::milliseconds(10000);
  Status st = (*gpu)->launch(opt.pos, lo, nullptr);
  if (!st) return st;

  for (int b : outputs) {
    const amk_buffer_t& cb = cv.buffers[b];
    const size_t nb = buffer_bytes(*cpu, b);
    std::vector<uint8_t> got(nb);
    REQUIRE((*gpu)->read_buffer(b, got.data(), nb).is_ok());
    const double tol = dtype_tol(cb.dtype) * opt.tol_scale;
    if (!instructions::dtype_is_float(cb.dtype)) {
      int bad = 0;
      for (size_t i = 0; i < nb && bad < 10; ++i) {
        if (got[i] != static_cast<const uint8_t*>(cb.ptr)[i]) {
          ++bad;
          FAIL_CHECK("buffer " << b << " \"" << p.buffers[b].name << "\" byte " << i << ": expected "
                               << int(static_cast<const uint8_t*>(cb.ptr)[i]) << " got " << int(got[i]));
        }
      }
      continue;
    }
    double num = 0.0, den = 0.0, ref_max = 0.0;
    for (int64_t i = 0; i < cb.numel; ++i) {
      const double r = instructions::load_elem(cb.ptr, cb.dtype, i);
      if (std::isfinite(r)) ref_max = std::max(ref_max, std::fabs(r));
    }
    int bad = 0;
    for (int64_t i = 0; i < cb.numel; ++i) {
      const double r = instructions::load_elem(cb.ptr, cb.dtype, i);
      const double g = instructions::load_elem(got.data(), cb.dtype, i);
      if (std::isnan(r) && std::isnan(g)) continue;
      if (std::isinf(r) && r == g) continue;
      num += (g - r) * (g - r);
      den += r * r;
      const double bound = 4.0 * tol * (std::fabs(r) + 0.05 * ref_max) + 1e-30;
      if (!(std::fabs(g - r) <= bound) && bad < 10) {
        ++bad;
        FAIL_CHECK("buffer " << b << " \"" << p.buffers[b].name << "\" element " << i << ": expected " << r
                             << " got " << g << " (bound " << bound << ")");
      }
    }
    const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    INFO("buffer " << b << " \"" << p.buffers[b].name << "\": ||gpu - cpu|| / ||cpu|| = " << rel);
    CHECK(rel <= tol);
  }
  return Status::ok();
}

Result<GpuStep> run_image_step(vm::Executor& gpu, const loader::ProgramImage& image, int32_t token, int32_t pos) {
  const loader::DecodeBindings& d = image.decode();
  if (d.token_input >= 0) {
    Status s = gpu.write_buffer(d.token_input, &token, sizeof token);
    if (!s) return s;
  }
  Status s = gpu.launch(pos, {}, nullptr);
  if (!s) return s;
  GpuStep out;
  if (d.logits >= 0) {
    const amk_buffer_t& b = image.view().buffers[d.logits];
    std::vector<uint8_t> raw(buffer_bytes(image, d.logits));
    s = gpu.read_buffer(d.logits, raw.data(), raw.size());
    if (!s) return s;
    out.logits.resize(static_cast<size_t>(b.numel));
    for (int64_t i = 0; i < b.numel; ++i) out.logits[static_cast<size_t>(i)] = instructions::load_elem(raw.data(), b.dtype, i);
  }
  if (d.next_token >= 0) {
    s = gpu.read_buffer(d.next_token, &out.next_token, sizeof out.next_token);
    if (!s) return s;
  }
  return out;
}

}  // namespace amk::gputest
