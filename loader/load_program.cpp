// loader/load_program.cpp: the loading pipeline. Each stage is its own file; this one orders
// them and assembles the amk_program_t view:
//   validate -> structure -> decode section -> weights -> allocation -> marshal -> queues -> view
#include <algorithm>

#include "ir/validate.h"
#include "loader/allocate.h"
#include "loader/bind_weights.h"
#include "loader/check_structure.h"
#include "loader/decode_bindings.h"
#include "loader/image_storage.h"
#include "loader/marshal.h"
#include "loader/queues.h"

namespace amk::loader {
namespace {

/// ValidationFailed naming the first few errors (rule and message).
Status refuse(const ir::ValidationResult& r) {
  constexpr size_t kShown = 3;
  std::string msg = "program rejected by validate(): " + std::to_string(r.errors.size()) + " error(s)";
  for (size_t i = 0; i < r.errors.size() && i < kShown; ++i)
    msg += "\n  [" + r.errors[i].rule + "] " + r.errors[i].message;
  if (r.errors.size() > kShown) msg += "\n  ... and " + std::to_string(r.errors.size() - kShown) + " more";
  return Status(StatusCode::ValidationFailed, msg);
}

Status marshal_tables(ProgramImage& img, const WorkerQueues& queues) {
  const ir::Program& p = img.program_;
  const auto& st = *img.storage_;
  img.buffers_.assign(p.buffers.size(), amk_buffer_t{});
  for (const ir::Buffer& b : p.buffers) img.buffers_[b.id.value] = marshal_buffer(b, st.ptrs[b.id.value]);
  img.instructions_.assign(p.tasks.size(), amk_instruction_t{});
  for (const ir::Task& t : p.tasks) {
    auto ins = marshal_task(t);
    if (!ins) return ins.status();
    ins->sm = queues.worker_of[t.id.value];  // the worker that runs it, after the s % W merge
    img.instructions_[t.id.value] = *ins;
  }
  img.counters_.assign(p.counters.size(), 0u);
  img.counter_producers_ = counter_producers(p);
  img.queue_offsets_ = queues.offsets;
  img.queue_ = queues.queue;
  return Status::ok();
}

void assemble_view(ProgramImage& img, int workers) {
  img.step_ = amk_step_t{};
  img.step_.epoch = 1;
  amk_program_t& v = img.view_;
  v = amk_program_t{};
  v.buffers = img.buffers_.data();
  v.counters = img.counters_.data();
  v.counter_producers = img.counter_producers_.data();
  v.instructions = img.instructions_.data();
  v.sm_queue_offsets = img.queue_offsets_.data();
  v.sm_queue = img.queue_.data();
  v.scratch = nullptr;  // every page has its own allocation; nothing is carved from one arena
  v.scratch_bytes = 0;
  v.abort_flag = &img.abort_flag_;
  v.step = &img.step_;
  v.error = &img.error_;
  v.n_buffers = static_cast<int32_t>(img.buffers_.size());
  v.n_counters = static_cast<int32_t>(img.counters_.size());
  v.n_instructions = static_cast<int32_t>(img.instructions_.size());
  v.n_sms = workers;
}

}  // namespace

Result<std::unique_ptr<ProgramImage>> load_program(const ir::Program& program, const LoadOptions& options) {
  try {
    if (!options.unsafe_skip_validation_for_tests) {
      const ir::ValidationResult r = ir::validate(program);
      if (!r.ok || !r.errors.empty()) return refuse(r);
    }
    if (Status s = check_structure(program); !s) return s;
    auto decode = decode_bindings(program);
    if (!decode) return decode.status();
    auto queues = build_queues(program, options.workers);
    if (!queues) return queues.status();

    auto img = std::make_unique<ProgramImage>();
    img->program_ = program;
    img->decode_ = *decode;
    ProgramImage::Storage& st = *img->storage_;
    st.ptrs.assign(program.buffers.size(), nullptr);
    st.bytes.assign(program.buffers.size(), 0);
    for (const ir::Buffer& b : program.buffers) st.by_name.emplace(b.name, b.id.value);

    if (Status s = bind_weights(img->program_, options, st); !s) return s;
    if (Status s = allocate_buffers(img->program_, st); !s) return s;
    if (Status s = marshal_tables(*img, *queues); !s) return s;
    assemble_view(*img, queues->workers);
    return Result<std::unique_ptr<ProgramImage>>(std::move(img));
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::Internal, "load_program: out of host memory");
  } catch (const std::exception& e) {  // nothing crosses the library boundary (STYLE.md)
    return Status(StatusCode::Internal, std::string("load_program: unexpected exception: ") + e.what());
  }
}

}  // namespace amk::loader
