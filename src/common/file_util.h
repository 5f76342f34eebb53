// Small file helpers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mogserve/status.h"

namespace mogserve {

// Reads a whole file. kNotFound when missing, kInvalidArgument for a directory, kInternal on
// other I/O errors; the message names the path.
StatusOr<std::vector<uint8_t>> ReadFileBytes(const std::string& path);

// A folder shipped with the project (models/..., tests/data/...), given relative to the project
// root: in the working directory, else next to the build (<folder of the executable>/..);
// empty when neither exists.
std::string FindProjectFolder(const std::string& relative);

// Writes `text` to `path`, replacing it all at once (a temporary file beside it, renamed): a
// failed write leaves no partial file. kInternal naming the path when it cannot be written.
Status WriteTextFile(const std::string& path, const std::string& text);
// The same for bytes.
Status WriteFileBytes(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace mogserve
