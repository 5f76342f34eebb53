#include "bench/bench_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>

#include "api/serving_stack.h"
#include "bench/forward_timer.h"
#include "common/cpu_info.h"
#include "common/file_util.h"
#include "engine/torch_version.h"
#include "image/decode.h"
#include "pipeline/shape_buckets.h"

namespace mogserve::bench {
namespace {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;

// The photos folder: the flag, else tests/data/photos in the working directory, else next to
// the build (<folder of the executable>/..), as the model folder is found.
std::string FindPhotosDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  return FindProjectFolder("tests/data/photos");
}

// Every picture in `dir` that decodes, in name order.
std::vector<image::Image> LoadPhotos(const std::string& dir) {
  std::vector<image::Image> photos;
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return photos;
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    StatusOr<std::vector<uint8_t>> bytes = ReadFileBytes(f.string());
    if (!bytes.ok()) continue;
    StatusOr<image::DecodedImage> decoded = image::Decode(*bytes);
    if (decoded.ok()) photos.push_back(std::move(decoded->image));
  }
  return photos;
}

// The pictures letterboxed into one canvas shape, and their geometry.
struct Canvases {
  int side = 0;
  std::vector<std::vector<uint8_t>> pixels;
  std::vector<image::Letterbox> geometry;
};

Canvases MakeCanvases(const std::vector<image::Image>& pictures, int side) {
  Canvases c;
  c.side = side;
  const pipeline::ShapeBuckets buckets = pipeline::ShapeBuckets::FixedSquare(side);
  for (const image::Image& picture : pictures) {
    const image::Letterbox box = buckets.Place(picture.width, picture.height).letterbox;
    c.pixels.push_back(image::RenderLetterbox(picture, box).data);
    c.geometry.push_back(box);
  }
  return c;
}

// `count` canvases starting at picture `first` (cycling), with their letterboxes.
engine::CanvasBatch BatchFrom(const Canvases& canvases, size_t first, int count) {
  engine::CanvasBatch batch;
  batch.width = canvases.side;
  batch.height = canvases.side;
  for (int i = 0; i < count; ++i) {
    const size_t k = (first + static_cast<size_t>(i)) % canvases.pixels.size();
    batch.canvases.push_back(canvases.pixels[k].data());
    batch.geometry.push_back(canvases.geometry[k]);
  }
  return batch;
}

// Section 1: one picture per pass (the next one each time), through the engine bench's timing
// loop with post-processing.
StatusOr<SingleImageRow> MeasureSingle(engine::Engine& engine, const Canvases& canvases,
                                       const BenchReportOptions& o) {
  MOGSERVE_ASSIGN_OR_RETURN(
      std::vector<double> samples,
      TimePasses(engine, [&canvases](int pass) { return BatchFrom(canvases, pass, 1); },
                 {o.warmup, o.runs, 0, engine.model().get()}));
  SingleImageRow row;
  row.precision = engine.info().precision;
  row.latency = Summarize(std::move(samples));
  return row;
}

// Section 2: o.images pictures in batches of `batch` (the last one partial), after one untimed
// pass of each shape the row runs.
StatusOr<BatchRow> MeasureBatch(engine::Engine& engine, const Canvases& canvases, int batch,
                                const BenchReportOptions& o) {
  const int first = std::min(batch, o.images);
  const int rest = o.images % batch;
  const int warmup = rest > 0 && rest != first ? 2 : 1;
  const int passes = (o.images + batch - 1) / batch;
  const BatchForPass shapes = [&](int pass) {
    return BatchFrom(canvases, 0, pass == 0 ? first : rest);
  };
  const BatchForPass rows = [&](int pass) {
    const int done = pass * batch;
    return BatchFrom(canvases, static_cast<size_t>(done), std::min(batch, o.images - done));
  };
  // The warm-up runs before the peak is reset: no timed pass.
  MOGSERVE_RETURN_IF_ERROR(
      TimePasses(engine, shapes, {warmup, 0, 0, engine.model().get()}).status());
  engine.ResetPeakMemory();
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<double> samples,
                            TimePasses(engine, rows, {0, passes, 0, engine.model().get()}));
  BatchRow row;
  row.precision = engine.info().precision;
  row.batch = batch;
  row.images = o.images;
  for (double ms : samples) row.total_ms += ms;
  row.ms_per_image = row.total_ms / o.images;
  row.images_per_s = row.ms_per_image > 0 ? 1000.0 / row.ms_per_image : 0;
  row.peak_memory_bytes = engine.Memory().peak_in_use_bytes;
  return row;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

