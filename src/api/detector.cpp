// The public Detector (include/mogserve/detector.h) on the one serving stack (api/serving_stack.h):
// every call becomes a pipeline request, so concurrent callers share forward passes.
#include "mogserve/detector.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>

#include "api/detector_builder.h"
#include "api/serving_stack.h"
#include "pipeline/pipeline.h"

namespace mogserve {
namespace {

// Set while this thread runs a Callback. The blocking calls refuse to run there: a callback runs
// on a post-processing thread, and the answer they would wait for needs one of those threads.
thread_local bool in_callback = false;

Status BlockingCallFromCallback() {
  return FailedPrecondition(
      "Detect/DetectAll called from a Detector callback, which runs on the post-processing "
      "thread its answer would need; call DetectAsync there instead");
}

}  // namespace

class Detector::Impl {
 public:
  api::LoadedEngines loaded;
  api::ServingPipeline serving;
  DetectorInfo info;
  int64_t max_pixels = 0;
  std::atomic<bool> shut_down{false};
  std::atomic<int64_t> submitted{0};
  std::atomic<int64_t> completed{0};
  std::atomic<int64_t> failed{0};

  // Hands `input` to the pipeline; `done` gets the one answer. kBlock waits for room (the
  // synchronous calls); kRefuse ends a request finding the queue full at once (DetectAsync).
  void Submit(pipeline::ImageInput input, Callback done, pipeline::SubmitMode mode) {
    ++submitted;
    if (shut_down.load()) {
      Finish(done, ShutDownStatus());
      return;
    }
    pipeline::SubmitRequest request;
    request.image = std::move(input);
    serving.pipeline->Submit(
        std::move(request),
        [this, done = std::move(done)](pipeline::RequestResult r) {
          if (r.status.ok()) {
            Finish(done, std::move(r.result));
          } else if (r.status.code() == StatusCode::kCancelled && shut_down.load()) {
            Finish(done, ShutDownStatus());  // raced with Shutdown: refused, not run
          } else {
            Finish(done, std::move(r.status));
          }
        },
        mode);
  }

  void Finish(const Callback& done, StatusOr<DetectResult> result) {
    ++(result.ok() ? completed : failed);
    const bool outer = in_callback;
    in_callback = true;
    done(std::move(result));
    in_callback = outer;
  }

  static Status ShutDownStatus() {
    return Unavailable("the detector is shut down (Detector::Shutdown was called); open a new one");
  }

  // The pixels as the pipeline's decoded input, or the reason they cannot be used.
  StatusOr<pipeline::ImageInput> FromPixels(const Pixels& p) const {
    if (p.data == nullptr) return InvalidArgument("pixels.data: null; pass the RGB rows");
    if (p.width <= 0 || p.height <= 0) {
      return InvalidArgument("pixels: size " + std::to_string(p.width) + "x" +
                             std::to_string(p.height) + " is empty; width and height must be > 0");
    }
    const int64_t row = int64_t{p.width} * 3;
    const int64_t stride = p.stride == 0 ? row : p.stride;
    if (stride < row) {
      return InvalidArgument("pixels.stride: " + std::to_string(p.stride) +
                             " bytes is less than a row of " + std::to_string(p.width) +
                             " RGB pixels (" + std::to_string(row) + "); 0 means width * 3");
    }
    const int64_t pixels = int64_t{p.width} * p.height;
    if (pixels > max_pixels) {
      return ResourceExhausted("pixels: " + std::to_string(p.width) + "x" +
                               std::to_string(p.height) + " = " + std::to_string(pixels) +
                               " pixels, more than max_pixels (" + std::to_string(max_pixels) +
                               ")");
    }
    pipeline::ImageInput input;
    input.decoded = image::Image(p.width, p.height);
    for (int y = 0; y < p.height; ++y) {
      std::memcpy(input.decoded.data.data() + y * row, p.data + y * stride,
                  static_cast<size_t>(row));
    }
    return input;
  }

  static StatusOr<pipeline::ImageInput> FromEncoded(std::vector<uint8_t> bytes) {
    if (bytes.empty()) {
      return InvalidArgument("encoded: 0 bytes; pass the bytes of a JPEG, PNG or WebP image");
    }
    pipeline::ImageInput input;
    input.bytes = std::move(bytes);
    return input;
  }

  // Submits and waits for the answer.
  StatusOr<DetectResult> Wait(StatusOr<pipeline::ImageInput> input) {
    if (in_callback) input = BlockingCallFromCallback();
    if (!input.ok()) {
      ++submitted;
      ++failed;
      return input.status();
    }
    std::promise<StatusOr<DetectResult>> promise;
    auto future = promise.get_future();
    Submit(
        std::move(input).value(),
        [&promise](StatusOr<DetectResult> r) { promise.set_value(std::move(r)); },
        pipeline::SubmitMode::kBlock);
    return future.get();
  }

