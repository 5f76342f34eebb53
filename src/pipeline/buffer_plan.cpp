#include "pipeline/buffer_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mogserve::pipeline {
namespace {

std::string Mib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", bytes / (1024.0 * 1024.0));
  return text;
}

std::vector<int> DefaultBuckets(const ShapeBuckets& buckets) {
  if (buckets.policy() == InputPolicy::kModelScope || buckets.policy() == InputPolicy::kNative) {
    return {buckets.Place(640, 640).bucket};
  }
  std::vector<int> all(buckets.size());
  for (int i = 0; i < buckets.size(); ++i) all[i] = i;
  return all;
}

Status Validate(const ShapeBuckets& buckets, const BufferPlanOptions& o,
                const std::vector<int>& measure) {
  if (o.batch_sizes.empty()) return InvalidArgument("buffer plan: no candidate batch sizes");
  for (size_t i = 0; i < o.batch_sizes.size(); ++i) {
    if (o.batch_sizes[i] < 1 || (i > 0 && o.batch_sizes[i] <= o.batch_sizes[i - 1])) {
      return InvalidArgument("buffer plan: batch sizes must be >= 1 and strictly increasing");
    }
  }
  if (o.memory_fraction <= 0 || o.memory_fraction > 1) {
    return InvalidArgument("memory fraction must be in (0, 1]");
  }
  if (o.throughput_knee < 0 || o.throughput_knee > 1) {
    return InvalidArgument("throughput knee must be in [0, 1] (0 = batches capped by memory only)");
  }
  if (o.timed_passes < 1 || o.warmup_passes < 0) {
    return InvalidArgument("buffer plan: timed passes must be >= 1, warm-up passes >= 0");
  }
  for (int b : measure) {
    if (b < 0 || b >= buckets.size()) {
      return InvalidArgument("buffer plan: bucket " + std::to_string(b) + " does not exist");
    }
  }
  return Status::Ok();
}

// The median of options.timed_passes forward passes of `batch` after the warm-up passes, in ms;
// a failed pass is the error, naming the bucket and batch size.
StatusOr<double> MedianForwardMs(engine::Engine& engine, const engine::CanvasBatch& batch,
                                 const BufferPlanOptions& options, TimeSource* time) {
  std::vector<double> timed_ms;
  for (int pass = 0; pass < options.warmup_passes + options.timed_passes; ++pass) {
    const TimePoint t0 = time->Now();
    StatusOr<engine::BatchOutputs> out = engine.Forward(batch);
    if (!out.ok()) {
      return Status(out.status().code(), "buffer plan: bucket " + std::to_string(batch.width) +
                                             "x" + std::to_string(batch.height) + ", batch " +
                                             std::to_string(batch.canvases.size()) + ": " +
                                             out.status().message());
    }
    if (pass >= options.warmup_passes) {
      timed_ms.push_back(std::chrono::duration<double, std::milli>(time->Now() - t0).count());
    }
  }
  std::sort(timed_ms.begin(), timed_ms.end());
  const size_t mid = timed_ms.size() / 2;
  return timed_ms.size() % 2 == 1 ? timed_ms[mid] : (timed_ms[mid - 1] + timed_ms[mid]) / 2;
}

// One bucket measured: its rows, the largest batch size that fits, and the most bytes per image
// and canvas pixel over its rows that ran.
struct BucketRun {
  std::vector<BufferPlanRow> rows;
  int best = 0;
  double bytes_per_px = 0;
};

// Each candidate batch size run on one zero canvas repeated (the engine copies it into its
// staging buffer per row): median latency and peak memory, until a batch does not fit `budget`,
// or is predicted not to from the bytes per image so far (that row is not run).
StatusOr<BucketRun> MeasureBucket(engine::Engine& engine, int bucket, const CanvasShape& shape,
                                  const BufferPlanOptions& options, int64_t budget,
                                  TimeSource* time) {
  const int64_t pixels = int64_t{shape.width} * shape.height;
  const std::vector<uint8_t> zeros(static_cast<size_t>(pixels) * 3, 0);
  BucketRun run;
  double bytes_per_image = 0;
  for (int n : options.batch_sizes) {
    BufferPlanRow row;
    row.bucket = bucket;
    row.shape = shape;
    row.batch_size = n;
    if (bytes_per_image > 0 && bytes_per_image * n > static_cast<double>(budget)) {
      row.peak_bytes = static_cast<int64_t>(bytes_per_image * n);  // predicted, not run
      run.rows.push_back(row);
      break;
    }
    engine::CanvasBatch batch;
    batch.width = shape.width;
    batch.height = shape.height;
    batch.canvases.assign(n, zeros.data());
    const int64_t before = engine.Memory().in_use_bytes;
    engine.ResetPeakMemory();
    MOGSERVE_ASSIGN_OR_RETURN(row.latency_ms, MedianForwardMs(engine, batch, options, time));
    row.measured = true;
    row.peak_bytes = std::max<int64_t>(0, engine.Memory().peak_in_use_bytes - before);
    row.fits = row.peak_bytes <= budget;
    run.rows.push_back(row);
    if (!row.fits) break;
    run.best = n;
    bytes_per_image = static_cast<double>(row.peak_bytes) / n;
    run.bytes_per_px = std::max(run.bytes_per_px, bytes_per_image / pixels);
  }
  return run;
}

