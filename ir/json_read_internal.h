// ir/json_read_internal.h: private to ir/json_read*.cpp and their tests; not part of the amk_ir API.
// 1. json_tokenize: a JSON tokenizer that reports events to a JsonEvents sink without a DOM. It exists
//    because nlohmann's lexer alone reads under 300 MB/s, too slow for million-task programs. It is
//    iterative (no recursion; the sink limits depth) and accepts exactly RFC 8259 JSON (tested
//    against nlohmann::json::accept in tests/ir/json_lexer_test.cpp).
// 2. ProgramReader: the sink that fills a Program, split over json_read.cpp and json_read_values.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/program.h"
#include "ir/status.h"

namespace amk::ir::json_detail {

/// One scalar value. Views point into the text or a scratch buffer: valid only during the event.
struct Scalar {
  enum class Kind : uint8_t { Null, Bool, Int, Uint, Float, String };
  Kind kind = Kind::Null;
  bool b = false;
  int64_t i = 0;         ///< Int: any integer literal that fits int64
  uint64_t u = 0;        ///< Uint: integer literals above INT64_MAX that fit uint64
  double d = 0.0;        ///< Float: fractions, exponents, and integers beyond uint64 (may be +-inf)
  std::string_view s;    ///< String: the decoded value; Float: the literal as written

  /// The value as JSON text for messages ("1.5", "true", "\"x\"").
  std::string text() const;
  /// Int, or Uint within int64.
  bool as_int64(int64_t& out) const;
};

/// Receives the events of one JSON text in order; returning false stops the tokenizer.
class JsonEvents {
 public:
  virtual ~JsonEvents() = default;
  virtual bool on_scalar(const Scalar& v) = 0;
  /// `offset` is the byte offset of the '{' or '[' (readers use it to estimate sizes).
  virtual bool on_open(bool is_array, size_t offset) = 0;
  virtual bool on_key(std::string_view key) = 0;
  virtual bool on_close() = 0;
  /// Malformed text: `what` says what was expected and found; line and column are 1-based.
  virtual void on_syntax_error(int64_t line, int64_t column, const std::string& what) = 0;
};

/// Tokenize one JSON value followed only by whitespace. False when the text is malformed (after
/// on_syntax_error) or when the sink stopped.
bool json_tokenize(std::string_view text, JsonEvents& sink);

/// A string as a JSON literal, cut to about 64 bytes for messages.
std::string json_quoted(std::string_view s);
/// True when `key` can follow a '.' in a path (letters, digits, '_', not starting with a digit).
bool json_path_identifier(std::string_view key);
/// `path` extended by an object key: "a.b", or a["x y"] when the key is not an identifier.
std::string json_path_key(const std::string& path, std::string_view key);

// ---- The program reader: declared here so it can span json_read.cpp and json_read_values.cpp. ----

inline constexpr size_t kMaxDepth = 512;
// After this many tasks the reader extrapolates the task count from the bytes left (see reserve_tasks).
inline constexpr int64_t kTaskSample = 1024;
// Paths deeper than this are elided in the middle so that a depth error stays readable.
inline constexpr size_t kPathHead = 12;
inline constexpr size_t kPathTail = 6;

// What the frame on top of the stack is.
enum class Ctx : uint8_t {
  Root, Skip, Capture, Buffers, Buffer, Shape, Stack, StackPart, Counters, Counter, Tasks, Task,
  IdList, Waits, Wait, Params, Pages, BufferToPage, PageList, Page,
};

// What a field expects; also the text of a type error ("expected <text>, got ...").
enum class Expect : uint8_t {
  Id, Int64, Positive, Sm, String, StringOrNull, Bool, Version, Object, ObjectOrNull, AnyJson,
  Array, IdArray, IntArray, WaitArray, StackArray, ParamObject, DType, Space, Kind, Op,
};

// What a stack part must be, for type errors of "stack" elements.
inline constexpr const char* kStackPartText = "a {\"source\", \"transpose\"} object";

struct Field {
  std::string_view key;
  Expect expect;
  bool required;
};

// Field indices, in spec key order; a field's index is also its bit in Frame::seen.
enum RootField { kFIrVersion, kFAbiVersion, kFMeta, kFTarget, kFBuffers, kFCounters, kFTasks, kFPages, kFConfig, kFDecode };
enum BufferField { kBId, kBName, kBKind, kBDType, kBShape, kBSpace, kBSource, kBStack, kBRopePairs };
enum StackPartField { kSSource, kSTranspose };
enum CounterField { kCId, kCInit, kCNote };
enum TaskField { kTId, kTOp, kTInputs, kTOutputs, kTOutCounter, kTWaits, kTParams, kTSm, kTEstBytes, kTEstFlops, kTLabel };
enum WaitField { kWCounter, kWThreshold };
enum PagesField { kPBufferToPage, kPPages };
enum PageField { kPgId, kPgSpace, kPgNbytes, kPgLiveStart, kPgLiveEnd };

struct FieldTable {
  const Field* fields = nullptr;
  size_t count = 0;
};
/// The known keys of an object context (empty for lists, params and free-form contexts).
FieldTable fields_of(Ctx ctx);
/// The "expected ..." text of a type error.
std::string expect_text(Expect e);

struct Frame {
  Ctx ctx = Ctx::Root;
  bool is_array = false;
  bool slot_open = false;  ///< inside the value of the current key / element (paths name it)
  int field = -1;      ///< object: index of the current key in the ctx's field table, -1 if unknown
  int64_t count = 0;   ///< array: elements begun so far
  uint32_t seen = 0;   ///< object: known fields met so far
  int64_t aux = 0;     ///< BufferToPage: current key as an id; IdList: 0 inputs, 1 outputs; capture root: root field
  bool capture_root = false;
  std::string key;     ///< object: the current key, when it is not a known field (see path())
};

// The reader: a JsonEvents sink that fills a Program as the text streams by.
class ProgramReader final : public JsonEvents {
 public:
  explicit ProgramReader(size_t text_size) : text_size_(text_size) { frames_.resize(kMaxDepth + 2); }

