// The original deployment guide's claims (docs/bench/guide_claims.json) that `bench report`
// puts next to what it measured: the numbers are data, read at run time; the code only knows
// how to measure each claim id.
#pragma once

#include <string>
#include <vector>

#include "mogserve/status.h"

namespace mogserve::bench {

struct GuideClaim {
  std::string id;     // what the report measures for it: see KnownGuideClaimIds()
  std::string claim;  // the row's title
  std::string guide;  // the guide's numbers, as the guide puts them
  double ratio = 0;   // before/after (times) or after/before (rates, memory, spread)
};

// "reduced_precision", "batch_per_image", "throughput", "utilisation", "peak_memory",
// "video_streams", "latency_stddev".
const std::vector<std::string>& KnownGuideClaimIds();

// `flag` when given, else docs/bench/guide_claims.json in the working directory or next to the
// build, else share/mogserve/guide_claims.json of an installed mogserve (<folder of the
// executable>/../share/mogserve); "" when none exists.
std::string FindGuideClaims(const std::string& flag);

// Reads and checks the file: kNotFound naming the path when missing; kInvalidArgument naming
// the path, the claim and the field for a bad one (unknown id, before/after not > 0, ratio not
// "before/after" or "after/before").
StatusOr<std::vector<GuideClaim>> LoadGuideClaims(const std::string& path);

}  // namespace mogserve::bench
