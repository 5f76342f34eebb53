#include "cli/progress_bar.h"

#include <algorithm>
#include <cstdio>

namespace mogserve::cli {

ProgressBar::ProgressBar(int64_t total, std::string unit, bool enabled)
    : total_(total),
      unit_(std::move(unit)),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_ - std::chrono::seconds(1)) {}

std::string ProgressBar::Render(int64_t done, int64_t total, double elapsed_s,
                                const std::string& unit, const std::string& extra, int bar_width) {
  const double fraction = total > 0 ? std::min(1.0, static_cast<double>(done) / total) : 1.0;
  const int filled = static_cast<int>(fraction * bar_width);
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < bar_width)
    bar += '>' + std::string(static_cast<size_t>(bar_width - filled - 1), ' ');
  const double rate = elapsed_s > 0 ? done / elapsed_s : 0.0;
  char tail[160];
  if (rate > 0 && done < total) {
    const double eta_s = (total - done) / rate;
    std::snprintf(tail, sizeof(tail), " %lld/%lld %.1f %s/s ETA %.0fs",
                  static_cast<long long>(done), static_cast<long long>(total), rate, unit.c_str(),
                  eta_s);
  } else {
    std::snprintf(tail, sizeof(tail), " %lld/%lld %.1f %s/s", static_cast<long long>(done),
                  static_cast<long long>(total), rate, unit.c_str());
  }
  std::string line = "[" + bar + "]" + tail;
  if (!extra.empty()) line += "  " + extra;
  return line;
}

void ProgressBar::Draw(const std::string& extra) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r%s\033[K", Render(done_, total_, elapsed, unit_, extra, 30).c_str());
  std::fflush(stderr);
}

void ProgressBar::Update(int64_t done, const std::string& extra) {
  done_ = done;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  Draw(extra);
}

void ProgressBar::Finish(const std::string& extra) {
  if (!enabled_) return;
  Draw(extra);
  std::fputc('\n', stderr);
}

}  // namespace mogserve::cli
