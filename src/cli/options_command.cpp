// `mogserve options`: the option table (options/option_table.h) as Markdown, per surface — the
// tables of docs/CLI.md and docs/API.md are this output (tests/options/option_table_test.cpp
// keeps them equal).
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"

namespace mogserve::cli {

CommandRunner RegisterOptionsCommand(CLI::App& app) {
  auto surface = std::make_shared<std::string>("cli");
  app.add_option("--surface", *surface,
                 "cli (the flags), http (/v1/detect's parameters), oip (the Open Inference "
                 "Protocol's parameters) or library (DetectorOptions' fields)")
      ->check(CLI::IsMember({"cli", "http", "oip", "library"}))
      ->capture_default_str();
  return [surface] {
    const opt::Surface s = *surface == "http"    ? opt::kHttp
                           : *surface == "oip"   ? opt::kOip
                           : *surface == "library" ? opt::kLibrary
                                                   : opt::kCli;
    std::cout << opt::OptionsMarkdown(s);
    return kExitOk;
  };
}

}  // namespace mogserve::cli
