// Where a command writes its JSON lines: --output FILE, or stdout.
#pragma once

#include <fstream>
#include <ostream>
#include <string>

namespace mogserve::cli {

class OutputFile {
 public:
  // Opens `path` for writing (truncating it); empty = stdout. When it cannot be opened, prints
  // "error: cannot open --output PATH for writing" to stderr and ok() is false.
  explicit OutputFile(const std::string& path);
  bool ok() const { return ok_; }
  std::ostream& stream();

 private:
  std::ofstream file_;
  bool to_stdout_;
  bool ok_ = true;
};

}  // namespace mogserve::cli