MachineInfo DescribeThisMachine(const std::string& device) {
  MachineInfo m;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  m.cpu = "unknown CPU";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      m.cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  m.cores = AvailableCores();
  std::ifstream meminfo("/proc/meminfo");
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemTotal:", 0) == 0) {
      m.memory_bytes = std::strtoll(line.c_str() + 9, nullptr, 10) * 1024;
      break;
    }
  }
  // mogserve has no GPU backend yet: every build is CPU-only.
  m.gpu = "none (no GPU backend in mogserve yet; device " + device + ")";
  m.torch_version = "LibTorch " + engine::TorchVersion();
#if defined(__clang__)
  m.compiler = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  m.compiler = std::string("GCC ") + __VERSION__;
#else
  m.compiler = "unknown";
#endif
  return m;
}

double Clamp(double v, double lo, double hi) {
  return std::max(lo, std::min(v, hi));
}

}  // namespace

namespace {

Status CheckOptions(const BenchReportOptions& o) {
  if (o.runs < 1) return InvalidArgument("--runs must be at least 1");
  if (o.images < 1) return InvalidArgument("--images must be at least 1");
  if (o.batch_sizes.empty()) return InvalidArgument("--batch-sizes: no batch sizes");
  if (o.policies.empty()) return InvalidArgument("--policies: no policies");
  return Status::Ok();
}

// One engine per precision (default: fp32).
StatusOr<std::vector<std::unique_ptr<engine::Engine>>> CreateEngines(const BenchReportOptions& o) {
  std::vector<engine::Precision> precisions = o.precisions;
  if (precisions.empty()) precisions = {engine::Precision::kFp32};
  std::vector<std::unique_ptr<engine::Engine>> engines;
  if (o.simulate) {
    for (engine::Precision precision : precisions) {
      engines.push_back(std::make_unique<SimulatedEngine>(o.sim_intercept_ms, o.sim_per_image_ms,
                                                          engine::PrecisionName(precision)));
    }
    return engines;
  }
  // Every precision checked before the model loads, once; each engine prepares its own weights.
  std::vector<engine::EngineOptions> at_precision;
  for (engine::Precision precision : precisions) {
    at_precision.push_back(o.engine);
    at_precision.back().precision = precision;
    MOGSERVE_RETURN_IF_ERROR(engine::CheckEngineOptions(at_precision.back()));
  }
  std::fprintf(stderr, "loading %s...\n", std::string(o.model.spec->name).c_str());
  MOGSERVE_ASSIGN_OR_RETURN(const model::LoadedModel loaded, model::LoadModel(o.model));
  for (const engine::EngineOptions& eo : at_precision) {
    std::fprintf(stderr, "preparing it for %s...\n", engine::PrecisionName(eo.precision));
    MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> e, engine::CreateEngine(loaded, eo));
    engines.push_back(std::move(e));
  }
  return engines;
}

// The photos, decoded once (random canvases when none), into report->images and ->photos.
std::vector<image::Image> LoadPictures(const BenchReportOptions& o, BenchReport* report) {
  const std::string photos_dir = FindPhotosDir(o.images_dir);
  std::vector<image::Image> pictures = LoadPhotos(photos_dir);
  report->photos = static_cast<int>(pictures.size());
  const std::string side = std::to_string(report->canvas_side);
  if (!pictures.empty()) {
    report->images = std::to_string(pictures.size()) + " photos from " + photos_dir +
                     ", letterboxed into " + side + "x" + side;
    return pictures;
  }
  report->images = "no photos found" +
                   (photos_dir.empty() ? std::string(" (no tests/data/photos; see --images-dir)")
                                       : " in " + photos_dir) +
                   ": random " + side + "x" + side + " canvases instead";
  for (std::vector<uint8_t>& noise : NoiseCanvases(8, report->canvas_side, report->canvas_side)) {
    image::Image picture(report->canvas_side, report->canvas_side);
    picture.data = std::move(noise);
    pictures.push_back(std::move(picture));
  }
  return pictures;
}

