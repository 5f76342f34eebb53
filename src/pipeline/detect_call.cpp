#include "pipeline/detect_call.h"

#include <atomic>
#include <memory>

#include "options/option_table.h"
#include "scheduler/request.h"

namespace mogserve::pipeline {
namespace {

// The answers of one SubmitAll call, filled as its images end; the last one hands them over.
class Gather {
 public:
  Gather(size_t images, AllResults all) : all_(std::move(all)), results_(images), pending_(images) {}
  void Set(size_t i, RequestResult r) {
    results_[i] = std::move(r);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) all_(std::move(results_));
  }

 private:
  AllResults all_;
  std::vector<RequestResult> results_;
  std::atomic<size_t> pending_;
};

}  // namespace

SubmitRequest MakeSubmitRequest(ImageInput image, const RequestOptions& options,
                                const DetectOptions& defaults) {
  SubmitRequest s;
  s.image = std::move(image);
  if (options.priority) {
    // The option table checked the name against the priorities' names.
    s.priority = scheduler::ParsePriority(*options.priority).value_or(scheduler::Priority::kApi);
  }
  if (options.timeout_ms) s.timeout = std::chrono::milliseconds(*options.timeout_ms);
  s.detect = opt::ApplyDetectOverrides(options, defaults);
  return s;
}

void SubmitEach(Pipeline& pipeline, DetectCall call, EachResult each) {
  auto shared = std::make_shared<const EachResult>(std::move(each));
  for (size_t i = 0; i < call.images.size(); ++i) {
    SubmitRequest request =
        MakeSubmitRequest(std::move(call.images[i]), call.options, pipeline.default_detect());
    request.client = call.client;
    request.latest_only = call.latest_only;
    pipeline.Submit(
        std::move(request), [shared, i](RequestResult r) { (*shared)(i, std::move(r)); },
        call.mode);
  }
}

void SubmitAll(Pipeline& pipeline, DetectCall call, AllResults all) {
  if (call.images.empty()) return all({});
  auto gather = std::make_shared<Gather>(call.images.size(), std::move(all));
  SubmitEach(pipeline, std::move(call),
             [gather](size_t i, RequestResult r) { gather->Set(i, std::move(r)); });
}

}  // namespace mogserve::pipeline
