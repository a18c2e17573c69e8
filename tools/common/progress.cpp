// tools/common/progress.cpp: the progress bar of tools/common/progress.h.
#include "tools/common/progress.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include <unistd.h>

namespace amk::tools {
namespace {

std::string amount_text(int64_t v, ProgressUnit unit) {
  char buf[32];
  if (unit == ProgressUnit::Bytes) {
    std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(v) / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  }
  return buf;
}

constexpr auto kRedrawEvery = std::chrono::milliseconds(50);

}  // namespace

std::string progress_format(const std::string& label, int64_t done, int64_t total, ProgressUnit unit,
                            double elapsed_s, int width) {
  width = std::max(width, 1);
  const int64_t clamped = total > 0 ? std::clamp<int64_t>(done, 0, total) : 0;
  const double frac = total > 0 ? static_cast<double>(clamped) / static_cast<double>(total) : 0.0;
  const int filled = static_cast<int>(frac * width);  // floor: a cell fills only when reached
  char pct[16], secs[32];
  std::snprintf(pct, sizeof pct, "%3d%%", static_cast<int>(frac * 100.0));
  std::snprintf(secs, sizeof secs, "%.1f s", std::max(0.0, elapsed_s));
  std::string line = label + " [" + std::string(static_cast<size_t>(filled), '#') +
                     std::string(static_cast<size_t>(width - filled), '-') + "] " + pct + "  " +
                     amount_text(clamped, unit) + "/" + amount_text(std::max<int64_t>(total, 0), unit);
  if (unit == ProgressUnit::Bytes) line += " MB";
  return line + "  " + secs;
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

ProgressBar::ProgressBar(std::string label, ProgressUnit unit)
    : ProgressBar(std::move(label), unit, stderr_is_terminal()) {}

ProgressBar::ProgressBar(std::string label, ProgressUnit unit, bool enabled)
    : label_(std::move(label)), unit_(unit), enabled_(enabled), start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(int64_t done, int64_t total) {
  if (!enabled_ || finished_) return;
  last_done_ = done;
  last_total_ = total;
  const auto now = std::chrono::steady_clock::now();
  // Throttle: a 1000-token run must not spend its time repainting the terminal.
  if (drawn_ && done < total && now - last_draw_ < kRedrawEvery) return;
  last_draw_ = now;
  draw(done, total);
}

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  if (!drawn_) return;
  draw(last_done_, last_total_);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

void ProgressBar::draw(int64_t done, int64_t total) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // "\r" returns to the line start; "\033[K" clears what a longer previous line left behind.
  std::fprintf(stderr, "\r%s\033[K", progress_format(label_, done, total, unit_, elapsed).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace amk::tools
