// The library-internal way to open a Detector: Detector::Open with errors naming the options as
// the caller calls them (`mogserve detect` passes its flag names, so a bad --model says
// "--model: ..." rather than "model: ...").
#pragma once

#include <memory>

#include "api/serving_stack.h"
#include "mogserve/detector.h"

namespace mogserve::api {

class DetectorBuilder {
 public:
  static StatusOr<std::unique_ptr<Detector>> Open(const DetectorOptions& options,
                                                  const OptionNames& names);
};

}  // namespace mogserve::api
