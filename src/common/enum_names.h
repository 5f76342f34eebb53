// Names of enum values, written once as a table: the name of a value (logs, JSON, flags' help)
// and the value of a name (flags, config, requests), instead of a switch and a parser per enum.
//
// An enum whose values are 0, 1, ..., kLast in declaration order lists its names in that order:
//
//   constexpr EnumNames<Policy, Policy::kAdaptive> kPolicyNames{
//       {"naive", "dynamic", "continuous", "adaptive"}};
//   const char* PolicyName(Policy p) { return NameOf(kPolicyNames, p); }
//   StatusOr<Policy> ParsePolicy(std::string_view s) {
//     return ParseName(kPolicyNames, "policy", s);
//   }
//
// Any other enum (gaps, explicit values, values without a name) pairs each value with its name:
//
//   constexpr EnumName<ImageFormat> kImageFormatNames[] = {{ImageFormat::kJpeg, "JPEG"}, ...};
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "mogserve/status.h"

namespace mogserve {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// The name of `value` in `table`; `fallback` for a value the table does not hold.
template <typename E, size_t N>
constexpr const char* NameOf(const EnumName<E> (&table)[N], E value, const char* fallback = "?") {
  for (const EnumName<E>& e : table) {
    if (e.value == value) return e.name;
  }
  return fallback;
}

// The value named `name` (exactly, case-sensitive); nullopt when none is.
template <typename E, size_t N>
constexpr std::optional<E> FindByName(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& e : table) {
    if (name == e.name) return e.value;
  }
  return std::nullopt;
}

// Every name of `table`, in its order, separated by `separator`: "naive, dynamic, continuous".
template <typename E, size_t N>
std::string NameList(const EnumName<E> (&table)[N], std::string_view separator = ", ") {
  std::string out;
  for (const EnumName<E>& e : table) {
    if (!out.empty()) out += separator;
    out += e.name;
  }
  return out;
}

// The value named `name`, or kInvalidArgument naming the field, what was given, and what is
// allowed: "--policy 'fifo' is not one of: naive, dynamic, continuous, adaptive".
template <typename E, size_t N>
StatusOr<E> ParseName(const EnumName<E> (&table)[N], std::string_view field,
                      std::string_view name) {
  if (std::optional<E> v = FindByName(table, name)) return *v;
  return InvalidArgument(std::string(field) + " '" + std::string(name) +
                         "' is not one of: " + NameList(table));
}

// The names of the values 0 through kLast of E, given in that order: the name of value v is
// names[v]. The count must be kLast + 1, so a value added before kLast, or one removed, does not
// compile until the list follows; a value added after kLast must move kLast (nothing can check
// that, so declare the table next to the function that names the enum's values).
template <typename E, E kLast>
class EnumNames {
 public:
  static constexpr size_t kSize = static_cast<size_t>(kLast) + 1;
  using Table = EnumName<E>[kSize];

  // Exactly one name per value, 0 through kLast: another count does not compile.
  template <size_t N>
  constexpr explicit EnumNames(const char* const (&names)[N]) requires(N == kSize) {
    for (size_t i = 0; i < N; ++i) table_[i] = {static_cast<E>(i), names[i]};
  }

  // The same names as value-name pairs, for the functions above.
  constexpr const Table& table() const { return table_; }

 private:
  Table table_ = {};
};

// As above, for a table of names in value order: NameOf indexes it instead of searching.
template <typename E, E kLast>
constexpr const char* NameOf(const EnumNames<E, kLast>& names, E value,
                             const char* fallback = "?") {
  const auto i = static_cast<size_t>(value);
  return i < EnumNames<E, kLast>::kSize ? names.table()[i].name : fallback;
}

template <typename E, E kLast>
constexpr std::optional<E> FindByName(const EnumNames<E, kLast>& names, std::string_view name) {
  return FindByName(names.table(), name);
}

template <typename E, E kLast>
std::string NameList(const EnumNames<E, kLast>& names, std::string_view separator = ", ") {
  return NameList(names.table(), separator);
}

template <typename E, E kLast>
StatusOr<E> ParseName(const EnumNames<E, kLast>& names, std::string_view field,
                      std::string_view name) {
  return ParseName(names.table(), field, name);
}

}  // namespace mogserve
