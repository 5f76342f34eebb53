// A one-line progress bar with rate and ETA, redrawn on stderr at most every 100 ms.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace mogserve::cli {

class ProgressBar {
 public:
  // Draws only when `enabled` (callers pass isatty(stderr) && !quiet).
  ProgressBar(int64_t total, std::string unit, bool enabled);
  // Sets progress; `extra` is appended (e.g. "faces 12 failed 0").
  void Update(int64_t done, const std::string& extra);
  // Draws the final state and ends the line.
  void Finish(const std::string& extra);

  // The text of the bar for `done` after `elapsed_s`, width `bar_width`. Exposed for tests.
  static std::string Render(int64_t done, int64_t total, double elapsed_s, const std::string& unit,
                            const std::string& extra, int bar_width);

 private:
  void Draw(const std::string& extra);

  int64_t total_;
  int64_t done_ = 0;
  std::string unit_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace mogserve::cli
