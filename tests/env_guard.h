// tests/env_guard.h: one environment variable set (or unset) for a scope, then put back as it was:
// the preset's switches that read the environment when a schedule is made (AMK_ATTENTION_IN_O,
// AMK_ROPE_IN_QKV: schedule/decode_preset.h) and the executor's measuring knobs ([gpu] tests).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace amk::testing {

class EnvGuard {
 public:
  /// Sets `name` to `value`, or unsets it when `value` is nullptr.
  EnvGuard(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    set(value);
  }
  ~EnvGuard() { set(old_ ? old_->c_str() : nullptr); }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  void set(const char* value) const {
    if (value) ::setenv(name_.c_str(), value, 1);
    else ::unsetenv(name_.c_str());
  }
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace amk::testing
