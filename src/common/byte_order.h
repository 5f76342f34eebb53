// Numbers in files of either byte order (TIFF/EXIF, MAT v5): the byte-order mark and the load,
// once for every parser.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace mogserve {

// The byte order a file's two-byte mark at `p` names: false (little-endian) for `little`, true
// (big-endian) for `big`, nullopt for neither. TIFF: "II" / "MM"; MAT v5: "IM" / "MI".
inline std::optional<bool> BigEndianMark(const uint8_t* p, std::string_view little,
                                         std::string_view big) {
  if (std::memcmp(p, little.data(), 2) == 0) return false;
  if (std::memcmp(p, big.data(), 2) == 0) return true;
  return std::nullopt;
}

// The T stored at `p` in a file of that byte order, in this machine's.
template <typename T>
T LoadInOrder(const uint8_t* p, bool big_endian) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, p, sizeof(T));
  if (big_endian != (std::endian::native == std::endian::big)) {
    std::reverse(bytes, bytes + sizeof(T));
  }
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

}  // namespace mogserve
