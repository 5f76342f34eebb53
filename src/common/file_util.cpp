#include "common/file_util.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include <unistd.h>

namespace mogserve {

StatusOr<std::vector<uint8_t>> ReadFileBytes(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found) {
    return NotFound("no such file: " + path);
  }
  if (ec) return Internal("cannot stat " + path + ": " + ec.message());
  if (st.type() == std::filesystem::file_type::directory) {
    return InvalidArgument(path + " is a directory, not a file");
  }
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return Internal("cannot open " + path + ": " + std::strerror(errno));
  // Read in chunks rather than trusting a size from stat, so pipes and growing files work too.
  std::vector<uint8_t> bytes;
  constexpr size_t kChunkBytes = 1 << 16;
  while (true) {
    const size_t old_size = bytes.size();
    bytes.resize(old_size + kChunkBytes);
    const size_t got = std::fread(bytes.data() + old_size, 1, kChunkBytes, file.get());
    bytes.resize(old_size + got);
    if (got < kChunkBytes) break;
  }
  if (std::ferror(file.get())) return Internal("cannot read " + path + ": " + std::strerror(errno));
  return bytes;
}

std::string FindProjectFolder(const std::string& relative) {
  namespace fs = std::filesystem;
  std::error_code ec;  // the non-throwing forms: an unreadable folder is "not there"
  if (fs::is_directory(relative, ec)) return relative;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = exe.parent_path().parent_path() / relative;
    if (fs::is_directory(beside, ec)) return beside.string();
  }
  return "";
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  return WriteFileBytes(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

Status WriteFileBytes(const std::string& path, std::span<const uint8_t> bytes) {
  // Into a temporary file beside it, renamed over `path` once complete: never a partial file.
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(temporary.c_str(), "wb"), &std::fclose);
  if (!file) return Internal("cannot write " + path + ": " + std::strerror(errno));
  if (std::fwrite(bytes.data(), 1, bytes.size(), file.get()) != bytes.size() ||
      std::fclose(file.release()) != 0 || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    return Internal("cannot write " + path + ": " + why);
  }
  return Status::Ok();
}

}  // namespace mogserve
