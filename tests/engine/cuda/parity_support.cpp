#include "parity_support.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "model/input_normalization.h"

namespace mogserve::engine::cuda {

ParityInputs MakeParityInputs(int h, int w, uint32_t seed) {
  std::mt19937 rng(seed);
  ParityInputs in;
  const int sizes[2][2] = {{w, h}, {std::max(1, w * 2 / 3), std::max(1, h / 2)}};
  for (const auto& size : sizes) {
    image::Image picture(size[0], size[1]);
    for (uint8_t& v : picture.data) v = static_cast<uint8_t>(rng());
    std::vector<uint8_t> canvas(static_cast<size_t>(h) * w * 3, 0);
    for (uint8_t& v : canvas) v = static_cast<uint8_t>(rng());
    for (int y = 0; y < picture.height; ++y) {
      std::copy_n(picture.pixel(0, y), picture.width * 3, &canvas[static_cast<size_t>(y) * w * 3]);
    }
    in.canvases.push_back(std::move(canvas));
    in.picture_size.push_back(size[0]);
    in.picture_size.push_back(size[1]);
    in.pictures.push_back(std::move(picture));
  }
  return in;
}

std::vector<model::ReferenceOutputs> ReferenceOutputsOf(const model::FaceModel& model,
                                                         const model::LayerPlan& plan,
                                                         const ParityInputs& inputs) {
  std::vector<model::ReferenceOutputs> out;
  for (const image::Image& picture : inputs.pictures) {
    const std::vector<double> x = model::NormalizePlanar(
        model.network()->normalization(), picture, plan.input_width(), plan.input_height());
    auto r = model::RunReference(plan, model.weights(), x);
    if (!r.ok()) return {};
    out.push_back(std::move(*r));
  }
  return out;
}

ParityErrors CompareOutputs(std::span<const float> conf, std::span<const float> loc,
                            const std::vector<model::ReferenceOutputs>& want) {
  ParityErrors e;
  double d2 = 0, n2 = 0;
  if (want.empty()) return {INFINITY, INFINITY, false};
  const size_t anchors = want[0].scores.size();
  if (conf.size() < want.size() * anchors || loc.size() < want.size() * anchors * 4) {
    return {INFINITY, INFINITY, false};
  }
  for (size_t i = 0; i < want.size(); ++i) {
    for (size_t a = 0; a < anchors; ++a) {
      const float c = conf[i * anchors + a];
      e.finite = e.finite && std::isfinite(c);
      e.conf = std::max(e.conf, std::abs(c - want[i].scores[a]));
      for (int k = 0; k < 4; ++k) {
        const float l = loc[(i * anchors + a) * 4 + k];
        e.finite = e.finite && std::isfinite(l);
        const double d = l - want[i].boxes[a * 4 + k];
        d2 += d * d;
        n2 += want[i].boxes[a * 4 + k] * want[i].boxes[a * 4 + k];
      }
    }
  }
  e.loc_rel = std::sqrt(d2 / std::max(n2, 1e-30));
  if (!e.finite) e.conf = e.loc_rel = INFINITY;
  return e;
}

}  // namespace mogserve::engine::cuda
