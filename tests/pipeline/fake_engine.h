// Test doubles for the pipeline: a scripted fake engine, a recorder of what the pipeline did, and
// helpers. Deterministic: the fake engine blocks in Forward until the test releases it (or returns
// at once in open mode), and time is a ManualTimeSource; nothing sleeps.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "engine/engine.h"
#include "pipeline/pipeline.h"
#include "pipeline/time_source.h"

namespace mogserve::pipeline::testing {

using scheduler::Outcome;
using scheduler::Priority;
using std::chrono::milliseconds;

// Forward records each batch and, unless open, blocks until the test releases it. Outputs: one
// anchor per row whose score is the row canvas's first byte / 255 (the test image's tag), so a
// result shows which canvas its row came from. Postprocess returns that as one face spanning
// the picture, mapped through the letterbox.
class FakeEngine final : public engine::Engine, public model::OutputDecoder {
 public:
  struct Call {
    int width = 0, height = 0;
    int rows = 0;    // canvases
    int padded = 0;  // padded_batch_size
    std::vector<int> tags;
  };

  explicit FakeEngine(bool open = false, TimeSource* time = nullptr) : open_(open), time_(time) {
    info_.model = "fake";
    info_.device = "cpu";
    info_.precision = "fp32";
  }

  const engine::EngineInfo& info() const override { return info_; }
  std::shared_ptr<const model::FaceModel> model() const override { return nullptr; }
  DetectOptions default_detect_options() const override { return {}; }
  int64_t MacsPerImage(int width, int height) const override { return int64_t{width} * height; }

  StatusOr<engine::BatchOutputs> Forward(const engine::CanvasBatch& batch) override {
    Call call;
    call.width = batch.width;
    call.height = batch.height;
    call.rows = static_cast<int>(batch.canvases.size());
    call.padded = batch.padded_batch_size;
    for (const uint8_t* c : batch.canvases) call.tags.push_back(c[0]);
    std::optional<Status> failure;
    Duration latency{};
    {
      std::unique_lock<std::mutex> lock(mu_);
      const size_t index = calls_.size();
      calls_.push_back(call);
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_ || released_ > index; });
      if (!failures_.empty() && failures_.front() == index) {
        failures_.pop_front();
        failure = Internal("fake engine failure in batch " + std::to_string(index));
      }
      latency = latency_per_batch_ + latency_per_image_ * call.rows;
      const int64_t peak =
          memory_.in_use_bytes + static_cast<int64_t>(std::max(call.rows, call.padded)) *
                                     batch.width * batch.height * bytes_per_pixel_;
      memory_.peak_in_use_bytes = std::max(memory_.peak_in_use_bytes, peak);
    }
    // Open mode with a manual clock: the batch "takes" its scripted latency.
    if (time_ != nullptr && latency > Duration::zero()) {
      static_cast<ManualTimeSource*>(time_)->Advance(latency);
    }
    if (failure) return *failure;
    engine::BatchOutputs out;
    out.batch = call.rows;
    out.anchors = 1;
    out.canvas_width = batch.width;
    out.canvas_height = batch.height;
    out.box_encodings.assign(static_cast<size_t>(call.rows) * 4, 0.f);
    for (int tag : call.tags) out.scores.push_back(tag / 255.f);
    return out;
  }

  std::vector<Detection> Postprocess(const model::OutputRows& rows,
                                     const DetectOptions&) const override {
    const image::Letterbox& lb = rows.letterbox;
    Detection d;
    d.x2 = static_cast<float>(lb.content_width * lb.to_source_x);
    d.y2 = static_cast<float>(lb.content_height * lb.to_source_y);
    d.score = rows.scores[0];
    return {d};
  }

  engine::MemoryStats Memory() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return memory_;
  }
  void ResetPeakMemory() override {
    std::lock_guard<std::mutex> lock(mu_);
    memory_.peak_in_use_bytes = memory_.in_use_bytes;
  }
  StatusOr<std::unique_ptr<engine::Engine>> NewInstance() const override {
    return std::unique_ptr<engine::Engine>(new FakeEngine(open_, time_));
  }

  // Waits until `n` Forward calls have started in total.
  void WaitForCalls(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return calls_.size() >= n; });
  }
  // Lets the next blocked (or future) Forward call return.
  void Release(int n = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    released_ += n;
    cv_.notify_all();
  }
  // Every Forward returns at once from now on.
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Forward call number `index` (0-based) fails.
  void FailCall(size_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_.push_back(index);
  }
  // Open mode with a ManualTimeSource: each batch advances the clock by b + a·rows.
  void SetLatency(Duration per_batch, Duration per_image) {
    std::lock_guard<std::mutex> lock(mu_);
    latency_per_batch_ = per_batch;
    latency_per_image_ = per_image;
  }
  // Memory: a forward pass of n rows of w x h needs n·w·h·bytes_per_pixel above in_use.
  void SetMemory(int64_t capacity, int64_t in_use, int64_t bytes_per_pixel) {
    std::lock_guard<std::mutex> lock(mu_);
    memory_.capacity_bytes = capacity;
    memory_.in_use_bytes = in_use;
    memory_.peak_in_use_bytes = in_use;
    bytes_per_pixel_ = bytes_per_pixel;
  }
  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  engine::EngineInfo info_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool open_;
  TimeSource* time_;
  std::vector<Call> calls_;
  size_t released_ = 0;
  std::deque<size_t> failures_;
  Duration latency_per_batch_{};
  Duration latency_per_image_{};
  engine::MemoryStats memory_;
  int64_t bytes_per_pixel_ = 0;
};

// Records batches (with request ids) and results; lets the test wait for a number of results.
class Recorder final : public PipelineObserver {
 public:
  void OnBatchStarted(int instance, const scheduler::BatchPlan& plan) override {
    std::lock_guard<std::mutex> lock(mu_);
    batches_.push_back(plan.ids);
  }
  void OnRequestEnded(const RequestResult& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(results_.count(r.id), 0u) << "request " << r.id << " ended twice";
    results_[r.id] = r;
    order_.push_back(r.id);
    cv_.notify_all();
  }
  void WaitForResults(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return results_.size() >= n; });
  }
  // Waits until `id` has ended and returns its result.
  RequestResult WaitFor(uint64_t id) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return results_.count(id) > 0; });
    return results_.at(id);
  }
  bool Ended(uint64_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    return results_.count(id) > 0;
  }
  size_t ended() const {
    std::lock_guard<std::mutex> lock(mu_);
    return results_.size();
  }
  // The ids of every batch started so far, in dispatch order.
  std::vector<std::vector<uint64_t>> batches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }
  bool EverRan(uint64_t id) const {
    for (const auto& b : batches()) {
      for (uint64_t x : b) {
        if (x == id) return true;
      }
    }
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<uint64_t>> batches_;
  std::map<uint64_t, RequestResult> results_;
  std::vector<uint64_t> order_;
};

// A decoded test picture whose pixels all equal `tag`.
inline image::Image TaggedImage(int tag, int width = 8, int height = 8) {
  image::Image img(width, height);
  std::fill(img.data.begin(), img.data.end(), static_cast<uint8_t>(tag));
  return img;
}

}  // namespace mogserve::pipeline::testing