// Sections 1 and 2 per precision, then the speed-ups; returns the fastest engine's index.
StatusOr<size_t> MeasureEngines(const std::vector<std::unique_ptr<engine::Engine>>& engines,
                                const Canvases& canvases, const BenchReportOptions& o,
                                BenchReport* report) {
  for (const std::unique_ptr<engine::Engine>& e : engines) {
    std::fprintf(stderr, "1. single image, %s: %d warm-up + %d runs...\n",
                 e->info().precision.c_str(), o.warmup, o.runs);
    MOGSERVE_ASSIGN_OR_RETURN(SingleImageRow single, MeasureSingle(*e, canvases, o));
    report->single.push_back(single);
    for (int batch : o.batch_sizes) {
      MOGSERVE_ASSIGN_OR_RETURN(BatchRow row, MeasureBatch(*e, canvases, batch, o));
      std::fprintf(stderr, "2. %s batch %2d: %d images in %.1f ms, %.2f ms/image\n",
                   row.precision.c_str(), batch, row.images, row.total_ms, row.ms_per_image);
      report->batches.push_back(row);
    }
  }
  double fp32_mean = 0;
  for (const SingleImageRow& r : report->single) {
    if (r.precision == "fp32") fp32_mean = r.latency.mean_ms;
  }
  size_t fastest = 0;
  for (size_t i = 0; i < report->single.size(); ++i) {
    SingleImageRow& r = report->single[i];
    r.speedup_vs_fp32 = fp32_mean > 0 && r.latency.mean_ms > 0 ? fp32_mean / r.latency.mean_ms : 0;
    if (r.latency.mean_ms < report->single[fastest].latency.mean_ms) fastest = i;
  }
  for (BatchRow& r : report->batches) {
    for (const BatchRow& one : report->batches) {
      if (one.precision == r.precision && one.batch == 1 && r.ms_per_image > 0) {
        r.speedup_vs_batch1 = one.ms_per_image / r.ms_per_image;
      }
    }
  }
  return fastest;
}

// Seconds of a load point: exactly o.seconds when given, else long enough for o.min_requests
// at the expected rate.
double PointSeconds(const BenchReportOptions& o, double rate_per_s) {
  if (o.seconds > 0) return o.seconds;
  return Clamp(o.min_requests / std::max(rate_per_s, 1e-6), o.min_seconds, o.max_seconds);
}

// The warm-up behind sections 3-5 (the scheduler's seed and the capacities) and their settings.
Status PlanLoad(Setup* setup, const std::vector<image::Image>& pictures,
                const BenchReportOptions& o, BenchReport* report) {
  std::fprintf(stderr, "warm-up: measuring batch sizes for the scheduler (%s)...\n",
               report->load_precision.c_str());
  MOGSERVE_ASSIGN_OR_RETURN(
      PlannedCapacity capacity,
      PlanBatches(setup, pictures[0].width, pictures[0].height, o.batch_knee, 1));
  std::fprintf(stderr, "%s", capacity.description.c_str());
  report->capacity_per_s = capacity.per_s;
  report->capacity_batch = capacity.batch;
  report->naive_capacity_per_s = capacity.batch1_per_s > 0 ? capacity.batch1_per_s : capacity.per_s;
  report->knee_batch = capacity.knee_batch;
  char settings[400];
  std::snprintf(settings, sizeof(settings),
                "%s precision; max batch %d, capped at %d by the throughput knee (%.2f); max "
                "delay %.1f ms; 1 pre / 1 post thread; load points %s (first 20%% warm-up); "
                "streams %.1f s per count",
                report->load_precision.c_str(), o.max_batch_size, capacity.knee_batch, o.batch_knee,
                o.max_delay_ms,
                o.seconds > 0 ? (std::to_string(o.seconds).substr(0, 5) + " s each").c_str()
                              : ("long enough for " + std::to_string(o.min_requests) +
                                 " requests, within " + std::to_string(o.min_seconds).substr(0, 4) +
                                 "-" + std::to_string(o.max_seconds).substr(0, 4) + " s")
                                    .c_str(),
                o.seconds > 0 ? o.seconds : o.stream_seconds);
  report->load_settings = settings;
  std::fprintf(stderr, "capacity: %.1f images/s (batch %d), batch 1: %.1f images/s\n",
               report->capacity_per_s, report->capacity_batch, report->naive_capacity_per_s);
  return Status::Ok();
}

