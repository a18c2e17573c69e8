// ir/json_read.cpp: program_from_json_text (IR spec section 6) as a streaming state machine.
// json_tokenize's events fill Program directly, so a million-task file never becomes a DOM; only the
// small free-form parts (meta, decode, target, config) are captured as DOM. The tokenizer is
// iterative and this reader caps nesting at kMaxDepth, so hostile input cannot overflow the stack.
// This file holds the structure (keys, containers, paths); json_read_values.cpp the scalar values.
#include <algorithm>
#include <array>
#include <limits>
#include <string>

#include "ir/json.h"
#include "ir/json_read_internal.h"

namespace amk::ir {
namespace json_detail {
namespace {

using ojson = nlohmann::ordered_json;

// Field tables, in spec key order. The index of a field is its bit in Frame::seen.
constexpr std::array<Field, 10> kRootFields = {{
    {"ir_version", Expect::Version, false}, {"abi_version", Expect::Version, false},
    {"meta", Expect::Object, false},        {"target", Expect::ObjectOrNull, false},
    {"buffers", Expect::Array, true},       {"counters", Expect::Array, true},
    {"tasks", Expect::Array, true},         {"pages", Expect::ObjectOrNull, false},
    {"config", Expect::ObjectOrNull, false}, {"decode", Expect::AnyJson, false},
}};
constexpr std::array<Field, 9> kBufferFields = {{
    {"id", Expect::Id, true},      {"name", Expect::String, true},     {"kind", Expect::Kind, true},
    {"dtype", Expect::DType, true}, {"shape", Expect::IntArray, true}, {"space", Expect::Space, false},
    {"source", Expect::StringOrNull, false}, {"stack", Expect::StackArray, false},
    {"rope_pairs", Expect::Int64, false},
}};
constexpr std::array<Field, 2> kStackPartFields = {{
    {"source", Expect::String, true}, {"transpose", Expect::Bool, false},
}};
constexpr std::array<Field, 3> kCounterFields = {{
    {"id", Expect::Id, true}, {"init", Expect::Int64, false}, {"note", Expect::String, false},
}};
constexpr std::array<Field, 11> kTaskFields = {{
    {"id", Expect::Id, true},           {"op", Expect::Op, true},
    {"inputs", Expect::IdArray, true},  {"outputs", Expect::IdArray, true},
    {"out_counter", Expect::Id, true},  {"waits", Expect::WaitArray, false},
    {"params", Expect::ParamObject, false}, {"sm", Expect::Sm, false},
    {"est_bytes", Expect::Int64, false}, {"est_flops", Expect::Int64, false},
    {"label", Expect::String, false},
}};
constexpr std::array<Field, 2> kWaitFields = {{
    {"counter", Expect::Id, true}, {"threshold", Expect::Positive, true},
}};
constexpr std::array<Field, 2> kPagesFields = {{
    {"buffer_to_page", Expect::Object, true}, {"pages", Expect::Array, true},
}};
constexpr std::array<Field, 5> kPageFields = {{
    {"id", Expect::Id, true},           {"space", Expect::Space, true},    {"nbytes", Expect::Int64, true},
    {"live_start", Expect::Int64, false}, {"live_end", Expect::Int64, false},
}};

template <size_t N>
constexpr FieldTable table_of(const std::array<Field, N>& a) { return {a.data(), N}; }

// Strict decimal integer, as Python's int() of a key written by json.dumps.
bool parse_int_key(std::string_view s, int64_t& out) {
  size_t i = (!s.empty() && s[0] == '-') ? 1 : 0;
  if (i == s.size()) return false;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const int d = s[i] - '0';
    if (v > (std::numeric_limits<int64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  out = s[0] == '-' ? -v : v;
  return true;
}

}  // namespace

FieldTable fields_of(Ctx ctx) {
  switch (ctx) {
    case Ctx::Root: return table_of(kRootFields);
    case Ctx::Buffer: return table_of(kBufferFields);
    case Ctx::StackPart: return table_of(kStackPartFields);
    case Ctx::Counter: return table_of(kCounterFields);
    case Ctx::Task: return table_of(kTaskFields);
    case Ctx::Wait: return table_of(kWaitFields);
    case Ctx::Pages: return table_of(kPagesFields);
    case Ctx::Page: return table_of(kPageFields);
    default: return {};
  }
}

namespace {

template <typename F>
std::string name_list(int count, F name_of) {
  std::string s;
  for (int i = 0; i < count; ++i) {
    if (i > 0) s += ", ";
    s += name_of(i);
  }
  return s;
}

}  // namespace

std::string expect_text(Expect e) {
  switch (e) {
    case Expect::Id: return "a non-negative int32 id";
    case Expect::Int64: return "an int64 integer";
    case Expect::Positive: return "a positive integer";
    case Expect::Sm: return "an int32 SM index or null";
    case Expect::String: return "a string";
    case Expect::StringOrNull: return "a string or null";
    case Expect::Bool: return "a bool";
    case Expect::Version: return "a version string like \"" + std::string(kIrVersion) + "\"";
    case Expect::Object: return "an object";
    case Expect::ObjectOrNull: return "an object or null";
    case Expect::AnyJson: return "any JSON value";
    case Expect::Array: return "an array";
    case Expect::IdArray: return "an array of non-negative int32 ids";
    case Expect::IntArray: return "an array of int64 integers";
    case Expect::WaitArray: return "an array of {\"counter\", \"threshold\"} objects";
    case Expect::StackArray: return "a non-empty array of {\"source\", \"transpose\"} objects";
    case Expect::ParamObject: return "an object of scalar params";
    case Expect::DType:
      return "a dtype name (" + name_list(kDTypeCount, [](int i) { return dtype_name(static_cast<DType>(i)); }) + ")";
    case Expect::Space:
      return "a memory space name (" +
             name_list(kMemSpaceCount, [](int i) { return mem_space_name(static_cast<MemSpace>(i)); }) + ")";
    case Expect::Kind:
      return "a buffer kind name (" +
             name_list(kBufferKindCount, [](int i) { return buffer_kind_name(static_cast<BufferKind>(i)); }) + ")";
    case Expect::Op:
      return "an opcode name (" + name_list(kOpcodeCount, [](int i) { return opcode_name(static_cast<Opcode>(i)); }) +
             ")";
  }
  return "?";
}

Frame& ProgramReader::push(Ctx ctx, bool is_array) {
  Frame& f = frames_[depth_++];
  f.ctx = ctx;
  f.is_array = is_array;
  f.slot_open = false;
  f.field = -1;
  f.count = 0;
  f.seen = 0;
  f.aux = 0;
  f.capture_root = false;
  f.key.clear();
  return f;
}

std::string ProgramReader::path(size_t levels) const {
  std::vector<std::string> segs;
  for (size_t i = 0; i < levels; ++i) {
    const Frame& f = frames_[i];
    if (f.is_array) {
      if (f.slot_open) segs.push_back("[" + std::to_string(f.count - 1) + "]");
    } else if (f.slot_open) {
      const std::string key = f.field >= 0 ? std::string(fields_of(f.ctx).fields[f.field].key) : f.key;
      segs.push_back(json_detail::json_path_identifier(key) ? "." + key : "[" + json_quoted(key) + "]");
    }
  }
  std::string out;
  for (size_t i = 0; i < segs.size(); ++i) {
    if (segs.size() > kPathHead + kPathTail && i == kPathHead) {
      out += "[...]";
      i = segs.size() - kPathTail;
    }
    out += segs[i];
  }
  if (!out.empty() && out[0] == '.') out.erase(0, 1);
  return out.empty() ? "(root)" : out;
}

bool ProgramReader::on_key(std::string_view k) {
  Frame& f = top();
  f.slot_open = true;
  switch (f.ctx) {
    case Ctx::Skip:
    case Ctx::Capture:
    case Ctx::Params:
      f.key = k;
      return true;
    case Ctx::BufferToPage: {
      f.key = k;
      int64_t id = -1;
      if (!parse_int_key(k, id) || id < 0 || id > std::numeric_limits<int32_t>::max())
        return type_error("a non-negative int32 buffer id as the key", json_quoted(k));
      f.aux = id;
      return true;
    }
    default: break;
  }
  const FieldTable t = fields_of(f.ctx);
  f.field = -1;
  for (size_t i = 0; i < t.count; ++i) {
    if (t.fields[i].key == k) {
      f.field = static_cast<int>(i);
      break;
    }
  }
  if (f.field < 0) {
    f.key = k;  // a known key is not copied: path() takes it from the field table
    // A stack part is new and small: a misspelt "transpose" must not silently mean false.
    if (f.ctx == Ctx::StackPart)
      return fail_here(StatusCode::InvalidArgument, "unknown key (a stack part has \"source\" and \"transpose\")");
    return true;
  }
  const uint32_t bit = 1u << f.field;
  if (f.seen & bit) return fail_here(StatusCode::InvalidArgument, "duplicate key");
  f.seen |= bit;
  return true;
}

void ProgramReader::on_syntax_error(int64_t line, int64_t column, const std::string& what) {
  fail_here(StatusCode::ParseError,
            "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what);
}

bool ProgramReader::open_capture(ojson* node, int root_field, bool is_array) {
  *node = is_array ? ojson::array() : ojson::object();
  cap_.push_back(node);
  Frame& nf = push(Ctx::Capture, is_array);
  nf.capture_root = root_field >= 0;
  nf.aux = root_field;
  return true;
}

bool ProgramReader::open_in_root(Frame& f, bool is_array, size_t offset) {
  const char* got = is_array ? "an array" : "an object";
  switch (f.field) {
    case kFMeta:
      if (is_array) return type_error(Expect::Object, got);
      return open_capture(&prog_.meta, kFMeta, false);
    case kFDecode: return open_capture(&prog_.decode, kFDecode, is_array);
    case kFTarget:
      if (is_array) return type_error(Expect::ObjectOrNull, got);
      return open_capture(&target_json_, kFTarget, false);
    case kFConfig:
      if (is_array) return type_error(Expect::ObjectOrNull, got);
      return open_capture(&config_json_, kFConfig, false);
    case kFPages:
      if (is_array) return type_error(Expect::ObjectOrNull, got);
      prog_.pages.emplace();
      push(Ctx::Pages, false);
      return true;
    case kFBuffers:
    case kFCounters:
    case kFTasks: {
      if (!is_array) return type_error(Expect::Array, got);
      const Ctx c = f.field == kFBuffers ? Ctx::Buffers : f.field == kFCounters ? Ctx::Counters : Ctx::Tasks;
      // A repeated key is rejected in on_key(), so each list is filled once.
      push(c, true).aux = static_cast<int64_t>(offset);  // where the list starts, for reserve_tasks
      return true;
    }
    case kFIrVersion:
    case kFAbiVersion: return type_error(Expect::Version, got);
    default: push(Ctx::Skip, is_array); return true;
  }
}

bool ProgramReader::on_open(bool is_array, size_t offset) {
  const char* got = is_array ? "an array" : "an object";
  if (depth_ == 0) {
    if (is_array) return type_error("a JSON object", got);
    push(Ctx::Root, false);
    return true;
  }
  Frame& f = top();
  begin_value(f);
  if (depth_ >= kMaxDepth)
    return fail_here(StatusCode::ParseError, "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  // An object expected where an array was found (or the reverse) is a type error of the field.
  auto want = [&](bool want_array, Ctx next) {
    if (is_array != want_array) return type_error(field_expect(f), got);
    push(next, is_array);
    return true;
  };
  switch (f.ctx) {
    case Ctx::Skip: push(Ctx::Skip, is_array); return true;
    case Ctx::Capture: {
      ojson* parent = cap_.back();
      ojson child = is_array ? ojson::array() : ojson::object();
      ojson* node = nullptr;
      if (f.is_array) {
        parent->push_back(std::move(child));
        node = &parent->back();
      } else {
        node = &((*parent)[f.key] = std::move(child));
      }
      cap_.push_back(node);
      push(Ctx::Capture, is_array);
      return true;
    }
    case Ctx::Root: return open_in_root(f, is_array, offset);
    case Ctx::Buffers:
      if (is_array) return type_error("a buffer object", got);
      buf_ = &prog_.buffers.emplace_back();
      push(Ctx::Buffer, false);
      return true;
    case Ctx::Counters:
      if (is_array) return type_error("a counter object", got);
      ctr_ = &prog_.counters.emplace_back();
      push(Ctx::Counter, false);
      return true;
    case Ctx::Tasks:
      if (is_array) return type_error("a task object", got);
      if (f.count == kTaskSample + 1) reserve_tasks(f, offset);
      task_ = &prog_.tasks.emplace_back();
      push(Ctx::Task, false);
      return true;
    case Ctx::PageList:
      if (is_array) return type_error("a page object", got);
      page_ = &prog_.pages->pages.emplace_back();
      push(Ctx::Page, false);
      return true;
    case Ctx::Waits:
      if (is_array) return type_error("a {\"counter\", \"threshold\"} object", got);
      wait_ = &task_->waits.emplace_back();
      push(Ctx::Wait, false);
      return true;
    case Ctx::Buffer:
      switch (f.field) {
        case -1: break;
        case kBShape: return want(true, Ctx::Shape);
        case kBStack: return want(true, Ctx::Stack);
        default: return type_error(field_expect(f), got);
      }
      break;
    case Ctx::Stack:
      if (is_array) return type_error(kStackPartText, got);
      part_ = &buf_->stack.emplace_back();
      push(Ctx::StackPart, false);
      return true;
    case Ctx::StackPart:
      if (f.field >= 0) return type_error(field_expect(f), got);
      break;
    case Ctx::Task:
      switch (f.field) {
        case -1: break;
        case kTInputs:
        case kTOutputs:
          if (!want(true, Ctx::IdList)) return false;
          top().aux = f.field == kTInputs ? 0 : 1;
          return true;
        case kTWaits: return want(true, Ctx::Waits);
        case kTParams: return want(false, Ctx::Params);
        default: return type_error(field_expect(f), got);
      }
      break;
    case Ctx::Pages:
      if (f.field == kPBufferToPage) return want(false, Ctx::BufferToPage);
      if (f.field == kPPages) return want(true, Ctx::PageList);
      break;
    case Ctx::Counter:
    case Ctx::Wait:
    case Ctx::Page:
      if (f.field >= 0) return type_error(field_expect(f), got);
      break;
    case Ctx::Shape: return type_error(Expect::Int64, got);
    case Ctx::IdList: return type_error(Expect::Id, got);
    case Ctx::Params: return type_error("a scalar param value (integer, finite real, string or bool)", got);
    case Ctx::BufferToPage: return type_error("a non-negative int32 page id", got);
  }
  push(Ctx::Skip, is_array);  // the value of an unknown key: ignored
  return true;
}

// Growing a vector of a million tasks copies it ~20 times and faults in twice its final size, which
// dominates a large load. The first tasks show how many bytes a task takes in this file; the rest of
// the text bounds how many can follow. Capped at one task per 64 bytes left, so odd files cannot
// make it reserve much more than their own size.
void ProgramReader::reserve_tasks(const Frame& list, size_t offset) {
  const size_t per_task = (offset - static_cast<size_t>(list.aux)) / static_cast<size_t>(kTaskSample);
  const size_t left = text_size_ > offset ? text_size_ - offset : 0;
  if (per_task == 0) return;
  const size_t more = std::min(left / per_task + left / per_task / 32, left / 64);
  prog_.tasks.reserve(prog_.tasks.size() + more + 1);
}

bool ProgramReader::finish_capture(const Frame& f) {
  if (f.aux == kFTarget) {
    Result<GpuTarget> t = gpu_target_from_json(nlohmann::json(target_json_), "target");
    if (!t) {
      status_ = t.status();
      return false;
    }
    prog_.target = std::move(*t);
  } else if (f.aux == kFConfig) {
    Result<ScheduleConfig> c = schedule_config_from_json(nlohmann::json(config_json_), "config");
    if (!c) {
      status_ = c.status();
      return false;
    }
    prog_.config = std::move(*c);
  }
  return true;
}

// "source" may come before or after "stack", and "kind" anywhere, so these wait for the whole object.
bool ProgramReader::finish_buffer(const std::string& at) {
  if (!buf_->stacked()) return true;
  if (buf_->source) {
    status_ = Status(StatusCode::InvalidArgument, at + ": \"source\" and \"stack\" are both set; a stacked buffer "
                                                       "takes its tensors from \"stack\" alone (\"source\": null)");
    return false;
  }
  if (buf_->kind != BufferKind::Weight && buf_->kind != BufferKind::Const) {
    const std::string kind(buffer_kind_name(buf_->kind));
    status_ = Status(StatusCode::InvalidArgument,
                     at + ".stack: only a WEIGHT or CONST buffer may be stacked, this one is " + kind);
    return false;
  }
  return true;
}

bool ProgramReader::on_close() {
  Frame& f = top();
  const FieldTable t = fields_of(f.ctx);
  for (size_t i = 0; i < t.count; ++i) {
    if (t.fields[i].required && !(f.seen & (1u << i))) {
      if (status_.is_ok())
        status_ = Status(StatusCode::InvalidArgument,
                         path(depth_ - 1) + ": missing required key \"" + std::string(t.fields[i].key) + "\"");
      return false;
    }
  }
  if (f.ctx == Ctx::Capture) {
    cap_.pop_back();
    if (f.capture_root && !finish_capture(f)) return false;
  }
  if (f.ctx == Ctx::Stack && f.count == 0) {
    if (status_.is_ok())
      status_ = Status(StatusCode::InvalidArgument,
                       path(depth_ - 1) + ": expected " + expect_text(Expect::StackArray) + ", got an empty array");
    return false;
  }
  if (f.ctx == Ctx::Buffer && !finish_buffer(path(depth_ - 1))) return false;
  --depth_;
  if (depth_ > 0) top().slot_open = false;  // a syntax error after this value names the container
  return true;
}

}  // namespace json_detail

Result<Program> program_from_json_text(std::string_view text) {
  try {
    json_detail::ProgramReader reader(text.size());
    const bool ok = json_detail::json_tokenize(text, reader);
    if (!reader.status().is_ok()) return reader.status();
    if (!ok) return Status(StatusCode::Internal, "(root): the reader stopped without an error");
    return std::move(reader.program());
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::Internal, "(root): out of memory while reading the program");
  } catch (const std::exception& e) {
    return Status(StatusCode::Internal, std::string("(root): cannot read the program: ") + e.what());
  }
}

}  // namespace amk::ir
