#include "model/reference/reference_executor.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mogserve::model {
namespace {

using Buffer = std::vector<double>;

double Activate(double v, Activation act) {
  switch (act) {
    case Activation::kNone:
      return v;
    case Activation::kRelu:
      return std::max(v, 0.0);
    case Activation::kRelu6:
      return std::clamp(v, 0.0, 6.0);
  }
  return v;
}

// out[o] = bias[o] + Σ_i,ky,kx w[o,i,ky,kx] · in[g·ipg + i, y·s − top + ky·d, x·s − left + kx·d]
// (zero outside), then + residual, then the activation.
void Conv(const LayerPlan& plan, int index, const PreparedConv& w,
          const std::vector<Buffer>& tensors, Buffer& out) {
  const Op& op = plan.network().ops()[index];
  const ConvDef& def = plan.network().convs()[op.def];
  const TensorShape& is = plan.shape(op.inputs[0]);
  const TensorShape& os = plan.shape(op.output);
  const ResolvedPadding& pad = plan.padding(index);
  const Buffer& in = tensors[op.inputs[0]];
  const int k = def.kernel, ipg = def.in_channels / def.groups;
  const int opg = def.out_channels / def.groups;
  const size_t in_plane = static_cast<size_t>(is.height) * is.width;
  const size_t out_plane = static_cast<size_t>(os.height) * os.width;
  out.assign(out_plane * os.channels, 0.0);
  for (int o = 0; o < os.channels; ++o) {
    double* dst = out.data() + o * out_plane;
    const int group = o / opg;
    for (int i = 0; i < ipg; ++i) {
      const double* src = in.data() + (group * ipg + i) * in_plane;
      for (int ky = 0; ky < k; ++ky) {
        for (int kx = 0; kx < k; ++kx) {
          const double wv = w.weight.values[((static_cast<size_t>(o) * ipg + i) * k + ky) * k + kx];
          // The output columns whose input column x·s + shift lies inside the map.
          const int shift = kx * op.dilation - pad.left;
          const int x_lo = std::max(0, (-shift + op.stride - 1) / op.stride);
          const int x_hi = std::min(os.width, (is.width - shift + op.stride - 1) / op.stride);
          for (int y = 0; y < os.height; ++y) {
            const int iy = y * op.stride - pad.top + ky * op.dilation;
            if (iy < 0 || iy >= is.height) continue;
            const double* row = src + static_cast<size_t>(iy) * is.width + shift;
            double* out_row = dst + static_cast<size_t>(y) * os.width;
            for (int x = x_lo; x < x_hi; ++x) out_row[x] += wv * row[x * op.stride];
          }
        }
      }
    }
    const Buffer* residual = op.inputs.size() > 1 ? &tensors[op.inputs[1]] : nullptr;
    for (size_t p = 0; p < out_plane; ++p) {
      double v = dst[p] + w.bias.values[o];
      if (residual != nullptr) v += (*residual)[o * out_plane + p];
      dst[p] = Activate(v, op.act);
    }
  }
}

void MaxPool(const LayerPlan& plan, int index, const Buffer& in, Buffer& out) {
  const Op& op = plan.network().ops()[index];
  const TensorShape& is = plan.shape(op.inputs[0]);
  const TensorShape& os = plan.shape(op.output);
  const ResolvedPadding& pad = plan.padding(index);
  out.assign(static_cast<size_t>(os.elements()), 0.0);
  for (int c = 0; c < os.channels; ++c) {
    for (int y = 0; y < os.height; ++y) {
      for (int x = 0; x < os.width; ++x) {
        double best = -std::numeric_limits<double>::infinity();
        for (int ky = 0; ky < op.kernel; ++ky) {
          for (int kx = 0; kx < op.kernel; ++kx) {
            const int iy = y * op.stride - pad.top + ky, ix = x * op.stride - pad.left + kx;
            if (iy < 0 || iy >= is.height || ix < 0 || ix >= is.width) continue;
            best = std::max(best, in[(static_cast<size_t>(c) * is.height + iy) * is.width + ix]);
          }
        }
        out[(static_cast<size_t>(c) * os.height + y) * os.width + x] = best;
      }
    }
  }
}

// Biased variance over each group's channels and pixels, then the affine and the activation.
void GroupNorm(const LayerPlan& plan, int index, const PreparedNorm& w, const Buffer& in,
               Buffer& out) {
  const Op& op = plan.network().ops()[index];
  const NormDef& def = plan.network().norms()[op.def];
  const TensorShape& s = plan.shape(op.output);
  const size_t plane = static_cast<size_t>(s.height) * s.width;
  const int per_group = def.channels / def.groups;
  const size_t count = plane * per_group;
  out.resize(in.size());
  for (int g = 0; g < def.groups; ++g) {
    const double* src = in.data() + g * count;
    double sum = 0.0;
    for (size_t i = 0; i < count; ++i) sum += src[i];
    const double mean = sum / static_cast<double>(count);
    double sq = 0.0;
    for (size_t i = 0; i < count; ++i) sq += (src[i] - mean) * (src[i] - mean);
    const double inv_std = 1.0 / std::sqrt(sq / static_cast<double>(count) + def.eps);
    for (int j = 0; j < per_group; ++j) {
      const int c = g * per_group + j;
      for (size_t p = 0; p < plane; ++p) {
        const double v = (src[j * plane + p] - mean) * inv_std;
        out[c * plane + p] = Activate(v * w.gamma.values[c] + w.beta.values[c], op.act);
      }
    }
  }
}

// Bilinear x2 with half-pixel centres: source = max((dst + 0.5) / 2 − 0.5, 0), neighbours
// clamped to the last row/column; nearest: source dst / 2 rounded down. Only the lateral's
// top-left extent is produced.
void UpsampleAdd(const TensorShape& ts, const Buffer& top, const Buffer& lateral,
                 const TensorShape& os, bool nearest, Buffer& out) {
  auto axis = [nearest](int dst, int in, int* i0, int* i1, double* frac) {
    if (nearest) {
      *i0 = *i1 = std::min(dst / 2, in - 1);
      *frac = 0;
      return;
    }
    const double src = std::max((dst + 0.5) / 2.0 - 0.5, 0.0);
    *i0 = std::min(static_cast<int>(src), in - 1);
    *i1 = std::min(*i0 + 1, in - 1);
    *frac = src - *i0;
  };
  out = lateral;
  for (int c = 0; c < os.channels; ++c) {
    const double* t = top.data() + static_cast<size_t>(c) * ts.height * ts.width;
    for (int y = 0; y < os.height; ++y) {
      int y0, y1, x0, x1;
      double fy, fx;
      axis(y, ts.height, &y0, &y1, &fy);
      for (int x = 0; x < os.width; ++x) {
        axis(x, ts.width, &x0, &x1, &fx);
        const double v =
            (1 - fy) * ((1 - fx) * t[y0 * ts.width + x0] + fx * t[y0 * ts.width + x1]) +
            fy * ((1 - fx) * t[y1 * ts.width + x0] + fx * t[y1 * ts.width + x1]);
        out[(static_cast<size_t>(c) * os.height + y) * os.width + x] += v;
      }
    }
  }
}

void RunOp(const LayerPlan& plan, const PreparedWeights& weights, int index,
           std::vector<Buffer>& tensors) {
  const Op& op = plan.network().ops()[index];
  Buffer& out = tensors[op.output];
  switch (op.kind) {
    case OpKind::kConv:
      Conv(plan, index, weights.convs[op.def], tensors, out);
      break;
    case OpKind::kMaxPool:
      MaxPool(plan, index, tensors[op.inputs[0]], out);
      break;
    case OpKind::kGroupNorm:
      GroupNorm(plan, index, weights.norms[op.def], tensors[op.inputs[0]], out);
      break;
    case OpKind::kUpsampleAdd:
      UpsampleAdd(plan.shape(op.inputs[0]), tensors[op.inputs[0]], tensors[op.inputs[1]],
                  plan.shape(op.output), op.nearest, out);
      break;
    case OpKind::kConcat:
      out.clear();
      for (int t : op.inputs) out.insert(out.end(), tensors[t].begin(), tensors[t].end());
      break;
    case OpKind::kPadChannels:
      out = tensors[op.inputs[0]];
      out.resize(static_cast<size_t>(plan.shape(op.output).elements()), 0.0);
      break;
    case OpKind::kActivation:
      out = tensors[op.inputs[0]];
      for (double& v : out) v = Activate(v, op.act);
      break;
  }
}

// Each raw output's [C, H, W] values as [H, W, C], side by side.
std::vector<double> RawOutputs(const LayerPlan& plan, const std::vector<Buffer>& tensors) {
  std::vector<double> raw(static_cast<size_t>(plan.raw_floats()));
  const auto& outputs = plan.network().raw_outputs();
  for (size_t r = 0; r < outputs.size(); ++r) {
    const TensorShape& s = plan.shape(outputs[r]);
    const size_t plane = static_cast<size_t>(s.height) * s.width;
    const Buffer& t = tensors[outputs[r]];
    double* dst = raw.data() + plan.raw_offset(static_cast<int>(r));
    for (size_t p = 0; p < plane; ++p) {
      for (int c = 0; c < s.channels; ++c) dst[p * s.channels + c] = t[c * plane + p];
    }
  }
  return raw;
}

ReferenceOutputs OutputStage(const LayerPlan& plan, const std::vector<Buffer>& tensors) {
  ReferenceOutputs out;
  out.scores.resize(plan.anchors());
  out.boxes.resize(static_cast<size_t>(plan.anchors()) * 4);
  const auto& levels = plan.network().outputs();
  for (size_t l = 0; l < levels.size(); ++l) {
    const OutputLevel& level = levels[l];
    const TensorShape& s = plan.shape(level.score_tensor);
    const size_t plane = static_cast<size_t>(s.height) * s.width;
    const Buffer& scores = tensors[level.score_tensor];
    const Buffer& boxes = tensors[level.box_tensor];
    for (size_t p = 0; p < plane; ++p) {
      for (int a = 0; a < level.anchors_per_cell; ++a) {
        const size_t anchor =
            plan.level_offset(static_cast<int>(l)) + p * level.anchors_per_cell + a;
        const double logit = scores[(level.score_channel + a) * plane + p];
        out.scores[anchor] = 1.0 / (1.0 + std::exp(-logit));
        for (int k = 0; k < 4; ++k) {
          out.boxes[anchor * 4 + k] = boxes[(level.box_channel + 4 * a + k) * plane + p];
        }
      }
    }
  }
  return out;
}

}  // namespace

StatusOr<ReferenceOutputs> RunReference(const LayerPlan& plan, const PreparedWeights& weights,
                                        std::span<const double> input_chw) {
  if (static_cast<int64_t>(input_chw.size()) != plan.shape(0).elements()) {
    return InvalidArgument("reference input has " + std::to_string(input_chw.size()) +
                           " values, the plan takes " + std::to_string(plan.shape(0).elements()));
  }
  std::vector<Buffer> tensors(plan.network().tensor_channels().size());
  tensors[0].assign(input_chw.begin(), input_chw.end());
  const int ops = static_cast<int>(plan.network().ops().size());
  for (int i = 0; i < ops; ++i) {
    RunOp(plan, weights, i, tensors);
    for (int in : plan.network().ops()[i].inputs) {
      if (plan.last_use(in) == i) Buffer().swap(tensors[in]);
    }
  }
  ReferenceOutputs out = OutputStage(plan, tensors);
  out.raw = RawOutputs(plan, tensors);
  return out;
}

}  // namespace mogserve::model
