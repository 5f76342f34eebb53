// Monotonic time helpers.
#pragma once

#include <chrono>

namespace mogserve {

using SteadyClock = std::chrono::steady_clock;

inline double MillisecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
}

}  // namespace mogserve
