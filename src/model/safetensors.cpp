#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/file_util.h"
#include "model/element_type.h"

namespace mogserve::model {
namespace {

using nlohmann::json;

// A JSON header larger than this is not a checkpoint header (it would describe millions of
// tensors); refusing it bounds the memory a malformed file can make us spend.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct Entry {
  std::string name;
  std::string dtype;  // as written in the file, for messages
  ElementType type = ElementType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

StatusOr<Entry> ParseEntry(const std::string& name, const json& j) {
  Entry e;
  e.name = name;
  if (!j.is_object() || !j.contains("dtype") || !j.contains("shape") ||
      !j.contains("data_offsets")) {
    return InvalidData("safetensors: tensor '" + name + "' lacks dtype, shape or data_offsets");
  }
  if (!j["dtype"].is_string()) return InvalidData("safetensors: dtype of '" + name + "'");
  e.dtype = j["dtype"].get<std::string>();
  const std::optional<ElementType> type = ElementTypeFromSafetensorsName(e.dtype);
  if (!type) {
    return Unsupported("safetensors: tensor '" + name + "' has dtype " + e.dtype +
                       "; supported: F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL");
  }
  e.type = *type;
  for (const json& d : j["shape"]) {
    if (!d.is_number_unsigned()) return InvalidData("safetensors: bad shape of '" + name + "'");
    e.shape.push_back(d.get<int64_t>());
  }
  const json& off = j["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned()) {
    return InvalidData("safetensors: data_offsets of '" + name + "' must be [begin, end]");
  }
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  return e;
}

// Checks one entry's byte range against its shape and the data section.
Status CheckRange(const Entry& e, uint64_t data_bytes) {
  uint64_t numel = 1;
  for (int64_t d : e.shape) {
    if (d != 0 && numel > (uint64_t{1} << 40) / static_cast<uint64_t>(d)) {
      return InvalidData("safetensors: tensor '" + e.name + "' is implausibly large");
    }
    numel *= static_cast<uint64_t>(d);
  }
  const uint64_t expected = numel * static_cast<uint64_t>(ElementBytes(e.type));
  if (e.end < e.begin || e.end > data_bytes) {
    return InvalidData("safetensors: tensor '" + e.name + "' has data_offsets [" +
                       std::to_string(e.begin) + ", " + std::to_string(e.end) + ") outside the " +
                       std::to_string(data_bytes) + "-byte data section");
  }
  if (e.end - e.begin != expected) {
    return InvalidData("safetensors: tensor '" + e.name + "' spans " +
                       std::to_string(e.end - e.begin) + " bytes, its shape and " + e.dtype +
                       " need " + std::to_string(expected));
  }
  return Status::Ok();
}

// The tensors must tile the data section exactly: no overlap, no holes.
Status CheckCoverage(std::vector<const Entry*> entries, uint64_t data_bytes) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  uint64_t cursor = 0;
  for (const Entry* e : entries) {
    if (e->begin != cursor) {
      return InvalidData("safetensors: tensor '" + e->name + "' starts at byte " +
                         std::to_string(e->begin) + " but the previous one ends at " +
                         std::to_string(cursor) + " (overlap or hole)");
    }
    cursor = e->end;
  }
  if (cursor != data_bytes) {
    return InvalidData("safetensors: the tensors cover " + std::to_string(cursor) + " bytes of a " +
                       std::to_string(data_bytes) + "-byte data section");
  }
  return Status::Ok();
}

StatusOr<HostTensorMap> ParseHeaderAndData(std::span<const uint8_t> bytes) {
  if (bytes.size() < 8) return InvalidData("safetensors: file shorter than its 8-byte header");
  uint64_t header_bytes;
  std::memcpy(&header_bytes, bytes.data(), 8);  // little-endian, as the format says
  if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - 8) {
    return InvalidData("safetensors: header length " + std::to_string(header_bytes) +
                       " exceeds the file (" + std::to_string(bytes.size()) + " bytes)");
  }
  const json header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + header_bytes, nullptr,
                                  /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return InvalidData("safetensors: the header is not a JSON object");
  }
  const std::span<const uint8_t> data = bytes.subspan(8 + header_bytes);
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") continue;
    MOGSERVE_ASSIGN_OR_RETURN(Entry e, ParseEntry(name, value));
    MOGSERVE_RETURN_IF_ERROR(CheckRange(e, data.size()));
    entries.push_back(std::move(e));
  }
  std::vector<const Entry*> pointers;
  for (const Entry& e : entries) pointers.push_back(&e);
  MOGSERVE_RETURN_IF_ERROR(CheckCoverage(pointers, data.size()));

  HostTensorMap out;
  for (const Entry& e : entries) {
    HostTensor t;
    t.shape = e.shape;
    const int size = ElementBytes(e.type);
    t.values.resize((e.end - e.begin) / static_cast<uint64_t>(size));
    for (size_t i = 0; i < t.values.size(); ++i) {
      t.values[i] = ElementToFloat(e.type, data.data() + e.begin + i * size);
    }
    out.emplace(e.name, std::move(t));
  }
  return out;
}

}  // namespace

StatusOr<HostTensorMap> ParseSafetensors(std::span<const uint8_t> bytes) {
  try {
    return ParseHeaderAndData(bytes);
  } catch (const json::exception& e) {
    return InvalidData(std::string("safetensors: unexpected header structure: ") + e.what());
  }
}

StatusOr<HostTensorMap> LoadSafetensors(const std::string& path) {
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(path));
  auto parsed = ParseSafetensors(bytes);
  if (!parsed.ok()) return Status(parsed.status().code(), path + ": " + parsed.status().message());
  return parsed;
}

}  // namespace mogserve::model
