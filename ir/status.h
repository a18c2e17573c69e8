// ir/status.h: Status and Result<T>, the only error currency across amk library boundaries.
// No exception crosses a public call; third-party exceptions are caught and converted here.
#pragma once
#include <string>
#include <utility>
#include <variant>

namespace amk {

/// Broad error classes; tools map them to exit codes (see README, "Exit codes").
enum class StatusCode {
  Ok = 0,
  InvalidArgument,   ///< bad input: a file, a flag, a value
  ParseError,        ///< malformed JSON or binary header
  ValidationFailed,  ///< validate() rejected the program
  IoError,           ///< file could not be opened, read, written or mapped
  NotFound,          ///< a named thing (target, tensor) does not exist
  Unsupported,       ///< well-formed but outside what amk implements
  Timeout,           ///< a launch exceeded its watchdog deadline
  GpuRuntime,        ///< a CUDA/HIP runtime call failed
  DeviceError,       ///< the device reported an impossible state
  Internal,          ///< a bug in amk itself
};

/// Human name of a status code ("ParseError").
const char* status_code_name(StatusCode code);

/// A success flag plus a message that names the offending element.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

/// Either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}           // NOLINT: implicit by design
  Result(StatusCode code, std::string message) : v_(Status(code, std::move(message))) {}

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  /// The value; only call after checking is_ok().
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  /// The error; an ok Status when a value is held.
  Status status() const { return is_ok() ? Status::ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace amk
