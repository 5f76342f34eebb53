// The option table (src/options/option_table.h) walked on every surface each option claims: the
// command line (the flags serve registers), the library (DetectorOptions through CheckRanges and
// api::CheckOptions), HTTP /v1/detect (query, form field, JSON member) and the Open Inference
// Protocol's parameters. Each option must be accepted in range, refused out of range naming it,
// and reach the field (and the per-image detection setting) it is declared to set. The docs'
// copies of the table must equal it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <type_traits>

#include "api/serving_stack.h"
#include "cli/commands.h"
#include "options/option_table.h"
#include "server/detect_request.h"
#include "server/oip.h"

namespace mogserve::opt {
namespace {

// A value inside the option's range (its middle, whole for integers) and one below it.
double InRange(const Option& o) {
  if (!HasRange(o)) return 7;
  const double mid = o.min + (o.max - o.min) / 2;
  double v = o.type == Type::kReal ? mid : std::floor(mid);
  while (o.accepts != nullptr && !o.accepts(v) && v < o.max) ++v;  // the first it takes
  return v;
}

// A field as a double (optional: NaN when unset; lists: the first element; text: NaN).
template <typename Object, typename Field>
double ReadField(const Object& d, const Field& field_variant) {
  return std::visit(
      [&](auto field) -> double {
        if constexpr (std::is_same_v<decltype(field), std::monostate>) {
          return NAN;
        } else {
          const auto& v = d.*field;
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::string> ||
                        std::is_same_v<V, std::vector<std::string>>) {
            return NAN;
          } else if constexpr (std::is_same_v<V, std::vector<int>>) {
            return v.empty() ? NAN : v.front();
          } else if constexpr (std::is_arithmetic_v<V>) {
            return static_cast<double>(v);
          } else {
            return v ? static_cast<double>(*v) : NAN;
          }
        }
      },
      field_variant);
}

double Read(const Option& o, const DetectorOptions& d) {
  return ReadField(d, o.library);
}

// What a command's flags set: the detector's options and the server's.
struct Flags {
  DetectorOptions detector;
  ServingOptions serving;
  double Read(const Option& o) const {
    return std::holds_alternative<std::monostate>(o.serving) ? ReadField(detector, o.library)
                                                             : ReadField(serving, o.serving);
  }
  std::string Text(const Option& o) const {
    if (auto f = std::get_if<std::string ServingOptions::*>(&o.serving)) return serving.**f;
    if (auto f = std::get_if<std::vector<std::string> ServingOptions::*>(&o.serving)) {
      return (serving.**f).empty() ? "" : (serving.**f).back();
    }
    return detector.*std::get<std::string DetectorOptions::*>(o.library);
  }
};

void Write(const Option& o, DetectorOptions& d, double value) {
  std::visit(
      [&](auto field) {
        if constexpr (!std::is_same_v<decltype(field), std::monostate>) {
          auto& v = d.*field;
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::vector<int>>) {
            v = {static_cast<int>(value)};
          } else if constexpr (std::is_arithmetic_v<V>) {
            v = static_cast<V>(value);
          } else if constexpr (!std::is_same_v<V, std::string>) {
            v = static_cast<typename V::value_type>(value);
          }
        }
      },
      o.library);
}

