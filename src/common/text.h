// Small text helpers shared by the writers of text formats (Prometheus, Markdown).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace mogserve {

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
