// The public Detector (include/mogserve/detector.h) on the one serving stack (api/serving_stack.h):
// every call becomes a pipeline request, so concurrent callers share forward passes.
#include "mogserve/detector.h"

#include <atomic>
#include <cstring>
#include <future>

#include "api/detector_builder.h"
#include "api/serving_stack.h"
#include "pipeline/detect_call.h"

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

  // The answer of one image, counted.
  StatusOr<DetectResult> Answer(pipeline::RequestResult r) {
    StatusOr<DetectResult> answer = std::move(r.result);
    if (r.status.code() == StatusCode::kCancelled && shut_down.load()) {
      answer = ShutDownStatus();  // raced with Shutdown: refused, not run
    } else if (!r.status.ok()) {
      answer = std::move(r.status);
    }
    ++(answer.ok() ? completed : failed);
    return answer;
  }

  // Hands `input` to the pipeline as a call of one image (pipeline/detect_call.h); `done` gets
  // the one answer, on a pipeline thread (DetectAsync, DetectFileAsync: a full queue refuses).
  void Submit(pipeline::ImageInput input, Callback done) {
    ++submitted;
    if (shut_down.load()) {
      ++failed;
      return Finish(done, ShutDownStatus());
    }
    pipeline::DetectCall call;
    call.images.push_back(std::move(input));
    pipeline::SubmitEach(*serving.pipeline, std::move(call),
                         [this, done = std::move(done)](size_t, pipeline::RequestResult r) {
                           Finish(done, Answer(std::move(r)));
                         });
  }

  void Finish(const Callback& done, StatusOr<DetectResult> result) {
    const bool outer = in_callback;
    in_callback = true;
    done(std::move(result));
    in_callback = outer;
  }

  // Hands the inputs that are valid to the pipeline as one call and waits for all the answers
  // (Detect, DetectAll: waiting for room in the queue); one answer per input, in order.
  std::vector<StatusOr<DetectResult>> Wait(std::vector<StatusOr<pipeline::ImageInput>> inputs) {
    std::vector<StatusOr<DetectResult>> out;
    pipeline::DetectCall call;
    call.mode = pipeline::SubmitMode::kBlock;
    std::vector<size_t> slots;  // out's index of each of call.images
    for (StatusOr<pipeline::ImageInput>& input : inputs) {
      ++submitted;
      if (in_callback) input = BlockingCallFromCallback();
      if (shut_down.load() && input.ok()) input = ShutDownStatus();
      if (!input.ok()) {
        ++failed;
        out.push_back(input.status());
        continue;
      }
      slots.push_back(out.size());
      out.push_back(Internal("not answered"));  // the answer's place
      call.images.push_back(std::move(input).value());
    }
    if (call.images.empty()) return out;
    std::promise<std::vector<pipeline::RequestResult>> answered;
    auto future = answered.get_future();
    pipeline::SubmitAll(*serving.pipeline, std::move(call),
                        [&answered](std::vector<pipeline::RequestResult> results) {
                          answered.set_value(std::move(results));
                        });
    std::vector<pipeline::RequestResult> results = future.get();
    for (size_t k = 0; k < slots.size(); ++k) out[slots[k]] = Answer(std::move(results[k]));
    return out;
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

  void Async(StatusOr<pipeline::ImageInput> input, Callback done) {
    if (!input.ok()) {
      ++submitted;
      ++failed;
      return Finish(done, input.status());
    }
    Submit(std::move(input).value(), std::move(done));
  }
};

namespace api {
namespace {

// What Detector::info() tells: the serving stack's description, and the largest canvas.
DetectorInfo Describe(const StackDescription& d, const pipeline::ShapeBuckets& buckets) {
  DetectorInfo info{.model = d.info.model,
                    .variant = d.info.variant,
                    .weights = d.info.weights,
                    .device = d.info.device,
                    .precision = d.info.precision,
                    .precision_choice = d.info.precision_choice,
                    .cpu = d.info.DescribeCpu(),
                    .cpu_isa = d.info.cpu_isa,
                    .description = d.info.Describe(),
                    .instances = d.instances,
                    .input_policy = d.input_policy,
                    .landmarks = d.landmarks,
                    .scheduler = d.scheduler,
                    .buffer_plan = d.buffer_plan,
                    .defaults = d.defaults};
  for (int b = 0; b < buckets.size(); ++b) {
    const pipeline::CanvasShape shape = buckets.shape(b);
    if (int64_t{shape.width} * shape.height > int64_t{info.input_width} * info.input_height) {
      info.input_width = shape.width;
      info.input_height = shape.height;
    }
  }
  return info;
}

}  // namespace

StatusOr<std::unique_ptr<Detector>> DetectorBuilder::Open(const DetectorOptions& options,
                                                          const OptionNames& names) {
  // Bad options before the slow load.
  MOGSERVE_ASSIGN_OR_RETURN(const engine::EngineOptions engine_options,
                            CheckOptions(options, names));
  auto impl = std::make_unique<Detector::Impl>();
  MOGSERVE_ASSIGN_OR_RETURN(impl->loaded, LoadEngines(engine_options, options, names));
  MOGSERVE_ASSIGN_OR_RETURN(impl->serving,
                            StartPipeline(options, impl->loaded, /*observer=*/nullptr, names));
  impl->info = Describe(impl->serving.description, impl->loaded.buckets);
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
  std::vector<StatusOr<pipeline::ImageInput>> input;
  input.push_back(Impl::FromEncoded({encoded.begin(), encoded.end()}));
  return std::move(impl_->Wait(std::move(input))[0]);
}

StatusOr<DetectResult> Detector::Detect(const Pixels& pixels) {
  std::vector<StatusOr<pipeline::ImageInput>> input;
  input.push_back(impl_->FromPixels(pixels));
  return std::move(impl_->Wait(std::move(input))[0]);
}

std::vector<StatusOr<DetectResult>> Detector::DetectAll(
    std::span<const std::span<const uint8_t>> images) {
  std::vector<StatusOr<pipeline::ImageInput>> inputs;
  inputs.reserve(images.size());
  for (const std::span<const uint8_t>& image : images) {
    inputs.push_back(Impl::FromEncoded({image.begin(), image.end()}));
  }
  return impl_->Wait(std::move(inputs));
}

void Detector::DetectAsync(std::vector<uint8_t> encoded, Callback done) {
  impl_->Async(Impl::FromEncoded(std::move(encoded)), std::move(done));
}

void Detector::DetectAsync(const Pixels& pixels, Callback done) {
  impl_->Async(impl_->FromPixels(pixels), std::move(done));
}

void Detector::DetectFileAsync(std::string path, Callback done) {
  if (path.empty()) {
    return impl_->Async(InvalidArgument("path: empty; pass the image file's path"), std::move(done));
  }
  pipeline::ImageInput input;
  input.path = std::move(path);
  impl_->Submit(std::move(input), std::move(done));
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