double PixelsOf(const CanvasShape& shape) {
  return double{1} * shape.width * shape.height;
}

}  // namespace

StatusOr<BufferPlan> BufferPlan::Measure(engine::Engine& engine, const ShapeBuckets& buckets,
                                         const BufferPlanOptions& options, TimeSource* time) {
  SteadyTimeSource steady;
  if (time == nullptr) time = &steady;
  const std::vector<int> measure =
      options.buckets.empty() ? DefaultBuckets(buckets) : options.buckets;
  MOGSERVE_RETURN_IF_ERROR(Validate(buckets, options, measure));

  BufferPlan plan;
  plan.candidates_ = options.batch_sizes;
  const engine::MemoryStats start = engine.Memory();
  plan.capacity_bytes_ = start.capacity_bytes;
  plan.in_use_bytes_ = start.in_use_bytes;
  if (options.budget_bytes > 0) {
    plan.budget_bytes_ = options.budget_bytes;
  } else if (start.capacity_bytes > 0) {
    plan.budget_bytes_ =
        std::max<int64_t>(1, static_cast<int64_t>(options.memory_fraction * start.capacity_bytes) -
                                 start.in_use_bytes);
  }
  const int64_t budget = plan.budget_bytes_ > 0 ? plan.budget_bytes_ : INT64_MAX;
  plan.max_batch_.assign(buckets.size(), 0);
  plan.knee_batch_.assign(buckets.size(), 0);
  plan.throughput_knee_ = options.throughput_knee;

  double worst_bytes_per_px = 0;  // per image and canvas pixel, over the measured rows
  for (int b : measure) {
    MOGSERVE_ASSIGN_OR_RETURN(BucketRun run,
                              MeasureBucket(engine, b, buckets.shape(b), options, budget, time));
    plan.rows_.insert(plan.rows_.end(), run.rows.begin(), run.rows.end());
    worst_bytes_per_px = std::max(worst_bytes_per_px, run.bytes_per_px);
    plan.max_batch_[b] = std::max(1, run.best);
    plan.knee_batch_[b] = plan.KneeOf(b);
    ++plan.measured_buckets_;
  }
  plan.Extrapolate(buckets, measure, worst_bytes_per_px, budget);
  return plan;
}

void BufferPlan::Extrapolate(const ShapeBuckets& buckets, const std::vector<int>& measured,
                             double worst_bytes_per_px, int64_t budget) {
  // Unmeasured buckets' caps: by pixels from the worst measured bytes per pixel.
  for (int b = 0; b < buckets.size(); ++b) {
    if (max_batch_[b] > 0) continue;
    const double per_image = worst_bytes_per_px * PixelsOf(buckets.shape(b));
    int best = candidates_.front();
    for (int n : candidates_) {
      if (per_image * n <= static_cast<double>(budget)) best = n;
    }
    max_batch_[b] = std::max(1, best);
  }
  // Unmeasured buckets' knees: the knee of the measured bucket nearest in pixels.
  for (int b = 0; b < buckets.size(); ++b) {
    if (knee_batch_[b] > 0) continue;
    int knee = max_batch_[b];
    double nearest = -1;
    for (int m : measured) {
      const double distance =
          std::abs(std::log(PixelsOf(buckets.shape(b)) / PixelsOf(buckets.shape(m))));
      if (nearest < 0 || distance < nearest) {
        nearest = distance;
        knee = knee_batch_[m];
      }
    }
    knee_batch_[b] = std::clamp(knee, 1, max_batch_[b]);
  }
}

