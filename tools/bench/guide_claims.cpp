#include "bench/guide_claims.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_util.h"

namespace mogserve::bench {

const std::vector<std::string>& KnownGuideClaimIds() {
  static const std::vector<std::string> ids = {
      "reduced_precision", "batch_per_image", "throughput",    "utilisation",
      "peak_memory",       "video_streams",   "latency_stddev"};
  return ids;
}

std::string FindGuideClaims(const std::string& flag) {
  if (!flag.empty()) return flag;
  // A source tree or a build next to one; an installed mogserve (<prefix>/share/mogserve).
  for (const char* folder : {"docs/bench", "share/mogserve"}) {
    const std::string dir = FindProjectFolder(folder);
    if (!dir.empty() && std::filesystem::exists(dir + "/guide_claims.json")) {
      return dir + "/guide_claims.json";
    }
  }
  return "";
}

namespace {

std::string Known() {
  std::string list;
  for (const std::string& id : KnownGuideClaimIds()) list += (list.empty() ? "" : ", ") + id;
  return list;
}

StatusOr<GuideClaim> ParseClaim(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return InvalidArgument(where + ": expected an object");
  GuideClaim c;
  for (auto [key, out] :
       {std::pair{"id", &c.id}, std::pair{"claim", &c.claim}, std::pair{"guide", &c.guide}}) {
    if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty()) {
      return InvalidArgument(where + ": \"" + key + "\" must be a non-empty string");
    }
    *out = j[key].get<std::string>();
  }
  const std::vector<std::string>& known = KnownGuideClaimIds();
  if (std::find(known.begin(), known.end(), c.id) == known.end()) {
    return InvalidArgument(where + ": id \"" + c.id + "\" is not one bench report measures (" +
                           Known() + ")");
  }
  double before = 0, after = 0;
  for (auto [key, out] : {std::pair{"before", &before}, std::pair{"after", &after}}) {
    if (!j.contains(key) || !j[key].is_number() || j[key].get<double>() <= 0) {
      return InvalidArgument(where + " (" + c.id + "): \"" + key + "\" must be a number > 0");
    }
    *out = j[key].get<double>();
  }
  const std::string ratio = j.value("ratio", "");
  if (ratio == "before/after") {
    c.ratio = before / after;
  } else if (ratio == "after/before") {
    c.ratio = after / before;
  } else {
    return InvalidArgument(where + " (" + c.id +
                           "): \"ratio\" must be \"before/after\" or \"after/before\"");
  }
  return c;
}

}  // namespace

StatusOr<std::vector<GuideClaim>> LoadGuideClaims(const std::string& path) {
  if (path.empty()) {
    return NotFound(
        "the guide's claims: no docs/bench/guide_claims.json in the working directory or next "
        "to the build, and no share/mogserve/guide_claims.json next to the executable's folder "
        "(see --guide-claims)");
  }
  StatusOr<std::vector<uint8_t>> bytes = ReadFileBytes(path);
  if (!bytes.ok())
    return Status(bytes.status().code(), "the guide's claims: " + bytes.status().message());
  const nlohmann::json j = nlohmann::json::parse(bytes->begin(), bytes->end(), nullptr, false);
  if (j.is_discarded()) return InvalidArgument(path + ": not valid JSON");
  if (!j.contains("claims") || !j["claims"].is_array()) {
    return InvalidArgument(path + ": \"claims\" must be an array of claims");
  }
  std::vector<GuideClaim> claims;
  for (size_t i = 0; i < j["claims"].size(); ++i) {
    MOGSERVE_ASSIGN_OR_RETURN(
        GuideClaim c, ParseClaim(j["claims"][i], path + ": claims[" + std::to_string(i) + "]"));
    claims.push_back(std::move(c));
  }
  return claims;
}

}  // namespace mogserve::bench
