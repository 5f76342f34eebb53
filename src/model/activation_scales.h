// Post-training INT8 calibration, torch-free: histograms of the activations a network produces
// over calibration photos, the per-tensor scales taken from them, and their JSON file
// (`mogserve calibrate` writes it, `--precision int8` reads it).
//
// Method: percentile. Every value's magnitude |x| falls into one of 32768 bins keyed by the
// upper 16 bits of its float32 pattern (exponent and the 7 leading mantissa bits: each bin is
// <= 0.8 % wide relative to its value); a tensor's range is the upper edge of the bin where the
// cumulative count first reaches `percentile` % of all its values (99.99 % by default), so the
// largest 0.01 % saturate. Counts are integers, so the result does not depend on the order the
// photos or the values come in: the same photos give a byte-identical file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/network.h"
#include "mogserve/status.h"

namespace mogserve::model {

inline constexpr double kDefaultCalibrationPercentile = 99.99;

class ActivationHistogram {
 public:
  static constexpr int kBins = 1 << 15;
  void Add(const float* values, int64_t count);
  int64_t total() const { return total_; }
  bool non_negative() const { return negative_ == 0; }
  // The upper edge of the bin holding the `percentile` % point of |x|; 0 when empty.
  double Percentile(double percentile) const;

 private:
  std::vector<int64_t> counts_ = std::vector<int64_t>(kBins, 0);
  int64_t total_ = 0;
  int64_t negative_ = 0;
};

// One tensor's calibrated range: values map to [-range, range] (signed, INT8 zero point in the
// middle) or [0, range] (non_negative: every calibration value was >= 0).
struct TensorScale {
  int tensor = 0;
  std::string name;
  double range = 0;
  bool non_negative = false;
};

struct ActivationScales {
  std::string network;  // Network::name(), checked on load
  std::string method = "percentile";
  double percentile = kDefaultCalibrationPercentile;
  int images = 0;
  std::vector<TensorScale> tensors;  // by tensor index, only the calibrated ones

  // The tensor's scale, or nullptr when the file has none for it.
  const TensorScale* Find(int tensor) const;
};

// The tensors INT8 convolutions read or write: every conv's input and output. Sorted.
std::vector<int> CalibratedTensors(const Network& network);

// Scales from one histogram per network tensor (empty histograms are skipped).
ActivationScales ScalesFromHistograms(const Network& network,
                                      const std::vector<ActivationHistogram>& histograms,
                                      double percentile, int images);

// Fixed layout and number formatting (%.9g): the same scales give the same bytes.
std::string ActivationScalesJson(const ActivationScales& scales);

// Reads a file written by ActivationScalesJson for `network`. kNotFound naming the file when it
// is missing; kInvalidData naming the file and the field when it is malformed or was made for
// another network (name, tensor count or tensor names differ).
StatusOr<ActivationScales> ReadActivationScales(const std::string& path, const Network& network);

}  // namespace mogserve::model
