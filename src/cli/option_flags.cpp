// The command-line flags of the option table (options/option_table.h): one CLI11 option per
// entry, bound to its DetectorOptions field, with the table's range, help and default.
#include <limits>
#include <type_traits>

#include "cli/commands.h"
#include "options/option_table.h"

namespace mogserve::cli {
namespace {

// `v` as a T, saturated (the table's int64 maximum is 2^63 as a double, one past INT64_MAX).
template <typename T>
T Saturate(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    return static_cast<T>(v);
  }
}

// The element type of a field: T of std::optional<T> and std::vector<T>.
template <typename V>
struct Element {
  using type = V;
};
template <typename T>
struct Element<std::optional<T>> {
  using type = T;
};
template <typename T>
struct Element<std::vector<T>> {
  using type = T;
};

// The text choices of `o` ("a, b, c" → {"a", "b", "c"}).
std::vector<std::string> Choices(const opt::Option& o) {
  std::vector<std::string> out;
  std::string_view rest = o.choices;
  while (!rest.empty()) {
    const size_t comma = rest.find(", ");
    out.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 2);
  }
  return out;
}

std::string Help(const opt::Option& o) {
  std::string help(o.help);
  if (!o.default_text.empty() || o.type == opt::Type::kSwitch) {
    help += " (default: " + opt::DefaultText(o, /*for_flag=*/true) + ")";
  }
  return help;
}

// The flag of `o` bound to its field in `d` (DetectorOptions or ServingOptions).
template <typename Object, typename Field>
CLI::Option* AddFlag(CLI::App& app, Object& d, const opt::Option& o, const Field& field_variant) {
  const std::string flag(o.flag);
  return std::visit(
      [&](auto field) -> CLI::Option* {
        using F = decltype(field);
        if constexpr (std::is_same_v<F, std::monostate>) {
          return nullptr;
        } else {
          using V = std::decay_t<decltype(d.*field)>;
          if constexpr (std::is_same_v<V, bool>) {
            return app.add_flag(flag, d.*field, Help(o));
          } else if constexpr (std::is_same_v<V, std::string>) {
            CLI::Option* added = app.add_option(flag, d.*field, Help(o))->default_str(d.*field);
            if constexpr (std::is_same_v<Object, ServingOptions>) {
              if (!o.choices.empty()) added->check(CLI::IsMember(Choices(o)));
            }
            return added;
          } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
            return app.add_option(flag, d.*field, Help(o));
          } else if (o.flag_scale != 1) {
            // In the flag's unit (seconds for a field in milliseconds).
            if constexpr (std::is_arithmetic_v<V>) {
              const double scale = o.flag_scale;
              return app
                  .add_option_function<double>(
                      flag, [&d, field, scale](double v) { d.*field = static_cast<V>(v * scale); },
                      Help(o))
                  ->check(CLI::Range(o.min / scale, o.max / scale))  // tables give scaled ones a range
                  ->default_str(opt::DefaultText(o, /*for_flag=*/true));
            }
            return nullptr;
          } else {
            using T = typename Element<V>::type;
            CLI::Option* added = app.add_option(flag, d.*field, Help(o));
            if (opt::HasRange(o)) added->check(CLI::Range(Saturate<T>(o.min), Saturate<T>(o.max)));
            if constexpr (std::is_same_v<V, std::vector<int>>) added->delimiter(',');
            if (o.default_text.empty()) added->default_str(opt::DefaultText(o, true));
            return added;
          }
        }
      },
      field_variant);
}

bool InGroups(const opt::Option& o, std::initializer_list<opt::Group> groups) {
  return (o.surfaces & opt::kCli) && !o.flag.empty() &&
         std::find(groups.begin(), groups.end(), o.group) != groups.end();
}

}  // namespace

void AddOptionFlags(CLI::App& app, DetectorOptions& options,
                    std::initializer_list<opt::Group> groups) {
  for (const opt::Option& o : opt::Table()) {
    if (InGroups(o, groups)) AddFlag(app, options, o, o.library);
  }
}

void AddServingFlags(CLI::App& app, ServingOptions& options,
                     std::initializer_list<opt::Group> groups) {
  for (const opt::Option& o : opt::Table()) {
    if (InGroups(o, groups)) AddFlag(app, options, o, o.serving);
  }
}

CLI::Option* AddOptionFlag(CLI::App& app, DetectorOptions& options, std::string_view flag) {
  for (const opt::Option& o : opt::Table()) {
    if (o.flag == flag) return AddFlag(app, options, o, o.library);
  }
  return nullptr;
}

}  // namespace mogserve::cli
