// ir/json_read_values.cpp: the scalar values of a program (IR spec section 6): ids, enums, versions,
// params. Each value is checked for what the data model can hold (an id is a non-negative int32, a
// threshold positive, a real finite); whether a value makes sense is validate()'s job.
#include <cmath>
#include <limits>
#include <string>

#include "ir/json.h"
#include "ir/json_read_internal.h"

namespace amk::ir::json_detail {
namespace {

using ojson = nlohmann::ordered_json;

// The major component of "0.2.0"; false when it is not a run of digits.
bool version_major(std::string_view v, std::string_view& major) {
  major = v.substr(0, v.find('.'));
  if (major.empty() || major.size() > 9) return false;
  for (char c : major)
    if (c < '0' || c > '9') return false;
  return true;
}

bool same_major(std::string_view a, std::string_view b) {
  std::string_view ma, mb;
  return version_major(a, ma) && version_major(b, mb) && std::stoll(std::string(ma)) == std::stoll(std::string(mb));
}

ojson scalar_json(const Scalar& v) {
  switch (v.kind) {
    case Scalar::Kind::Null: return nullptr;
    case Scalar::Kind::Bool: return v.b;
    case Scalar::Kind::Int: return v.i;
    case Scalar::Kind::Uint: return v.u;
    case Scalar::Kind::Float: return v.d;
    case Scalar::Kind::String: return std::string(v.s);
  }
  return nullptr;
}

}  // namespace

bool ProgramReader::version_value(const Scalar& v, std::string& out, std::string_view current) {
  std::string_view major;
  if (v.kind != Scalar::Kind::String || !version_major(v.s, major)) return type_error(Expect::Version, v.text());
  if (!same_major(v.s, current)) {
    std::string_view cur_major;
    version_major(current, cur_major);
    return fail_here(StatusCode::Unsupported, "expected major version " + std::string(cur_major) +
                                                   " (this build reads " + std::string(current) + "), got " +
                                                   v.text());
  }
  out.assign(v.s);
  return true;
}

bool ProgramReader::on_scalar(const Scalar& v) {
  if (!set_scalar(v)) return false;
  top().slot_open = false;  // a syntax error after this value names the container, not this value
  return true;
}

bool ProgramReader::set_scalar(const Scalar& v) {
  if (depth_ == 0) return type_error("a JSON object", v.text());
  Frame& f = top();
  begin_value(f);
  if (v.kind == Scalar::Kind::Float && !std::isfinite(v.d)) return type_error("a finite number", v.text());
  switch (f.ctx) {
    case Ctx::Skip: return true;
    case Ctx::Capture: {
      ojson* node = cap_.back();
      if (f.is_array) node->push_back(scalar_json(v));
      else (*node)[f.key] = scalar_json(v);
      return true;
    }
    case Ctx::Root: return scalar_in_root(f, v);
    case Ctx::Buffers: return type_error("a buffer object", v.text());
    case Ctx::Counters: return type_error("a counter object", v.text());
    case Ctx::Tasks: return type_error("a task object", v.text());
    case Ctx::PageList: return type_error("a page object", v.text());
    case Ctx::Waits: return type_error("a {\"counter\", \"threshold\"} object", v.text());
    case Ctx::Buffer: return scalar_in_buffer(f, v);
    case Ctx::Stack: return type_error(kStackPartText, v.text());
    case Ctx::StackPart: return scalar_in_stack_part(f, v);
    case Ctx::Shape: {
      int64_t d = 0;
      if (!int64_value(v, d)) return false;
      buf_->shape.push_back(d);
      return true;
    }
    case Ctx::Counter:
      if (f.field == kCId) {
        int32_t id = 0;
        if (!id_value(v, id)) return false;
        ctr_->id = CounterId(id);
        return true;
      }
      if (f.field == kCInit) return int64_value(v, ctr_->init);
      if (f.field == kCNote) return string_value(v, ctr_->note);
      return true;
    case Ctx::Task: return scalar_in_task(f, v);
    case Ctx::IdList: {
      int32_t id = 0;
      if (!id_value(v, id)) return false;
      (f.aux == 0 ? task_->inputs : task_->outputs).push_back(BufferId(id));
      return true;
    }
    case Ctx::Wait:
      if (f.field == kWCounter) {
        int32_t id = 0;
        if (!id_value(v, id)) return false;
        wait_->counter = CounterId(id);
        return true;
      }
      if (f.field == kWThreshold) {
        int64_t t = 0;
        if (!v.as_int64(t) || t < 1) return type_error(Expect::Positive, v.text());
        wait_->threshold = t;
      }
      return true;
    case Ctx::Params: return scalar_in_param(f, v);
    case Ctx::Pages:
      if (f.field >= 0) return type_error(field_expect(f), v.text());
      return true;
    case Ctx::BufferToPage: {
      int32_t page = 0;
      if (!id_value(v, page)) return false;
      prog_.pages->buffer_to_page.emplace_back(BufferId(static_cast<int32_t>(f.aux)), PageId(page));
      return true;
    }
    case Ctx::Page: return scalar_in_page(f, v);
  }
  return true;
}

bool ProgramReader::scalar_in_root(Frame& f, const Scalar& v) {
  switch (f.field) {
    case kFIrVersion: return version_value(v, prog_.ir_version, kIrVersion);
    case kFAbiVersion: return version_value(v, prog_.abi_version, kAbiVersion);
    case kFMeta:
      // A null meta is read as empty rather than rejected: it carries no meaning.
      if (v.kind != Scalar::Kind::Null) return type_error(Expect::Object, v.text());
      prog_.meta = ojson::object();
      return true;
    case kFTarget:
    case kFPages:
    case kFConfig:
      if (v.kind != Scalar::Kind::Null) return type_error(Expect::ObjectOrNull, v.text());
      if (f.field == kFTarget) prog_.target.reset();
      else if (f.field == kFPages) prog_.pages.reset();
      else prog_.config.reset();
      return true;
    case kFDecode: prog_.decode = scalar_json(v); return true;
    case kFBuffers:
    case kFCounters:
    case kFTasks: return type_error(Expect::Array, v.text());
    default: return true;  // unknown top-level keys are ignored
  }
}

bool ProgramReader::scalar_in_buffer(Frame& f, const Scalar& v) {
  switch (f.field) {
    case kBId: {
      int32_t id = 0;
      if (!id_value(v, id)) return false;
      buf_->id = BufferId(id);
      return true;
    }
    case kBName: return string_value(v, buf_->name);
    case kBKind: return enum_value(v, Expect::Kind, buffer_kind_from_name, buf_->kind);
    case kBDType: return enum_value(v, Expect::DType, dtype_from_name, buf_->dtype);
    case kBShape: return type_error(Expect::IntArray, v.text());
    case kBSpace: return enum_value(v, Expect::Space, mem_space_from_name, buf_->space);
    case kBSource:
      if (v.kind == Scalar::Kind::Null) {
        buf_->source.reset();
        return true;
      }
      if (v.kind != Scalar::Kind::String) return type_error(Expect::StringOrNull, v.text());
      buf_->source = std::string(v.s);
      return true;
    case kBStack: return type_error(Expect::StackArray, v.text());
    // Any int64 is read; whether it fits the buffer (even, divides the rows) is validate()'s.
    case kBRopePairs: return int64_value(v, buf_->rope_pairs);
    default: return true;
  }
}

bool ProgramReader::scalar_in_stack_part(Frame& f, const Scalar& v) {
  switch (f.field) {
    case kSSource: return string_value(v, part_->source);
    case kSTranspose:
      if (v.kind != Scalar::Kind::Bool) return type_error(Expect::Bool, v.text());
      part_->transpose = v.b;
      return true;
    default: return true;  // unreachable: on_key refuses unknown keys of a part
  }
}

bool ProgramReader::scalar_in_task(Frame& f, const Scalar& v) {
  int32_t id = 0;
  switch (f.field) {
    case kTId:
      if (!id_value(v, id)) return false;
      task_->id = TaskId(id);
      return true;
    case kTOp: return enum_value(v, Expect::Op, opcode_from_name, task_->op);
    case kTOutCounter:
      if (!id_value(v, id)) return false;
      task_->out_counter = CounterId(id);
      return true;
    case kTSm: {
      // A negative sm is validate()'s to report (sm.range), so only the type is checked here.
      if (v.kind == Scalar::Kind::Null) {
        task_->sm.reset();
        return true;
      }
      int64_t sm = 0;
      if (!v.as_int64(sm) || sm < std::numeric_limits<int32_t>::min() || sm > std::numeric_limits<int32_t>::max())
        return type_error(Expect::Sm, v.text());
      task_->sm = static_cast<int32_t>(sm);
      return true;
    }
    case kTEstBytes: return int64_value(v, task_->est_bytes);
    case kTEstFlops: return int64_value(v, task_->est_flops);
    case kTLabel: return string_value(v, task_->label);
    case kTInputs:
    case kTOutputs:
    case kTWaits:
    case kTParams: return type_error(field_expect(f), v.text());
    default: return true;
  }
}

bool ProgramReader::scalar_in_param(Frame& f, const Scalar& v) {
  // Types are validate()'s to judge (params.type); only values a Params cannot hold are errors here.
  static const std::string kScalar = "a scalar param value (integer, finite real, string or bool)";
  switch (v.kind) {
    case Scalar::Kind::Null: return type_error(kScalar, v.text());
    case Scalar::Kind::Bool: task_->params.set(f.key, v.b); return true;
    case Scalar::Kind::Int: task_->params.set(f.key, v.i); return true;
    case Scalar::Kind::Uint: return type_error("an integer within int64", v.text());
    case Scalar::Kind::Float:
      // The tokenizer reads integer literals beyond 64 bits as reals; they are not reals here.
      if (v.s.find_first_of(".eE") == std::string_view::npos) return type_error("an integer within int64", v.text());
      task_->params.set(f.key, v.d);
      return true;
    case Scalar::Kind::String: task_->params.set(f.key, std::string(v.s)); return true;
  }
  return true;
}

bool ProgramReader::scalar_in_page(Frame& f, const Scalar& v) {
  switch (f.field) {
    case kPgId: {
      int32_t id = 0;
      if (!id_value(v, id)) return false;
      page_->id = PageId(id);
      return true;
    }
    case kPgSpace: return enum_value(v, Expect::Space, mem_space_from_name, page_->space);
    case kPgNbytes: return int64_value(v, page_->nbytes);
    case kPgLiveStart: return int64_value(v, page_->live_start);
    case kPgLiveEnd: return int64_value(v, page_->live_end);
    default: return true;
  }
}

}  // namespace amk::ir::json_detail
