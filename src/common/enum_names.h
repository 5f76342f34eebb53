// Names of enum values, written once as a table: the name of a value (logs, JSON, flags' help)
// and the value of a name (flags, config, requests), instead of a switch and a parser per enum.
//
//   constexpr EnumName<Policy> kPolicyNames[] = {{Policy::kNaive, "naive"}, ...};
//   const char* PolicyName(Policy p) { return NameOf(kPolicyNames, p); }
//   StatusOr<Policy> ParsePolicy(std::string_view s) { return ParseName(kPolicyNames, "policy", s); }
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

}  // namespace mogserve
