// Small file helpers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mogserve/status.h"

namespace mogserve {

// Reads a whole file. kNotFound when missing, kInvalidArgument for a directory, kInternal on
// other I/O errors; the message names the path.
StatusOr<std::vector<uint8_t>> ReadFileBytes(const std::string& path);

}  // namespace mogserve