// `v` as the option's text: whole numbers for integer options.
std::string Text(const Option& o, double v) {
  if (o.type != Type::kReal) return std::to_string(static_cast<int64_t>(v));
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

bool IsNumber(const Option& o) {
  return o.type == Type::kInt || o.type == Type::kReal || o.type == Type::kIntList;
}

// The first of the comma-separated choices ("a, b, c").
std::string FirstChoice(const Option& o) {
  return std::string(o.choices.substr(0, o.choices.find(", ")));
}

TEST(OptionTable, NamesAreSnakeCaseFlagsKebabCaseAndEveryOptionHasHelpAndASurface) {
  for (const Option& o : Table()) {
    SCOPED_TRACE(std::string(o.name));
    EXPECT_TRUE(std::regex_match(std::string(o.name), std::regex("[a-z][a-z0-9_]*")));
    if (!o.flag.empty()) {
      EXPECT_TRUE(std::regex_match(std::string(o.flag), std::regex("--[a-z][a-z0-9-]*")));
    }
    EXPECT_FALSE(o.help.empty());
    EXPECT_NE(o.surfaces, 0u);
    EXPECT_EQ((o.surfaces & kCli) != 0, !o.flag.empty()) << "a flag exactly when on the CLI";
    const bool library = !std::holds_alternative<std::monostate>(o.library);
    const bool serving = !std::holds_alternative<std::monostate>(o.serving);
    EXPECT_EQ((o.surfaces & kLibrary) != 0 || (o.surfaces & kCli) != 0, library || serving);
    EXPECT_FALSE(library && serving) << "one field";
    EXPECT_TRUE(!serving || o.surfaces == kCli) << "the server's settings are flags only";
    EXPECT_EQ((o.surfaces & kRequest) != 0, !std::holds_alternative<std::monostate>(o.request));
    if (IsNumber(o) && HasRange(o)) {
      EXPECT_LE(o.min, o.max);
    }
  }
}

TEST(OptionTable, EveryFlagAndEveryRequestNameIsDeclaredOnce) {
  std::set<std::string_view> flags, library, request;
  for (const Option& o : Table()) {
    if (!o.flag.empty()) {
      EXPECT_TRUE(flags.insert(o.flag).second) << o.flag;
    }
    if (o.surfaces & kLibrary) {
      EXPECT_TRUE(library.insert(o.name).second) << o.name;
    }
    if (o.surfaces & kRequest) {
      EXPECT_TRUE(request.insert(o.name).second) << o.name;
    }
  }
}

TEST(OptionTable, FindGivesTheMainEntryNotAFlagAlias) {
  const Option* delay = Find("max_delay_ms");
  ASSERT_NE(delay, nullptr);
  EXPECT_EQ(delay->flag, "--max-delay-ms") << "--timeout is the same field in seconds, an alias";
  EXPECT_EQ(OptionNames::Flags()("max_delay_ms"), "--max-delay-ms");
  EXPECT_EQ(Find("no_such_option"), nullptr);
}

TEST(OptionTable, EveryFlagIsAcceptedInRangeRefusedOutsideAndSetsItsField) {
  for (const Option& o : Table()) {
    if (!(o.surfaces & kCli)) continue;
    SCOPED_TRACE(std::string(o.flag));
    const auto parse = [&](const std::vector<std::string>& args, Flags* d) {
      CLI::App app;
      cli::AddOptionFlags(app, d->detector,
                          {Group::kModel, Group::kInput, Group::kScheduler, Group::kPipeline});
      cli::AddServingFlags(app, d->serving, {Group::kServer, Group::kStreams, Group::kGrpc});
      std::vector<std::string> reversed(args.rbegin(), args.rend());
      app.parse(reversed);
    };
    Flags d;
    if (o.type == Type::kSwitch) {
      parse({std::string(o.flag)}, &d);
      EXPECT_NE(d.Read(o), Flags{}.Read(o)) << "the switch changes its field";
      continue;
    }
    if (o.type == Type::kText || o.type == Type::kTextList) {
      const std::string value = o.choices.empty() ? "some/path" : FirstChoice(o);
      ASSERT_NO_THROW(parse({std::string(o.flag), value}, &d));
      EXPECT_EQ(d.Text(o), value);
      if (!o.choices.empty() && !std::holds_alternative<std::monostate>(o.serving)) {
        Flags refused;  // the server's choices are checked by the flag (the library's by Open)
        EXPECT_THROW(parse({std::string(o.flag), "no-such-value"}, &refused),
                     CLI::ValidationError);
      }
      continue;
    }
    const double value = InRange(o);
    ASSERT_NO_THROW(parse({std::string(o.flag), Text(o, value / o.flag_scale)}, &d));
    EXPECT_NEAR(d.Read(o), value, std::abs(value) * 1e-9) << "the flag sets its field";
    if (!HasRange(o)) {
      continue;
    }
    Flags refused;
    EXPECT_THROW(parse({std::string(o.flag), Text(o, (o.min - 1) / o.flag_scale)}, &refused),
                 CLI::ValidationError);
  }
}

TEST(OptionTable, EveryLibraryFieldIsRangeCheckedNamingItAsTheLibraryAndTheCliDo) {
  EXPECT_TRUE(CheckRanges(DetectorOptions{}, OptionNames::Fields()).ok()) << "the defaults pass";
  for (const Option& o : Table()) {
    if (!(o.surfaces & kLibrary) || !IsNumber(o) || !HasRange(o)) continue;
    SCOPED_TRACE(std::string(o.name));
    DetectorOptions d;
    Write(o, d, InRange(o));
    EXPECT_TRUE(CheckRanges(d, OptionNames::Fields()).ok());
    Write(o, d, o.min - 1);
    const Status field = CheckRanges(d, OptionNames::Fields());
    EXPECT_EQ(field.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(field.message().rfind(std::string(o.name) + ": ", 0), 0u) << field.message();
    EXPECT_NE(field.message().find("out of range; allowed: "), std::string::npos);
    const Status flag = CheckRanges(d, OptionNames::Flags());
    EXPECT_EQ(flag.message().rfind(OptionNames::Flags()(o.name) + ": ", 0), 0u) << flag.message();
    // The library's Open runs the same check first (api::CheckOptions, before any model load).
    const auto checked = api::CheckOptions(d);
    EXPECT_EQ(checked.status().message(), field.message());
  }
}

TEST(OptionTable, LibraryTextChoicesAreCheckedBeforeTheModelLoadsNamingTheField) {
  for (const Option& o : Table()) {
    if (!(o.surfaces & kLibrary) || o.type != Type::kText || o.choices.empty()) continue;
    SCOPED_TRACE(std::string(o.name));
    DetectorOptions d;
    d.*std::get<std::string DetectorOptions::*>(o.library) = "no-such-value";
    if (o.name == "synthetic_weights") continue;  // checked by the model loader (its aliases)
    const auto checked = api::CheckOptions(d);
    EXPECT_EQ(checked.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(checked.status().message().rfind(std::string(o.name) + ":", 0), 0u)
        << checked.status().message();
  }
}

// A request option through /v1/detect's parser (a query parameter, a form field and a JSON
// member) and through the OIP parameters; `accepted` says whether each must take it.
struct Parsed {
  std::optional<server::HttpError> query, form, json, oip;
  RequestOptions from_query, from_oip;
};
Parsed ParseEverywhere(const std::string& name, const std::string& value) {
  Parsed p;
  const server::RequestLimits limits;
  const std::string jpeg = "\xff\xd8\xff";
  auto q = server::ParseDetectRequest("image/jpeg", jpeg, {{name, value}}, limits);
  p.query = q.error;
  p.from_query = q.request.params;
  const std::string boundary = "XyZ";
  const std::string form = "--XyZ\r\nContent-Disposition: form-data; name=\"" + name +
                           "\"\r\n\r\n" + value +
                           "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"image\"; "
                           "filename=\"a.jpg\"\r\n\r\n" + jpeg + "\r\n--XyZ--\r\n";
  p.form = server::ParseDetectRequest("multipart/form-data; boundary=" + boundary, form, {}, limits)
               .error;
  nlohmann::json body = {{"image", "/9j/"}, {name, value}};
  p.json = server::ParseDetectRequest("application/json", body.dump(), {}, limits).error;
  server::oip::InferRequest infer;
  bool binary = false;
  p.oip = server::oip::ApplyParameters(nlohmann::json{{name, value}}, infer, &binary);
  p.from_oip = infer.params;
  return p;
}

TEST(OptionTable, EveryRequestOptionIsAcceptedRefusedAndUnknownWhereTheTableSays) {
  for (const Option& o : Table()) {
    if (!(o.surfaces & kRequest)) continue;
    SCOPED_TRACE(std::string(o.name));
    const std::string good = o.type == Type::kText ? FirstChoice(o) : Text(o, InRange(o));
    const Parsed ok = ParseEverywhere(std::string(o.name), good);
    const bool http = o.surfaces & kHttp, oip = o.surfaces & kOip;
    EXPECT_EQ(!ok.query, http) << (ok.query ? ok.query->message : "");
    EXPECT_EQ(!ok.form, http) << (ok.form ? ok.form->message : "");
    EXPECT_EQ(!ok.json, http) << (ok.json ? ok.json->message : "");
    EXPECT_EQ(!ok.oip, oip) << (ok.oip ? ok.oip->message : "");
    if (!http) {
      EXPECT_NE(ok.query->message.find("unknown parameter"), std::string::npos);
    }
    if (!oip) {
      EXPECT_NE(ok.oip->message.find("unknown parameter"), std::string::npos);
    }
    // The parsed value is the request's, in its field.
    const RequestOptions& parsed = http ? ok.from_query : ok.from_oip;
    std::visit(
        [&](auto field) {
          if constexpr (!std::is_same_v<decltype(field), std::monostate>) {
            ASSERT_TRUE((parsed.*field).has_value());
            if constexpr (std::is_same_v<typename std::decay_t<decltype(parsed.*field)>::value_type,
                                         std::string>) {
              EXPECT_EQ(*(parsed.*field), good);
            } else {
              EXPECT_NEAR(static_cast<double>(*(parsed.*field)), InRange(o), 1e-6);
            }
          }
        },
        o.request);
    const std::string bad = o.type == Type::kText ? "no-such-value" : Text(o, o.min - 1);
    const Parsed refused = ParseEverywhere(std::string(o.name), bad);
    for (const auto& e : {refused.query, refused.form, refused.json, refused.oip}) {
      ASSERT_TRUE(e.has_value());
      EXPECT_EQ(e->code, "invalid_parameter");
    }
    if (http) {
      EXPECT_EQ(refused.query->status, 422);
      EXPECT_EQ(refused.query->message.rfind(std::string(o.name) + ": '" + bad + "'", 0), 0u)
          << refused.query->message;
    }
    if (o.accepts != nullptr && http) {  // in range, against the rule: refused, the rule said
      double v = o.min;
      while (o.accepts(v)) ++v;
      const Parsed against = ParseEverywhere(std::string(o.name), Text(o, v));
      ASSERT_TRUE(against.query.has_value()) << v;
      EXPECT_NE(against.query->message.find(std::string(o.allowed)), std::string::npos)
          << against.query->message;
    }
  }
}

// The per-image settings: the model's defaults, the server's (library) overrides, a request's.
TEST(OptionTable, DetectionOptionsOverrideTheModelsDefaultsThenTheRequestsOverrideThose) {
  const DetectOptions model{0.25f, 17, 0.75f, 3};  // unlike any middle of a range
  for (const Option& o : Table()) {
    if (std::holds_alternative<std::monostate>(o.detect)) continue;
    SCOPED_TRACE(std::string(o.name));
    const double server_value = InRange(o);
    DetectorOptions d;
    Write(o, d, server_value);
    const DetectOptions served = ApplyDetectOverrides(d, model);
    const auto read = [&](const DetectOptions& x) {
      return std::visit(
          [&](auto f) -> double {
            if constexpr (std::is_same_v<decltype(f), std::monostate>) {
              return NAN;
            } else {
              return static_cast<double>(x.*f);
            }
          },
          o.detect);
    };
    EXPECT_NEAR(read(served), server_value, 1e-6);
    EXPECT_NE(read(ApplyDetectOverrides(DetectorOptions{}, model)), server_value);
    if (!(o.surfaces & kRequest)) continue;
    RequestOptions r;
    ASSERT_EQ(ApplyRequestOption(o.name, Text(o, o.min), &r), "");
    EXPECT_NEAR(read(ApplyDetectOverrides(r, served)), o.min, 1e-6);
    EXPECT_NEAR(read(ApplyDetectOverrides(RequestOptions{}, served)), server_value, 1e-6);
  }
}

// docs/*.md hold the table's Markdown between markers; scripts/update_option_docs.py rewrites
// them.
TEST(OptionTable, TheDocsTablesAreTheOptionTable) {
  const std::regex block(
      "<!-- mogserve options --surface (\\w+) -->\\n([^]*?)<!-- end mogserve options -->");
  int blocks = 0;
  for (const char* doc : {"docs/CLI.md", "docs/API.md", "docs/LIBRARY.md"}) {
    std::ifstream f(std::filesystem::path(MOGSERVE_SOURCE_DIR) / doc);
    ASSERT_TRUE(f) << doc;
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), block);
         it != std::sregex_iterator(); ++it, ++blocks) {
      const std::string surface = (*it)[1];
      const Surface s = surface == "cli"    ? kCli
                        : surface == "http" ? kHttp
                        : surface == "oip"  ? kOip
                                            : kLibrary;
      EXPECT_EQ((*it)[2].str(), OptionsMarkdown(s))
          << doc << " --surface " << surface
          << " differs from the option table: run scripts/update_option_docs.py";
    }
  }
  EXPECT_EQ(blocks, 4) << "CLI.md (cli), API.md (http, oip), LIBRARY.md (library)";
}

}  // namespace
}  // namespace mogserve::opt
