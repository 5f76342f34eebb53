#include "image/resize.h"

#include "image/opencv_resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace mogserve::image {
namespace {

// Fixed-point weights: 14 fractional bits keep 255 * 2^14 * (sum of weights) far inside int32
// while resolving weights to 1/16384, well below one 8-bit step.
constexpr int kWeightBits = 14;
constexpr int32_t kWeightOne = 1 << kWeightBits;
constexpr int32_t kRoundingHalf = 1 << (kWeightBits - 1);

// Filter taps along one axis: output i reads `count[i]` source samples starting at `first[i]`,
// with weights at weights[i * max_taps ...], which sum to exactly kWeightOne.
struct AxisTaps {
  int max_taps = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<int32_t> weights;
};

// Normalises float weights to fixed point summing to exactly kWeightOne (the rounding remainder
// goes to the largest weight), so that a constant image stays exactly constant.
void QuantiseWeights(const double* weights, int count, double total, int32_t* out) {
  int32_t sum = 0;
  int largest = 0;
  for (int k = 0; k < count; ++k) {
    out[k] = static_cast<int32_t>(std::lround(weights[k] / total * kWeightOne));
    sum += out[k];
    if (out[k] > out[largest]) largest = k;
  }
  out[largest] += kWeightOne - sum;
}

// Triangle filter with half-pixel centres. When shrinking, the filter is stretched by the
// reduction factor so that every source pixel contributes (antialiasing, as PIL's BILINEAR and
// torch's antialias=True); when enlarging this is plain bilinear interpolation. At the borders the
// taps that fall outside are dropped and the rest renormalised, which equals edge clamping.
AxisTaps ComputeTaps(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;  // the triangle's support is 1 source pixel, stretched
  AxisTaps taps;
  taps.max_taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.first.resize(out_size);
  taps.count.resize(out_size);
  taps.weights.assign(static_cast<size_t>(out_size) * taps.max_taps, 0);
  std::vector<double> raw(taps.max_taps);
  for (int i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    const int lo = std::max(0, static_cast<int>(std::floor(center - support + 0.5)));
    const int hi = std::min(in_size, static_cast<int>(std::floor(center + support + 0.5)));
    const int count = std::clamp(hi - lo, 1, taps.max_taps);
    double total = 0.0;
    for (int k = 0; k < count; ++k) {
      raw[k] = std::max(0.0, 1.0 - std::abs(lo + k + 0.5 - center) / filter_scale);
      total += raw[k];
    }
    if (total <= 0.0) {  // cannot happen with the support above; keep a sane fallback anyway
      raw[0] = total = 1.0;
    }
    taps.first[i] = std::min(lo, in_size - 1);
    taps.count[i] = std::min(count, in_size - taps.first[i]);
    QuantiseWeights(raw.data(), taps.count[i], total, &taps.weights[i * taps.max_taps]);
  }
  return taps;
}

uint8_t ToPixel(int32_t acc) {
  return static_cast<uint8_t>(std::clamp(acc >> kWeightBits, 0, 255));
}

// Resamples every row of `src` (width in_w) to width out_w.
void ResizeRows(const uint8_t* src, int in_w, int rows, const AxisTaps& taps, int out_w,
                uint8_t* dst) {
  for (int y = 0; y < rows; ++y) {
    const uint8_t* row = src + static_cast<size_t>(y) * in_w * 3;
    uint8_t* out = dst + static_cast<size_t>(y) * out_w * 3;
    for (int x = 0; x < out_w; ++x) {
      const int32_t* w = &taps.weights[static_cast<size_t>(x) * taps.max_taps];
      const uint8_t* p = row + static_cast<size_t>(taps.first[x]) * 3;
      int32_t r = kRoundingHalf, g = kRoundingHalf, b = kRoundingHalf;
      for (int k = 0; k < taps.count[x]; ++k, p += 3) {
        r += w[k] * p[0];
        g += w[k] * p[1];
        b += w[k] * p[2];
      }
      out[x * 3] = ToPixel(r);
      out[x * 3 + 1] = ToPixel(g);
      out[x * 3 + 2] = ToPixel(b);
    }
  }
}

// Resamples columns: each output row is a weighted sum of whole source rows, which keeps the
// inner loop contiguous (and vectorisable).
void ResizeColumns(const uint8_t* src, int row_bytes, const AxisTaps& taps, int out_h,
                   uint8_t* dst) {
  std::vector<int32_t> acc(row_bytes);
  for (int y = 0; y < out_h; ++y) {
    std::fill(acc.begin(), acc.end(), kRoundingHalf);
    const int32_t* w = &taps.weights[static_cast<size_t>(y) * taps.max_taps];
    for (int k = 0; k < taps.count[y]; ++k) {
      const uint8_t* row = src + static_cast<size_t>(taps.first[y] + k) * row_bytes;
      const int32_t weight = w[k];
      for (int i = 0; i < row_bytes; ++i) acc[i] += weight * row[i];
    }
    uint8_t* out = dst + static_cast<size_t>(y) * row_bytes;
    for (int i = 0; i < row_bytes; ++i) out[i] = ToPixel(acc[i]);
  }
}

}  // namespace

