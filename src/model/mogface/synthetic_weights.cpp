#include "model/mogface/synthetic_weights.h"

#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <string_view>

namespace mogserve::model::mogface {
namespace {

// Uniform and normal from raw 64-bit draws: std::uniform_real_distribution and
// std::normal_distribution are implementation-defined, so their values differ across standard
// libraries, and the synthetic weights must not.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Box-Muller, using both values of each pair; 1 - Uniform() is in (0, 1], so the log is
  // finite.
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(1.0 - Uniform()));
    const double theta = 2.0 * std::numbers::pi * Uniform();
    spare_ = r * std::sin(theta);
    has_spare_ = true;
    return r * std::cos(theta);
  }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// Multiplier on the He standard deviation of a conv weight. Residual branches end small so the
// identity path dominates (variance would otherwise double per block); predictors are small so
// sigmoid(conf) stays inside (0, 1) and loc near the anchors.
double ConvGain(std::string_view name) {
  if (Contains(name, ".conv3.") || Contains(name, "branch2c.")) return 0.2;
  if (Contains(name, "pred_cls") || Contains(name, "pred_loc") || Contains(name, "dsfd_conf") ||
      Contains(name, "dsfd_loc")) {
    return 0.1;
  }
  // The FPN sums and laterals have no normalisation behind them.
  if (Contains(name, "fpn.")) return 0.5;
  return 1.0;
}

void Fill(const std::string& name, HostTensor& t, Rng& rng) {
  std::vector<float>& v = t.values;
  v.resize(static_cast<size_t>(t.numel()));
  const bool is_norm = Contains(name, ".bn") || Contains(name, ".gn") ||
                       Contains(name, "downsample.1.") || Contains(name, "fpn.c6.1.") ||
                       Contains(name, "fpn.c6.4.") || Contains(name, "fpn.c7.1.") ||
                       Contains(name, "fpn.c7.4.");
  if (EndsWith(name, "num_batches_tracked")) {
    for (float& x : v) x = 0.0f;
  } else if (t.shape.size() == 4) {
    const double fan_in = static_cast<double>(t.shape[1] * t.shape[2] * t.shape[3]);
    const double stddev = std::sqrt(2.0 / fan_in) * ConvGain(name);
    for (float& x : v) x = static_cast<float>(stddev * rng.Normal());
  } else if (EndsWith(name, "running_var")) {
    for (float& x : v) x = static_cast<float>(rng.Uniform(0.5, 1.5));
  } else if (is_norm && EndsWith(name, ".weight")) {
    const bool group_norm = Contains(name, ".gn");
    for (float& x : v) {
      x = static_cast<float>(group_norm ? rng.Uniform(0.9, 1.1) : rng.Uniform(0.5, 1.0));
    }
  } else {  // BN / GN beta, running_mean, conv biases
    for (float& x : v) x = static_cast<float>(0.02 * rng.Normal());
  }
}

}  // namespace

HostTensorMap SyntheticWeights(Variant variant, uint64_t seed, bool with_dsfd_heads) {
  HostTensorMap out;
  for (const KeySpec& k : ExpectedKeys(variant, with_dsfd_heads)) {
    HostTensor t;
    t.shape = k.shape;
    Rng rng(seed ^ Fnv1a(k.name));
    Fill(k.name, t, rng);
    out.emplace(k.name, std::move(t));
  }
  return out;
}

}  // namespace mogserve::model::mogface
