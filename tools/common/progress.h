// tools/common/progress.h: a one-line progress bar on stderr for the tools (weight loading and
// generation in amk-run). Drawn only when stderr is a terminal, so logs, pipes and CI stay clean;
// the line is formatted by a pure function that the tests check.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace amk::tools {

/// How `done` is shown next to the bar.
enum class ProgressUnit { Count, Bytes };

/// "loading weights [########--------]  50%  12.0/24.0 MB  0.4 s": the label, a bar of `width`
/// cells, the percentage, done/total in `unit` and the elapsed time. `total` <= 0 shows an
/// empty bar at 0%; `done` is clamped to [0, total].
std::string progress_format(const std::string& label, int64_t done, int64_t total, ProgressUnit unit,
                            double elapsed_s, int width = 30);

/// Redraws progress_format() on stderr in place ("\r"), at most ~20 times a second, when stderr is
/// a terminal; does nothing otherwise. finish() (or the destructor) ends the line.
class ProgressBar {
 public:
  ProgressBar(std::string label, ProgressUnit unit);
  /// Force the bar on or off (tests, --no-progress); the default follows isatty(stderr).
  ProgressBar(std::string label, ProgressUnit unit, bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(int64_t done, int64_t total);
  void finish();
  bool enabled() const { return enabled_; }

 private:
  void draw(int64_t done, int64_t total);
  std::string label_;
  ProgressUnit unit_;
  bool enabled_;
  bool drawn_ = false;
  bool finished_ = false;
  int64_t last_done_ = 0, last_total_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

/// True when file descriptor 2 is a terminal.
bool stderr_is_terminal();

}  // namespace amk::tools
