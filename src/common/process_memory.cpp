#include "common/process_memory.h"

#include <malloc.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace mogserve {

ProcessMemory ReadProcessMemory() {
  ProcessMemory m;
  std::ifstream f("/proc/self/status");
  std::string line;
  const auto kib = [&line](size_t prefix) {
    return static_cast<int64_t>(std::strtoll(line.c_str() + prefix, nullptr, 10)) * 1024;
  };
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) m.rss_bytes = kib(6);
    if (line.rfind("VmHWM:", 0) == 0) m.peak_rss_bytes = kib(6);
  }
  return m;
}

void ReleaseFreeHeapMemory() {
  malloc_trim(0);
}

bool ResetPeakRss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

}  // namespace mogserve
