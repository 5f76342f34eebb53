// Where commands write their results: a job's JSON lines (--output FILE, or stdout), and a
// benchmark's tables (stdout, plus --json / --markdown files).
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

// A benchmark's result: `markdown` on stdout, then `json` into json_path and `markdown` into
// markdown_path where given. kExitOk, or kExitFatal (the error printed) when a file cannot be
// written.
int PrintBenchResult(const std::string& markdown, const std::string& json,
                     const std::string& json_path, const std::string& markdown_path);

}  // namespace mogserve::cli
