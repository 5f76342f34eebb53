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

int PrintError(const std::string& text, int exit_code) {
  std::cerr << "error: " << text << "\n";
  return exit_code;
}

void AddBenchOutputFlags(CLI::App& app, BenchOutputFlags& flags) {
  app.add_option("--format", flags.format, "What stdout shows: md (Markdown), json or csv")
      ->check(CLI::IsMember({"md", "markdown", "json", "csv"}))
      ->capture_default_str();
  app.add_option("--json", flags.json_path, "Also write the results as JSON here");
  app.add_option("--markdown", flags.markdown_path, "Also write the Markdown here");
  app.add_option("--csv", flags.csv_path, "Also write the tables as CSV here");
}

int PrintBenchTables(const std::vector<bench::ResultTable>& tables, const BenchOutputFlags& flags) {
  const StatusOr<bench::Format> format = bench::ParseFormat(flags.format);
  if (!format.ok()) {
    std::cerr << "error: --format: " << format.status().message() << "\n";
    return kExitUsage;
  }
  std::cout << bench::Print(tables, *format);
  for (const auto& [path, file_format] : {std::pair{flags.json_path, bench::Format::kJson},
                                          std::pair{flags.markdown_path, bench::Format::kMarkdown},
                                          std::pair{flags.csv_path, bench::Format::kCsv}}) {
    if (path.empty()) continue;
    if (Status s = WriteTextFile(path, bench::Print(tables, file_format)); !s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return kExitFatal;
    }
  }
  return kExitOk;
}

}  // namespace mogserve::cli
