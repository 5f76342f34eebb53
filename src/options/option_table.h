// The option table: every detection and serving option declared once (llama.cpp's common_arg is
// the model) — its name, command-line flag, type, range, default, help, and the surfaces that
// carry it. Everything else is derived from it:
//   - the command-line flags (cli/option_flags.cpp: CLI11 options with their ranges and help),
//   - the range checks of the library's DetectorOptions (CheckRanges, used by api::CheckOptions),
//   - per-request parsing for HTTP, WebSocket, OIP REST and gRPC (ApplyRequestOption),
//   - the per-image detection settings (ApplyDetectOverrides: the model's defaults, the server's
//     overrides, the request's),
//   - the option tables of docs/CLI.md and docs/API.md (OptionsMarkdown; a test keeps them equal),
//   - the names errors use (OptionNames: "max_faces" in the library, "--max-faces" on the CLI).
//
// Adding an option: a field in include/mogserve/options.h (DetectorOptions and/or RequestOptions,
// DetectOptions when it acts per image), one entry in option_table.cpp, and the one place it
// takes effect. docs/ARCHITECTURE.md has the recipe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mogserve/options.h"
#include "mogserve/result.h"
#include "mogserve/status.h"
#include "options/serving_options.h"

namespace mogserve::opt {

// The front doors an option comes through (a bit set).
enum Surface : unsigned {
  kCli = 1u << 0,      // a command-line flag (serve has them all; other commands by group)
  kLibrary = 1u << 1,  // a field of mogserve::DetectorOptions (Detector::Open)
  kHttp = 1u << 2,     // per request on /v1/detect: query, form field or JSON member, and the
                       // WebSocket's (a field of mogserve::RequestOptions)
  kOip = 1u << 3,      // per request: the Open Inference Protocol's parameters, REST and gRPC
  kRequest = kHttp | kOip,
};

// Which commands register an option's flag: serve all groups; detect, eval and the benchmarks
// the model (and input) groups; bench serve and bench video the server's and streams' too.
enum class Group { kModel, kInput, kScheduler, kPipeline, kRequest, kServer, kStreams, kGrpc };

enum class Type { kInt, kReal, kText, kSwitch, kIntList, kTextList };

// Where an option's value lives in each struct (std::monostate: not there).
using LibraryField =
    std::variant<std::monostate, int DetectorOptions::*, int64_t DetectorOptions::*,
                 uint64_t DetectorOptions::*, double DetectorOptions::*, bool DetectorOptions::*,
                 std::string DetectorOptions::*, std::optional<float> DetectorOptions::*,
                 std::optional<int> DetectorOptions::*, std::vector<int> DetectorOptions::*>;
using RequestField =
    std::variant<std::monostate, std::optional<float> RequestOptions::*,
                 std::optional<int> RequestOptions::*, std::optional<int64_t> RequestOptions::*,
                 std::optional<std::string> RequestOptions::*>;
// The per-image setting it overrides (DetectOptions: what post-processing reads).
using DetectField = std::variant<std::monostate, float DetectOptions::*, int DetectOptions::*>;
// The server's own settings (serve's flags beyond the detector's).
using ServingField = std::variant<std::monostate, int ServingOptions::*, int64_t ServingOptions::*,
                                  double ServingOptions::*, std::string ServingOptions::*,
                                  std::vector<std::string> ServingOptions::*>;

struct Option {
  std::string_view name{};  // snake_case: the library field, the HTTP and OIP parameter
  std::string_view flag{};  // "--max-faces"; empty: no flag
  Group group = Group::kInput;
  unsigned surfaces = 0;  // Surface bits
  Type type = Type::kInt;
  // Numbers: the inclusive range, in the option's own unit (the library's and the request's).
  double min = 0;
  double max = 0;
  // The flag's value times this is the option's (--request-timeout in seconds -> milliseconds).
  double flag_scale = 1;
  std::string_view choices{};  // text with fixed values, "a, b, c" (requests check them)
  std::string_view unit{};     // "milliseconds": "an integer number of milliseconds from 1 to ..."
  std::string_view allowed{};  // what a request error says is allowed, when not the range
  // Numbers: a rule beyond the range that a value must also meet (`allowed` says it); null: none.
  bool (*accepts)(double value) = nullptr;
  std::string_view default_text{};  // the default when it is not a plain value (the model's)
  std::string_view help{};
  LibraryField library{};
  RequestField request{};
  DetectField detect{};
  ServingField serving{};
};

// Numbers without a range (min = max = 0) take any value of their type.
inline bool HasRange(const Option& o) {
  return o.min != 0 || o.max != 0;
}

// Every option, in the order the flags are registered and the docs list them.
std::span<const Option> Table();
// The option of that name (not a flag-only alias such as --timeout when the option has a main
// entry); nullptr when there is none.
const Option* Find(std::string_view name);

// The default of `option` as the docs and --help write it: default_text, else the value in a
// default-constructed DetectorOptions or ServingOptions (in the flag's unit when `for_flag`),
// else "unset".
std::string DefaultText(const Option& option, bool for_flag = false);

// The name each option has in error messages: the field's ("max_faces") or the flag's
// ("--max-faces"), a command's own flag where it registers one under another name (detect's
// --batch-size for max_batch_size).
class OptionNames {
 public:
  static OptionNames Fields() { return OptionNames(false); }
  static OptionNames Flags() { return OptionNames(true); }
  OptionNames() = default;  // Fields()
  OptionNames& Rename(std::string_view option, std::string name);
  std::string operator()(std::string_view option) const;
  bool flags() const { return flags_; }

 private:
  explicit OptionNames(bool flags) : flags_(flags) {}
  bool flags_ = false;
  std::map<std::string, std::string, std::less<>> renamed_;
};

// Every number, and every list of numbers, of `o` inside its range (InvalidArgument "max_faces:
// -1 is out of range; allowed: 1 to 10000", under `names`; flags in the flag's unit).
Status CheckRanges(const DetectorOptions& o, const OptionNames& names);

// One request option from its text (a query parameter, a form field, a JSON or OIP value as
// text) into `r`: "" when accepted, else the message naming it and what is allowed ("max_faces:
// '0' is not allowed; an integer from 1 to 10000", "unknown parameter 'x'; allowed: ...").
// Only options carried by one of `surfaces` are known.
std::string ApplyRequestOption(std::string_view name, std::string_view text, RequestOptions* r,
                               unsigned surfaces = kRequest);
// The names of the options `surface` carries, "score_threshold, max_faces, ...".
std::string NamesOn(Surface surface);

// `d` (a model's defaults) with the overrides `o` sets (the server's or the library's).
DetectOptions ApplyDetectOverrides(const DetectorOptions& o, DetectOptions d);
// `d` (the server's) with the overrides one request sets.
DetectOptions ApplyDetectOverrides(const RequestOptions& r, DetectOptions d);

// The Markdown table of the options carried by `surface` (kCli: docs/CLI.md; kHttp, kOip and
// kLibrary: docs/API.md), one row per option.
std::string OptionsMarkdown(Surface surface);

}  // namespace mogserve::opt
