// Where commands write their results: a job's JSON lines (--output FILE, or stdout), and a
// benchmark's tables (stdout in --format, plus --json / --markdown / --csv files).
#pragma once

#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "bench/result_table.h"
#include "cli/commands.h"

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

// Prints "error: TEXT" to stderr; returns `exit_code`.
int PrintError(const std::string& text, int exit_code);

// A benchmark's output flags: what stdout shows, and files to write in each format.
struct BenchOutputFlags {
  std::string format = "md";
  std::string json_path;
  std::string markdown_path;
  std::string csv_path;
};

// Adds --format, --json, --markdown and --csv to a bench subcommand.
void AddBenchOutputFlags(CLI::App& app, BenchOutputFlags& flags);

// A benchmark's result: the tables on stdout in flags.format, then into each file given in its
// format. kExitOk, or kExitFatal (the error printed) when a file cannot be written.
int PrintBenchTables(const std::vector<bench::ResultTable>& tables, const BenchOutputFlags& flags);

}  // namespace mogserve::cli