// 3. Naive vs continuous: closed loop, then open loop at the same Poisson arrivals.
Status CompareNaiveAndContinuous(const Setup& setup, const BenchReportOptions& o,
                                 BenchReport* report) {
  for (scheduler::Policy policy : {scheduler::Policy::kNaive, scheduler::Policy::kContinuous}) {
    const double expected =
        policy == scheduler::Policy::kNaive ? report->naive_capacity_per_s : report->capacity_per_s;
    MOGSERVE_ASSIGN_OR_RETURN(PipelineBenchRow closed,
                              ClosedLoop(setup, policy, o.clients, PointSeconds(o, expected)));
    std::fprintf(stderr, "3. %-10s closed, %d clients: %.1f images/s, p99 %.1f ms\n",
                 closed.policy.c_str(), o.clients, closed.throughput_per_s, closed.latency.p99_ms);
    report->comparison.push_back(closed);
    if (policy == scheduler::Policy::kNaive) report->naive_pipeline_per_s = closed.throughput_per_s;
    report->pipeline_capacity_per_s =
        std::max(report->pipeline_capacity_per_s, closed.throughput_per_s);
  }
  // A closed loop that completed nothing in its window (a very slow engine and short points)
  // leaves the warm-up's estimates.
  if (report->naive_pipeline_per_s <= 0)
    report->naive_pipeline_per_s = report->naive_capacity_per_s;
  if (report->pipeline_capacity_per_s <= 0) {
    report->pipeline_capacity_per_s = report->capacity_per_s;
  }
  report->comparison_offered_per_s = o.naive_load * report->naive_pipeline_per_s;
  for (scheduler::Policy policy : {scheduler::Policy::kNaive, scheduler::Policy::kContinuous}) {
    MOGSERVE_ASSIGN_OR_RETURN(PipelineBenchRow open,
                              OpenLoop(setup, policy, report->comparison_offered_per_s,
                                       PointSeconds(o, report->comparison_offered_per_s), 777));
    open.load = report->comparison_offered_per_s / report->pipeline_capacity_per_s;
    std::fprintf(stderr, "3. %-10s open, %.1f/s offered: %.1f images/s, p99 %.1f ms\n",
                 open.policy.c_str(), open.offered_per_s, open.throughput_per_s,
                 open.latency.p99_ms);
    report->comparison.push_back(open);
  }
  return Status::Ok();
}

// 4. Offered-load sweep: every policy sees the same arrivals at a given load.
Status SweepLoads(const Setup& setup, const BenchReportOptions& o, BenchReport* report) {
  for (scheduler::Policy policy : o.policies) {
    for (size_t i = 0; i < o.loads.size(); ++i) {
      const double rate = o.loads[i] * report->pipeline_capacity_per_s;
      MOGSERVE_ASSIGN_OR_RETURN(
          PipelineBenchRow row,
          OpenLoop(setup, policy, rate, PointSeconds(o, rate), 1000 + static_cast<uint32_t>(i)));
      row.load = o.loads[i];
      std::fprintf(stderr, "4. %-10s load %.2f: %.1f images/s, p50 %.1f ms, p99 %.1f ms\n",
                   row.policy.c_str(), row.load, row.throughput_per_s, row.latency.median_ms,
                   row.latency.p99_ms);
      report->curve.push_back(row);
    }
  }
  return Status::Ok();
}

