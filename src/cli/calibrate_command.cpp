// `mogserve calibrate --model ... --images DIR -o FILE`: INT8 calibration. Runs the model in
// FP32 on the CPU over every photo of DIR (sorted by name, each prepared as detect prepares it:
// the SSD letterboxed into 512x512, MogFace into its --target-size bucket), collects histograms
// of every tensor an INT8 convolution reads or writes, and writes per-tensor activation scales
// by the percentile method (model/activation_scales.h). Deterministic: the same photos give a
// byte-identical file.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "common/file_util.h"
#include "engine/cpu_backend.h"
#include "model/activation_scales.h"
#include "model/model_registry.h"
#include "pipeline/prepared_image.h"
#include "pipeline/shape_buckets.h"

namespace mogserve::cli {
namespace {

struct CalibrateFlags {
  DetectorOptions engine;
  std::string images;
  std::string output;
  double percentile = model::kDefaultCalibrationPercentile;
  int target_size = 640;
};

bool IsPhoto(const std::filesystem::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".webp";
}

namespace fs = std::filesystem;

// The photos in --images, sorted; InvalidArgument naming the flag when there are none.
StatusOr<std::vector<fs::path>> CalibrationPhotos(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return InvalidArgument("--images: '" + folder + "' is not a folder");
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
    if (e.is_regular_file() && IsPhoto(e.path())) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return InvalidArgument("--images: no .jpg, .jpeg, .png or .webp files in '" + folder + "'");
  }
  return files;
}

// Runs each photo through the FP32 network at the bucket its size maps to, adding its
// activations to `histograms`. kExitOk, or the exit code of the first photo that failed (after
// printing why).
int ObservePhotos(const std::vector<fs::path>& files, const pipeline::ShapeBuckets& buckets,
                  const engine::EngineOptions& options,
                  const std::shared_ptr<const model::FaceModel>& face_model,
                  std::vector<model::ActivationHistogram>* histograms) {
  for (const fs::path& f : files) {
    auto bytes = ReadFileBytes(f.string());
    if (!bytes.ok()) {
      std::cerr << "error: " << bytes.status().message() << "\n";
      return kExitFatal;
    }
    auto prepared = pipeline::PrepareImage(*bytes, buckets, image::DecodeOptions{});
    if (!prepared.ok()) {
      std::cerr << "error: " << f.string() << ": " << prepared.status().message() << "\n";
      return kExitSomeFailed;
    }
    engine::CanvasBatch batch;
    batch.width = prepared->canvas.width;
    batch.height = prepared->canvas.height;
    batch.canvases = {prepared->canvas.data.data()};
    batch.geometry = {prepared->letterbox};
    const Status s = engine::CollectActivationHistograms(options, face_model, {batch}, histograms);
    if (!s.ok()) {
      std::cerr << "error: " << f.string() << ": " << s.ToString() << "\n";
      return kExitFatal;
    }
  }
  return kExitOk;
}

int RunCalibrate(const CalibrateFlags& flags) {
  DetectorOptions engine_flags = flags.engine;
  engine_flags.precision = "fp32";  // calibration observes the FP32 network
  auto setup = ToEngineSetup(engine_flags);
  if (!setup.ok()) return PrintError(setup.status().message(), kExitUsage);
  const engine::EngineOptions& options = setup->engine;
  if (options.device != "cpu") {
    return PrintError("--device: calibration runs on cpu, not '" + options.device + "'",
                      kExitUsage);
  }
  auto files = CalibrationPhotos(flags.images);
  if (!files.ok()) return PrintError(files.status().message(), kExitUsage);
  auto loaded = model::LoadModel(setup->model);
  if (!loaded.ok()) {
    return PrintError("cannot load the model: " + loaded.status().ToString(), kExitFatal);
  }
  const std::shared_ptr<const model::FaceModel>& face_model = loaded->model;
  pipeline::ShapeBuckets buckets = pipeline::ShapeBuckets::FixedSquare(face_model->fixed_side(),
                                                                  face_model->fixed_fit());
  if (face_model->native_multiple() > 0) {
    buckets = pipeline::ShapeBuckets::Native(face_model->native_multiple());
  } else if (face_model->fixed_side() <= 0) {
    auto target = pipeline::ShapeBuckets::Target(flags.target_size, face_model->multiple());
    if (!target.ok()) return PrintError("--target-size: " + target.status().message(), kExitUsage);
    buckets = *target;
  }
  std::vector<model::ActivationHistogram> histograms;
  if (const int code = ObservePhotos(*files, buckets, options, face_model, &histograms);
      code != kExitOk) {
    return code;
  }
  const int images = static_cast<int>(files->size());
  const model::ActivationScales scales =
      model::ScalesFromHistograms(*face_model->network(), histograms, flags.percentile, images);
  const Status written = WriteTextFile(flags.output, model::ActivationScalesJson(scales));
  if (!written.ok()) return PrintError("-o: " + written.message(), kExitFatal);
  std::cerr << "calibrate: " << scales.tensors.size() << " tensors of " << face_model->name()
            << " over " << images << " photos (percentile " << flags.percentile << " %) -> "
            << flags.output << "\n";
  return kExitOk;
}

}  // namespace

CommandRunner RegisterCalibrateCommand(CLI::App& app) {
  auto flags = std::make_shared<CalibrateFlags>();
  AddOptionFlags(app, flags->engine, {opt::Group::kModel});
  app.add_option("--images", flags->images,
                 "Folder of calibration photos (.jpg, .jpeg, .png, .webp; read in name order)")
      ->required();
  app.add_option("-o,--output", flags->output, "The activation scales file (JSON) to write")
      ->required();
  app.add_option("--percentile", flags->percentile,
                 "Each tensor's range: this percentile of |x| over all its values (the rest "
                 "saturate)")
      ->check(CLI::Range(50.0, 100.0))
      ->capture_default_str();
  app.add_option("--target-size", flags->target_size,
                 "MogFace: the long side the photos are scaled to (bucket policy)")
      ->check(CLI::Range(32, 4096))
      ->capture_default_str();
  return [flags] { return RunCalibrate(*flags); };
}

}  // namespace mogserve::cli
