// What a started serving stack runs, in words and numbers: the banner, /v1/models, the gRPC
// ModelMetadata and the library's DetectorInfo all read this one description.
#pragma once

#include <string>

#include "engine/engine.h"
#include "mogserve/result.h"

namespace mogserve::pipeline {

struct StackDescription {
  engine::EngineInfo info;
  std::string input_policy;  // ShapeBuckets::Describe()
  std::string landmarks;     // "face-api's 68-point net, five points", "none", ...
  std::string buffer_plan;   // BufferPlan::Describe(); "" without a warm-up
  DetectOptions defaults;    // the per-image settings every request starts from
  std::string scheduler;     // "continuous, max batch 16, max delay 2 ms"
  int instances = 1;
};

}  // namespace mogserve::pipeline