// 5. Camera streams: N = 1, 2, ... until a stream misses real time, or the bound.
Status SearchStreams(const Setup& setup, const BenchReportOptions& o, BenchReport* report) {
  const StreamOptions stream_options;
  const int max_streams =
      o.max_streams > 0 ? o.max_streams
                        : std::min(64, static_cast<int>(std::ceil(report->pipeline_capacity_per_s /
                                                                  stream_options.fps)) +
                                           1);
  const double stream_seconds = o.seconds > 0 ? o.seconds : o.stream_seconds;
  for (scheduler::Policy policy : o.policies) {
    StreamSearch search;
    search.policy = scheduler::PolicyName(policy);
    for (int n = 1; n <= max_streams; ++n) {
      MOGSERVE_ASSIGN_OR_RETURN(StreamPoint point,
                                StreamLoop(setup, policy, n, stream_seconds, stream_options));
      std::fprintf(stderr,
                   "5. %-10s %2d stream(s): %lld frames, %lld in time, %lld late, %lld "
                   "superseded, p99 %.1f ms: %s\n",
                   search.policy.c_str(), n, static_cast<long long>(point.frames),
                   static_cast<long long>(point.in_time), static_cast<long long>(point.late),
                   static_cast<long long>(point.superseded), point.latency.p99_ms,
                   point.all_realtime ? "real time" : "missed");
      search.tried.push_back(point);
      if (!point.all_realtime) break;
      search.max_realtime_streams = n;
    }
    report->streams.push_back(search);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<BenchReport> RunBenchReport(const BenchReportOptions& o) {
  MOGSERVE_RETURN_IF_ERROR(CheckOptions(o));
  BenchReport report;
  report.date = UtcNow();
  report.command = o.command;
  report.simulated = o.simulate;
  report.quick = o.quick;
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<engine::Engine>> engines, CreateEngines(o));
  const engine::EngineInfo& info = engines[0]->info();
  report.engine = o.simulate ? info.model : info.Describe();
  report.canvas_side = o.simulate ? 512 : info.fixed_side > 0 ? info.fixed_side : o.mogface_size;
  if (!o.simulate && info.fixed_side == 0 && report.canvas_side % info.multiple != 0) {
    return InvalidArgument("--size must be a multiple of " + std::to_string(info.multiple));
  }
  report.machine = DescribeThisMachine(o.simulate ? "none (simulated engine)" : info.device);
  const std::vector<image::Image> pictures = LoadPictures(o, &report);
  const Canvases canvases = MakeCanvases(pictures, report.canvas_side);
  std::fprintf(stderr, "pictures: %s\n", report.images.c_str());

  MOGSERVE_ASSIGN_OR_RETURN(const size_t fastest, MeasureEngines(engines, canvases, o, &report));

  // 3-5 on the fastest precision.
  engine::Engine& load_engine = *engines[fastest];
  report.load_precision = load_engine.info().precision;
  Setup setup;
  setup.engines = {&load_engine};
  setup.buckets = pipeline::ShapeBuckets::FixedSquare(report.canvas_side);
  setup.pictures = pictures;
  setup.max_batch_size = o.max_batch_size;
  setup.max_delay_ms = o.max_delay_ms;
  MOGSERVE_RETURN_IF_ERROR(PlanLoad(&setup, pictures, o, &report));
  MOGSERVE_RETURN_IF_ERROR(CompareNaiveAndContinuous(setup, o, &report));
  MOGSERVE_RETURN_IF_ERROR(SweepLoads(setup, o, &report));
  MOGSERVE_RETURN_IF_ERROR(SearchStreams(setup, o, &report));
  report.guide = CompareWithGuide(report, o.guide_claims);
  return report;
}

}  // namespace mogserve::bench