int BufferPlan::KneeOf(int bucket) const {
  if (throughput_knee_ <= 0) return max_batch_[bucket];
  double best = 0;
  for (const BufferPlanRow& r : rows_) {
    if (r.bucket == bucket && r.measured && r.fits && r.latency_ms > 0) {
      best = std::max(best, r.batch_size / r.latency_ms);
    }
  }
  for (const BufferPlanRow& r : rows_) {
    if (r.bucket == bucket && r.measured && r.fits && r.latency_ms > 0 &&
        r.batch_size / r.latency_ms >= throughput_knee_ * best) {
      return r.batch_size;  // rows are in increasing batch size
    }
  }
  return max_batch_[bucket];
}

int BufferPlan::max_batch_size(int bucket) const {
  return bucket >= 0 && bucket < static_cast<int>(max_batch_.size()) ? max_batch_[bucket] : 1;
}

int BufferPlan::knee_batch_size(int bucket) const {
  return bucket >= 0 && bucket < static_cast<int>(knee_batch_.size()) ? knee_batch_[bucket] : 1;
}

std::vector<int> BufferPlan::planned_batch_sizes() const {
  const int largest =
      max_batch_.empty() ? 1 : *std::max_element(max_batch_.begin(), max_batch_.end());
  std::vector<int> sizes;
  for (int n : candidates_) {
    if (n <= largest) sizes.push_back(n);
  }
  return sizes;
}

void BufferPlan::ApplyTo(scheduler::SchedulerConfig* config, bool pad_to_planned) const {
  config->bucket_max_batch_size.clear();
  for (int cap : knee_batch_) {
    config->bucket_max_batch_size.push_back(std::clamp(cap, 1, config->max_batch_size));
  }
  if (pad_to_planned) {
    // Padding may not grow a batch past its cap: keep the planned sizes below the largest cap
    // and the cap itself, so every admissible batch has a planned size to pad to.
    const int top = *std::max_element(config->bucket_max_batch_size.begin(),
                                      config->bucket_max_batch_size.end());
    std::vector<int> sizes;
    for (int n : planned_batch_sizes()) {
      if (n < top) sizes.push_back(n);
    }
    sizes.push_back(top);
    config->planned_batch_sizes = sizes;
  }
}

std::vector<LatencySample> BufferPlan::latency_samples() const {
  std::vector<LatencySample> samples;
  for (const BufferPlanRow& row : rows_) {
    if (!row.measured || !row.fits) continue;
    samples.push_back({row.bucket, row.batch_size,
                       std::chrono::duration_cast<Duration>(
                           std::chrono::duration<double, std::milli>(row.latency_ms))});
  }
  return samples;
}

std::string BufferPlan::Describe() const {
  std::string text = "buffer plan: budget ";
  if (budget_bytes_ > 0) {
    text += Mib(budget_bytes_) + " (capacity " + Mib(capacity_bytes_) + ", in use " +
            Mib(in_use_bytes_) + ")";
  } else {
    text += "unlimited (the engine reports no memory capacity)";
  }
  text += ", " + std::to_string(measured_buckets_) + " of " + std::to_string(max_batch_.size()) +
          " buckets measured\n";
  text += "  bucket  canvas      batch  latency ms  ms/image  peak memory  fits\n";
  char line[160];
  for (const BufferPlanRow& r : rows_) {
    const std::string canvas = std::to_string(r.shape.width) + "x" + std::to_string(r.shape.height);
    if (r.measured) {
      std::snprintf(line, sizeof(line), "  %6d  %-10s  %5d  %10.2f  %8.2f  %11s  %s\n", r.bucket,
                    canvas.c_str(), r.batch_size, r.latency_ms, r.latency_ms / r.batch_size,
                    Mib(r.peak_bytes).c_str(), r.fits ? "yes" : "NO");
    } else {
      std::snprintf(line, sizeof(line), "  %6d  %-10s  %5d  %10s  %8s  %11s  no (predicted)\n",
                    r.bucket, canvas.c_str(), r.batch_size, "-", "-", Mib(r.peak_bytes).c_str());
    }
    text += line;
  }
  text += "  batch cap per bucket (memory / throughput knee):";
  const size_t shown = std::min<size_t>(max_batch_.size(), 16);
  for (size_t b = 0; b < shown; ++b) {
    text += ' ' + std::to_string(b) + ':' + std::to_string(max_batch_[b]) + '/' +
            std::to_string(knee_batch_[b]);
  }
  if (shown < max_batch_.size()) text += " ... (extrapolated by pixels)";
  return text + "\n";
}

}  // namespace mogserve::pipeline