  const Status& status() const { return status_; }
  Program& program() { return prog_; }

  bool on_scalar(const Scalar& v) override;
  bool on_open(bool is_array, size_t offset) override;
  bool on_key(std::string_view k) override;
  bool on_close() override;
  void on_syntax_error(int64_t line, int64_t column, const std::string& what) override;

 private:
  Frame& top() { return frames_[depth_ - 1]; }
  Frame& push(Ctx ctx, bool is_array);
  static void begin_value(Frame& f) {
    if (f.is_array) {
      ++f.count;
      f.slot_open = true;
    }
  }
  bool set_scalar(const Scalar& v);

  bool scalar_in_root(Frame& f, const Scalar& v);
  bool scalar_in_buffer(Frame& f, const Scalar& v);
  bool scalar_in_stack_part(Frame& f, const Scalar& v);
  // Checks that need the whole buffer object (its keys come in any order); `at` is its path.
  bool finish_buffer(const std::string& at);
  bool scalar_in_task(Frame& f, const Scalar& v);
  bool scalar_in_param(Frame& f, const Scalar& v);
  bool scalar_in_page(Frame& f, const Scalar& v);
  bool open_in_root(Frame& f, bool is_array, size_t offset);
  bool open_capture(nlohmann::ordered_json* node, int root_field, bool is_array);
  bool finish_capture(const Frame& f);

  // The path of the current value (top frame's current slot) or, with `levels` < depth, of an ancestor.
  std::string path(size_t levels) const;
  std::string path_here() const { return path(depth_); }
  bool fail_here(StatusCode code, const std::string& what) {
    if (status_.is_ok()) status_ = Status(code, path_here() + ": " + what);
    return false;
  }
  bool type_error(const std::string& expected, const std::string& got) {
    return fail_here(StatusCode::InvalidArgument, "expected " + expected + ", got " + got);
  }
  bool type_error(Expect e, const std::string& got) { return type_error(expect_text(e), got); }
  // The expectation of the current field of an object frame.
  static Expect field_expect(const Frame& f) { return fields_of(f.ctx).fields[f.field].expect; }

  template <typename E, typename F>
  bool enum_value(const Scalar& v, Expect e, F from_name, E& out) {
    if (v.kind == Scalar::Kind::String) {
      if (auto r = from_name(v.s)) {
        out = *r;
        return true;
      }
    }
    return type_error(e, v.text());
  }
  bool id_value(const Scalar& v, int32_t& out) {
    int64_t i = 0;
    if (!v.as_int64(i) || i < 0 || i > std::numeric_limits<int32_t>::max()) return type_error(Expect::Id, v.text());
    out = static_cast<int32_t>(i);
    return true;
  }
  bool int64_value(const Scalar& v, int64_t& out) { return v.as_int64(out) || type_error(Expect::Int64, v.text()); }
  bool string_value(const Scalar& v, std::string& out) {
    if (v.kind != Scalar::Kind::String) return type_error(Expect::String, v.text());
    out.assign(v.s);
    return true;
  }
  bool version_value(const Scalar& v, std::string& out, std::string_view current);

  void reserve_tasks(const Frame& list, size_t offset);

  size_t text_size_;
  Program prog_;
  Status status_;
  std::vector<Frame> frames_;
  size_t depth_ = 0;
  std::vector<nlohmann::ordered_json*> cap_;    ///< capture stack: the DOM node of each open Capture frame
  nlohmann::ordered_json target_json_, config_json_;
  Buffer* buf_ = nullptr;       ///< the object being filled (stable while its frame is open)
  StackPart* part_ = nullptr;
  Counter* ctr_ = nullptr;
  Task* task_ = nullptr;
  Wait* wait_ = nullptr;
  Page* page_ = nullptr;
};

}  // namespace amk::ir::json_detail
