// The process's resident memory, from /proc/self/status (Linux).
#pragma once

#include <cstdint>

namespace mogserve {

struct ProcessMemory {
  int64_t rss_bytes = 0;       // VmRSS: resident now
  int64_t peak_rss_bytes = 0;  // VmHWM: the most resident since start or ResetPeakRss()
};

// Zeros where /proc is unavailable.
ProcessMemory ReadProcessMemory();

// Gives the C heap's free pages back to the system (glibc malloc_trim: every arena, holes
// included). For moments after a burst of large, short-lived allocations (a warm-up, a load
// peak), which glibc otherwise keeps resident.
void ReleaseFreeHeapMemory();

// Sets the peak back to the current RSS (writes 5 to /proc/self/clear_refs); false where the
// kernel refuses.
bool ResetPeakRss();

}  // namespace mogserve