Image Resize(const Image& src, int dst_width, int dst_height) {
  if (src.empty() || dst_width <= 0 || dst_height <= 0) return Image();
  if (dst_width == src.width && dst_height == src.height) return src;
  Image dst(dst_width, dst_height);
  // Horizontal pass first, into an intermediate of dst_width x src.height; skipped when only the
  // height changes.
  std::vector<uint8_t> tmp;
  const uint8_t* horizontal = src.data.data();
  if (dst_width != src.width) {
    tmp.resize(static_cast<size_t>(dst_width) * src.height * 3);
    ResizeRows(src.data.data(), src.width, src.height, ComputeTaps(src.width, dst_width), dst_width,
               tmp.data());
    horizontal = tmp.data();
  }
  if (dst_height != src.height) {
    ResizeColumns(horizontal, dst_width * 3, ComputeTaps(src.height, dst_height), dst_height,
                  dst.data.data());
  } else {
    std::memcpy(dst.data.data(), horizontal, dst.data.size());
  }
  return dst;
}

Letterbox FitLetterbox(int source_width, int source_height, int canvas_width, int canvas_height,
                       FitRule rule) {
  Letterbox box;
  box.canvas_width = canvas_width;
  box.canvas_height = canvas_height;
  if (source_width <= 0 || source_height <= 0 || canvas_width <= 0 || canvas_height <= 0) {
    return box;  // nothing fits: content stays 0x0
  }
  if (rule == FitRule::kInsightFace) {
    // scrfd.py: im_ratio = h / w against model_ratio = H / W; int() truncates.
    const double im_ratio = static_cast<double>(source_height) / source_width;
    const double model_ratio = static_cast<double>(canvas_height) / canvas_width;
    int w = canvas_width, h = canvas_height;
    if (im_ratio > model_ratio) {
      w = static_cast<int>(h / im_ratio);
    } else {
      h = static_cast<int>(w * im_ratio);
    }
    box = PlaceLetterbox(source_width, source_height, std::max(w, 1), std::max(h, 1),
                         canvas_width, canvas_height);
    // det_scale = new_height / height, on both axes.
    box.to_source_x = box.to_source_y = static_cast<double>(source_height) / box.content_height;
    box.filter = ResizeFilter::kOpenCvLinearToSize;
    return box;
  }
  const double scale = std::min(static_cast<double>(canvas_width) / source_width,
                                static_cast<double>(canvas_height) / source_height);
  box.content_width =
      std::clamp(static_cast<int>(std::lround(source_width * scale)), 1, canvas_width);
  box.content_height =
      std::clamp(static_cast<int>(std::lround(source_height * scale)), 1, canvas_height);
  box.to_source_x = static_cast<double>(source_width) / box.content_width;
  box.to_source_y = static_cast<double>(source_height) / box.content_height;
  box.source_width = source_width;
  box.source_height = source_height;
  return box;
}

