#include "api/landmark_stage.h"

#include <algorithm>
#include <cmath>

namespace mogserve::api {
namespace {

constexpr int kSide = model::kLandmark68InputSide;

}  // namespace

LandmarkCrop CutLandmarkCrop(std::span<const uint8_t> canvas, const image::Letterbox& letterbox,
                             const Detection& face) {
  LandmarkCrop crop;
  crop.to_source_x = letterbox.to_source_x;
  crop.to_source_y = letterbox.to_source_y;
  // The box in canvas pixels, corners rounded outwards, inside the picture's part of the canvas.
  const int x0 = std::clamp(static_cast<int>(std::floor(face.x1 / letterbox.to_source_x)), 0,
                            letterbox.content_width - 1);
  const int y0 = std::clamp(static_cast<int>(std::floor(face.y1 / letterbox.to_source_y)), 0,
                            letterbox.content_height - 1);
  const int x1 = std::clamp(static_cast<int>(std::ceil(face.x2 / letterbox.to_source_x)), x0 + 1,
                            letterbox.content_width);
  const int y1 = std::clamp(static_cast<int>(std::ceil(face.y2 / letterbox.to_source_y)), y0 + 1,
                            letterbox.content_height);
  const int w = x1 - x0, h = y1 - y0, side = std::max(w, h);
  // face-api's padToSquare(centred): round(diff / 2) after, the rest before.
  const int diff = side - std::min(w, h);
  const int before = diff - static_cast<int>(std::lround(diff * 0.5));
  const int sx = w < h ? x0 - before : x0;  // the square's top-left in canvas pixels
  const int sy = h < w ? y0 - before : y0;
  crop.origin_x = sx;
  crop.origin_y = sy;
  crop.side = side;

  crop.pixels.assign(static_cast<size_t>(kSide) * kSide * 3, 0);
  const int stride = letterbox.canvas_width * 3;
  // A canvas pixel of the crop, black outside it (the square's padding).
  auto at = [&](int x, int y, int c) -> float {
    if (x < x0 || x >= x1 || y < y0 || y >= y1) return 0.0f;
    return canvas[static_cast<size_t>(y) * stride + x * 3 + c];
  };
  const double scale = static_cast<double>(side) / kSide;
  for (int oy = 0; oy < kSide; ++oy) {
    const double fy = std::max((oy + 0.5) * scale - 0.5, 0.0);
    const int iy = static_cast<int>(fy);
    const double wy = fy - iy;
    const int ya = sy + std::min(iy, side - 1), yb = sy + std::min(iy + 1, side - 1);
    for (int ox = 0; ox < kSide; ++ox) {
      const double fx = std::max((ox + 0.5) * scale - 0.5, 0.0);
      const int ix = static_cast<int>(fx);
      const double wx = fx - ix;
      const int xa = sx + std::min(ix, side - 1), xb = sx + std::min(ix + 1, side - 1);
      uint8_t* out = &crop.pixels[(static_cast<size_t>(oy) * kSide + ox) * 3];
      for (int c = 0; c < 3; ++c) {
        const double v = (1 - wy) * ((1 - wx) * at(xa, ya, c) + wx * at(xb, ya, c)) +
                         wy * ((1 - wx) * at(xa, yb, c) + wx * at(xb, yb, c));
        out[c] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  }
  return crop;
}

StatusOr<std::unique_ptr<LandmarkStage>> LandmarkStage::Create(const std::string& model_dir,
                                                               engine::EngineOptions options,
                                                               LandmarkOutput output) {
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<model::FaceLandmark68Model> net,
                            model::FaceLandmark68Model::Load(model_dir));
  model::LoadedModel loaded;
  loaded.model = std::move(net);
  loaded.source = model_dir;
  options.precision = engine::Precision::kFp32;
  options.precision_choice.clear();
  options.calibration.clear();
  auto engine = engine::CreateEngine(loaded, options);
  if (!engine.ok()) {
    return Status(engine.status().code(),
                  "cannot start the landmark net: " + engine.status().message());
  }
  // One instance warmed up at the batch sizes most pictures need (1, 2 and 4 faces), so that
  // the first answers do not pay for the backend's first passes (allocations, kernel choice).
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> warm, (*engine)->NewInstance());
  const std::vector<uint8_t> black(static_cast<size_t>(kSide) * kSide * 3, 0);
  for (int rows : {1, 2, 4}) {
    engine::CanvasBatch batch;
    batch.width = batch.height = kSide;
    batch.canvases.assign(rows, black.data());
    MOGSERVE_RETURN_IF_ERROR(warm->Forward(batch).status());
  }
  return std::unique_ptr<LandmarkStage>(
      new LandmarkStage(std::move(*engine), std::move(warm), output));
}

LandmarkStage::LandmarkStage(std::unique_ptr<engine::Engine> prototype,
                             std::unique_ptr<engine::Engine> warm, LandmarkOutput output)
    : output_(output), prototype_(std::move(prototype)) {
  idle_.push_back(std::move(warm));
}

StatusOr<std::unique_ptr<engine::Engine>> LandmarkStage::Take() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<engine::Engine> e = std::move(idle_.back());
      idle_.pop_back();
      return e;
    }
  }
  return prototype_->NewInstance();
}

void LandmarkStage::Give(std::unique_ptr<engine::Engine> engine) const {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(engine));
}

Status LandmarkStage::Apply(std::span<const uint8_t> canvas, const image::Letterbox& letterbox,
                            std::vector<Detection>& faces) const {
  if (faces.empty()) return Status::Ok();
  if (letterbox.content_width < 1 || letterbox.content_height < 1 ||
      letterbox.content_width > letterbox.canvas_width ||
      letterbox.content_height > letterbox.canvas_height ||
      canvas.size() < static_cast<size_t>(letterbox.canvas_width) * letterbox.canvas_height * 3) {
    return Internal("landmark stage: the canvas does not match its letterbox");
  }
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> engine, Take());
  Status status = Status::Ok();
  for (size_t first = 0; first < faces.size() && status.ok(); first += kMaxBatch) {
    const size_t count = std::min(faces.size() - first, static_cast<size_t>(kMaxBatch));
    std::vector<LandmarkCrop> crops;
    engine::CanvasBatch batch;
    batch.width = batch.height = kSide;
    for (size_t i = 0; i < count; ++i) {
      crops.push_back(CutLandmarkCrop(canvas, letterbox, faces[first + i]));
    }
    for (const LandmarkCrop& c : crops) batch.canvases.push_back(c.pixels.data());
    // Padded to a power of two: a few shapes, each one's buffers reused.
    int padded = 1;
    while (padded < static_cast<int>(count)) padded *= 2;
    batch.padded_batch_size = padded;
    auto outputs = engine->Forward(batch);
    if (!outputs.ok()) {
      status = Status(outputs.status().code(), "landmark net: " + outputs.status().message());
      break;
    }
    for (size_t i = 0; i < count; ++i) {
      std::vector<Point> points = model::Points68(outputs->raw_of(static_cast<int>(i)));
      const LandmarkCrop& c = crops[i];
      for (Point& p : points) {
        p.x = static_cast<float>((c.origin_x + p.x * c.side) * c.to_source_x);
        p.y = static_cast<float>((c.origin_y + p.y * c.side) * c.to_source_y);
      }
      Detection& face = faces[first + i];
      face.landmarks = model::FivePointsOf68(points);
      if (output_ == LandmarkOutput::kFiveAnd68) face.landmarks68 = std::move(points);
    }
  }
  Give(std::move(engine));
  return status;
}

}  // namespace mogserve::api
