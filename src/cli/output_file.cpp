#include "cli/output_file.h"

#include <iostream>
#include <utility>

#include "cli/commands.h"
#include "common/file_util.h"

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

int PrintBenchResult(const std::string& markdown, const std::string& json,
                     const std::string& json_path, const std::string& markdown_path) {
  std::cout << markdown;
  for (const auto& [path, text] :
       {std::pair{json_path, json}, std::pair{markdown_path, markdown}}) {
    if (path.empty()) continue;
    if (Status s = WriteTextFile(path, text); !s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return kExitFatal;
    }
  }
  return kExitOk;
}

}  // namespace mogserve::cli