Letterbox PlaceLetterbox(int source_width, int source_height, int content_width, int content_height,
                         int canvas_width, int canvas_height) {
  Letterbox box;
  box.canvas_width = canvas_width;
  box.canvas_height = canvas_height;
  if (source_width <= 0 || source_height <= 0 || canvas_width <= 0 || canvas_height <= 0) {
    return box;
  }
  box.content_width = std::clamp(content_width, 1, canvas_width);
  box.content_height = std::clamp(content_height, 1, canvas_height);
  box.to_source_x = static_cast<double>(source_width) / box.content_width;
  box.to_source_y = static_cast<double>(source_height) / box.content_height;
  box.source_width = source_width;
  box.source_height = source_height;
  return box;
}

namespace {

// `src` scaled to box.content_width x box.content_height with box.filter (a copy when the sizes
// already match).
Image ScaleToContent(const Image& src, const Letterbox& box) {
  if (src.width == box.content_width && src.height == box.content_height) return src;
  if (box.filter == ResizeFilter::kOpenCvLinear) {
    const double f = 1.0 / box.to_source_x;
    Image out = ResizeLinearLikeOpenCv(src, f, f);
    if (out.width == box.content_width && out.height == box.content_height) return out;
    // A decoder-reduced source: its factor differs from the letterbox's; fall through.
  }
  if (box.filter == ResizeFilter::kOpenCvLinearToSize) {
    // cv2.resize(src, (w, h)): inv_scale = dsize / ssize per axis.
    Image out = ResizeLinearLikeOpenCv(src, static_cast<double>(box.content_width) / src.width,
                                       static_cast<double>(box.content_height) / src.height);
    if (out.width == box.content_width && out.height == box.content_height) return out;
  }
  return Resize(src, box.content_width, box.content_height);
}

}  // namespace

void ZeroLetterboxPadding(const Letterbox& box, uint8_t* canvas) {
  const size_t row_bytes = static_cast<size_t>(box.canvas_width) * 3;
  const size_t content_bytes = static_cast<size_t>(box.content_width) * 3;
  if (content_bytes < row_bytes) {
    for (int y = 0; y < box.content_height; ++y) {
      std::memset(canvas + y * row_bytes + content_bytes, 0, row_bytes - content_bytes);
    }
  }
  std::memset(canvas + box.content_height * row_bytes, 0,
              (box.canvas_height - box.content_height) * row_bytes);
}

void RenderLetterboxInto(const Image& src, const Letterbox& box, uint8_t* canvas) {
  const size_t row_bytes = static_cast<size_t>(box.canvas_width) * 3;
  if (src.empty() || box.content_width <= 0 || box.content_height <= 0) {
    std::memset(canvas, 0, row_bytes * std::max(box.canvas_height, 0));
    return;
  }
  Image resized;
  const Image* content = &src;
  if (src.width != box.content_width || src.height != box.content_height) {
    resized = ScaleToContent(src, box);
    content = &resized;
  }
  const size_t content_bytes = static_cast<size_t>(box.content_width) * 3;
  for (int y = 0; y < box.content_height; ++y) {
    std::memcpy(canvas + y * row_bytes, content->pixel(0, y), content_bytes);
  }
  ZeroLetterboxPadding(box, canvas);
}

Image RenderLetterbox(const Image& src, const Letterbox& box) {
  if (box.canvas_width <= 0 || box.canvas_height <= 0) return Image();
  Image canvas(box.canvas_width, box.canvas_height);
  RenderLetterboxInto(src, box, canvas.data.data());
  return canvas;
}

}  // namespace mogserve::image