  void Async(StatusOr<pipeline::ImageInput> input, Callback done) {
    if (!input.ok()) {
      ++submitted;
      Finish(done, input.status());
      return;
    }
    Submit(std::move(input).value(), std::move(done), pipeline::SubmitMode::kRefuse);
  }
};

namespace api {

StatusOr<std::unique_ptr<Detector>> DetectorBuilder::Open(const DetectorOptions& options,
                                                          const OptionNames& names) {
  // Bad options before the slow load.
  MOGSERVE_ASSIGN_OR_RETURN(const engine::EngineOptions engine_options,
                            CheckOptions(options, names));
  auto impl = std::make_unique<Detector::Impl>();
  MOGSERVE_ASSIGN_OR_RETURN(impl->loaded, LoadEngines(engine_options, options, names));
  MOGSERVE_ASSIGN_OR_RETURN(impl->serving,
                            StartPipeline(options, impl->loaded, /*observer=*/nullptr, names));
  const api::StackDescription& d = impl->serving.description;
  DetectorInfo& info = impl->info;
  info.model = d.info.model;
  info.variant = d.info.variant;
  info.weights = d.info.weights;
  info.device = d.info.device;
  info.precision = d.info.precision;
  info.precision_choice = d.info.precision_choice;
  info.cpu = d.info.DescribeCpu();
  info.cpu_isa = d.info.cpu_isa;
  info.description = d.info.Describe();
  info.instances = d.instances;
  for (int b = 0; b < impl->loaded.buckets.size(); ++b) {
    const pipeline::CanvasShape shape = impl->loaded.buckets.shape(b);
    if (int64_t{shape.width} * shape.height > int64_t{info.input_width} * info.input_height) {
      info.input_width = shape.width;
      info.input_height = shape.height;
    }
  }
  info.input_policy = d.input_policy;
  info.scheduler = d.scheduler;
  info.buffer_plan = d.buffer_plan;
  info.defaults = d.defaults;
  impl->max_pixels = options.max_pixels;
  return std::unique_ptr<Detector>(new Detector(std::move(impl)));
}

}  // namespace api

StatusOr<std::unique_ptr<Detector>> Detector::Open(const DetectorOptions& options) {
  return api::DetectorBuilder::Open(options, api::OptionNames());
}

Detector::Detector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Detector::~Detector() {
  Shutdown();
  impl_->serving.pipeline.reset();  // joins its threads before the engines go
}

StatusOr<DetectResult> Detector::Detect(std::span<const uint8_t> encoded) {
  return impl_->Wait(Impl::FromEncoded({encoded.begin(), encoded.end()}));
}

StatusOr<DetectResult> Detector::Detect(const Pixels& pixels) {
  return impl_->Wait(impl_->FromPixels(pixels));
}

std::vector<StatusOr<DetectResult>> Detector::DetectAll(
    std::span<const std::span<const uint8_t>> images) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::optional<StatusOr<DetectResult>>> slots(images.size());
  size_t answered = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    auto input = in_callback ? StatusOr<pipeline::ImageInput>(BlockingCallFromCallback())
                             : Impl::FromEncoded({images[i].begin(), images[i].end()});
    Callback done = [&, i](StatusOr<DetectResult> r) {
      std::lock_guard<std::mutex> lock(mu);
      slots[i].emplace(std::move(r));
      ++answered;
      cv.notify_all();
    };
    if (!input.ok()) {
      ++impl_->submitted;
      impl_->Finish(done, input.status());
      continue;
    }
    impl_->Submit(std::move(input).value(), std::move(done), pipeline::SubmitMode::kBlock);
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return answered == images.size(); });
  std::vector<StatusOr<DetectResult>> out;
  out.reserve(images.size());
  for (auto& slot : slots) out.push_back(std::move(*slot));
  return out;
}

void Detector::DetectAsync(std::vector<uint8_t> encoded, Callback done) {
  impl_->Async(Impl::FromEncoded(std::move(encoded)), std::move(done));
}

void Detector::DetectAsync(const Pixels& pixels, Callback done) {
  impl_->Async(impl_->FromPixels(pixels), std::move(done));
}

void Detector::DetectFileAsync(std::string path, Callback done) {
  if (path.empty()) {
    ++impl_->submitted;
    impl_->Finish(done, InvalidArgument("path: empty; pass the image file's path"));
    return;
  }
  pipeline::ImageInput input;
  input.path = std::move(path);
  impl_->Submit(std::move(input), std::move(done), pipeline::SubmitMode::kRefuse);
}

void Detector::Shutdown() {
  impl_->shut_down.store(true);
  impl_->serving.pipeline->Shutdown(pipeline::ShutdownMode::kDrain);
}

const DetectorInfo& Detector::info() const {
  return impl_->info;
}

DetectorStats Detector::stats() const {
  DetectorStats s;
  s.submitted = impl_->submitted.load();
  s.completed = impl_->completed.load();
  s.failed = impl_->failed.load();
  const pipeline::PipelineStats p = impl_->serving.pipeline->Stats();
  s.batches = p.batches;
  s.mean_batch_size = p.mean_batch_size();
  return s;
}

}  // namespace mogserve
