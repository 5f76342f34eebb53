// Small text helpers shared by the writers of text formats (Prometheus, Markdown).
#pragma once

#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace mogserve {

// `s` without leading and trailing ASCII whitespace.
inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// `s` with each character found in `replacements` replaced by its text.
inline std::string ReplaceChars(
    std::string_view s, std::initializer_list<std::pair<char, std::string_view>> replacements) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    bool replaced = false;
    for (const auto& [from, to] : replacements) {
      if (c == from) {
        out += to;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

}  // namespace mogserve
