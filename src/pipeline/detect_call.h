// The one request path of every front door — POST /v1/detect, the detection WebSocket, OIP REST
// and gRPC, the library's Detector: a call's images with the per-request options the option
// table parsed (over the pipeline's defaults) go to the pipeline, and their answers come back
// either one by one as each ends (SubmitEach: the WebSocket, the library's async calls) or all
// together, in the images' order, once the last one ends (SubmitAll: everything else).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mogserve/options.h"
#include "pipeline/pipeline.h"

namespace mogserve::pipeline {

struct DetectCall {
  std::vector<ImageInput> images;
  RequestOptions options;  // unset fields: the pipeline's defaults
  std::string client;      // fairness / latest_only key (API key, remote address, socket)
  bool latest_only = false;
  SubmitMode mode = SubmitMode::kRefuse;
};

// The pipeline request for `image` with `options` over `defaults`: priority (a name the option
// table already checked; unset = api), timeout, per-image detection settings.
SubmitRequest MakeSubmitRequest(ImageInput image, const RequestOptions& options,
                                const DetectOptions& defaults);

// `each(i, result)` runs once per image, as image i ends (any order; on a pipeline thread, or on
// this one for images refused at once).
using EachResult = std::function<void(size_t index, RequestResult result)>;
void SubmitEach(Pipeline& pipeline, DetectCall call, EachResult each);

// `all(results)` runs once, when the last image ends, with one result per image in order.
using AllResults = std::function<void(std::vector<RequestResult> results)>;
void SubmitAll(Pipeline& pipeline, DetectCall call, AllResults all);

}  // namespace mogserve::pipeline
