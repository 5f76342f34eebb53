#include "cli/output_file.h"

#include <iostream>

namespace mogserve::cli {

OutputFile::OutputFile(const std::string& path) : to_stdout_(path.empty()) {
  if (to_stdout_) return;
  file_.open(path);
  if (!file_) {
    std::cerr << "error: cannot open --output " << path << " for writing\n";
    ok_ = false;
  }
}

std::ostream& OutputFile::stream() {
  return to_stdout_ ? std::cout : file_;
}

}  // namespace mogserve::cli
