#include "common/zip_archive.h"

#include <algorithm>
#include <cstring>

namespace mogserve {
namespace {

constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kCentralDirectoryEntry = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr size_t kEndRecordBytes = 22;
constexpr size_t kCentralEntryBytes = 46;
constexpr size_t kLocalHeaderBytes = 30;

uint32_t U32(std::span<const uint8_t> b, size_t at) {
  return static_cast<uint32_t>(b[at]) | static_cast<uint32_t>(b[at + 1]) << 8 |
         static_cast<uint32_t>(b[at + 2]) << 16 | static_cast<uint32_t>(b[at + 3]) << 24;
}
uint16_t U16(std::span<const uint8_t> b, size_t at) {
  return static_cast<uint16_t>(b[at] | b[at + 1] << 8);
}

// The end record sits in the last 22 bytes plus an optional comment of up to 64 KiB.
StatusOr<size_t> FindEndRecord(std::span<const uint8_t> b) {
  if (b.size() < kEndRecordBytes) return InvalidData("zip: file too short");
  const size_t lowest =
      b.size() > kEndRecordBytes + 0xffff ? b.size() - kEndRecordBytes - 0xffff : 0;
  for (size_t at = b.size() - kEndRecordBytes + 1; at-- > lowest;) {
    if (U32(b, at) == kEndOfCentralDirectory) return at;
  }
  return InvalidData("zip: no end-of-central-directory record (truncated file?)");
}

StatusOr<ZipEntry> ReadEntry(std::span<const uint8_t> b, size_t* at) {
  if (*at + kCentralEntryBytes > b.size() || U32(b, *at) != kCentralDirectoryEntry) {
    return InvalidData("zip: malformed central directory");
  }
  const uint16_t method = U16(b, *at + 10);
  const uint32_t compressed = U32(b, *at + 20);
  const uint32_t size = U32(b, *at + 24);
  const uint16_t name_len = U16(b, *at + 28);
  const uint16_t extra_len = U16(b, *at + 30);
  const uint16_t comment_len = U16(b, *at + 32);
  const uint32_t local = U32(b, *at + 42);
  if (*at + kCentralEntryBytes + name_len > b.size()) return InvalidData("zip: truncated name");
  ZipEntry e;
  e.name.assign(reinterpret_cast<const char*>(b.data() + *at + kCentralEntryBytes), name_len);
  *at += kCentralEntryBytes + name_len + extra_len + comment_len;
  if (compressed == 0xffffffffu || size == 0xffffffffu || local == 0xffffffffu) {
    return Unsupported("zip: ZIP64 entry '" + e.name + "' (files over 4 GiB) is not supported");
  }
  if (method != 0) return Unsupported("zip: entry '" + e.name + "' is compressed");
  if (compressed != size) return InvalidData("zip: sizes of '" + e.name + "' disagree");
  if (static_cast<size_t>(local) + kLocalHeaderBytes > b.size() || U32(b, local) != kLocalHeader) {
    return InvalidData("zip: local header of '" + e.name + "' is missing");
  }
  const size_t data_at =
      static_cast<size_t>(local) + kLocalHeaderBytes + U16(b, local + 26) + U16(b, local + 28);
  if (data_at + size > b.size()) {
    return InvalidData("zip: entry '" + e.name + "' runs past the end of the file (truncated?)");
  }
  e.data = b.subspan(data_at, size);
  return e;
}

}  // namespace

StatusOr<std::vector<ZipEntry>> ReadZipEntries(std::span<const uint8_t> bytes) {
  MOGSERVE_ASSIGN_OR_RETURN(size_t end, FindEndRecord(bytes));
  const uint16_t count = U16(bytes, end + 10);
  const uint32_t directory_at = U32(bytes, end + 16);
  if (count == 0xffff || directory_at == 0xffffffffu) {
    return Unsupported("zip: ZIP64 archives are not supported");
  }
  size_t at = directory_at;
  std::vector<ZipEntry> entries;
  for (uint16_t i = 0; i < count; ++i) {
    MOGSERVE_ASSIGN_OR_RETURN(ZipEntry e, ReadEntry(bytes, &at));
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace mogserve
