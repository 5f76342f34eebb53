// Read-only access to the stored (uncompressed) entries of a zip archive held in memory — enough
// for the files torch.save writes, which store every record uncompressed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mogserve/status.h"

namespace mogserve {

struct ZipEntry {
  std::string name;
  std::span<const uint8_t> data;  // points into the archive bytes
};

// Lists the entries from the central directory. kInvalidData for a truncated or malformed
// archive (no end-of-central-directory record, entries outside the file, sizes that disagree);
// kUnsupported for compressed entries or ZIP64 archives. `bytes` must outlive the result.
StatusOr<std::vector<ZipEntry>> ReadZipEntries(std::span<const uint8_t> bytes);

}  // namespace mogserve
