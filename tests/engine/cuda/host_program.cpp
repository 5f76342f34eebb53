#include "host_program.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/cuda/float16.h"
#include "model/element_type.h"

namespace mogserve::engine::cuda {
namespace {

float Decode(const uint8_t* p, StorageType type) {
  switch (type) {
    case StorageType::kF32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case StorageType::kF16:
      return model::ElementToFloat(model::ElementType::kF16, p);
    case StorageType::kBf16:
      return model::ElementToFloat(model::ElementType::kBF16, p);
  }
  return 0.0f;
}

void Encode(float v, uint8_t* p, StorageType type) {
  if (type == StorageType::kF32) {
    std::memcpy(p, &v, 4);
    return;
  }
  const uint16_t bits = type == StorageType::kF16 ? FloatToHalfBits(v) : FloatToBf16Bits(v);
  std::memcpy(p, &bits, 2);
}

std::vector<float> DecodeAll(const std::vector<uint8_t>& bytes, StorageType type) {
  const int eb = StorageBytes(type);
  std::vector<float> out(bytes.size() / eb);
  for (size_t i = 0; i < out.size(); ++i) out[i] = Decode(bytes.data() + i * eb, type);
  return out;
}


class HostRun {
 public:
  HostRun(const Program& program, const DeviceWeights& weights)
      : p_(program), w_(weights), eb_(StorageBytes(program.type)),
        arena_(static_cast<size_t>(program.arena.total_bytes), 0xFF) {}

  StatusOr<HostProgramOutputs> Run(const std::vector<std::vector<uint8_t>>& canvases,
                                   const std::vector<int>& picture_size) {
    out_.conf.assign(static_cast<size_t>(p_.conf_floats()), NAN);
    out_.loc.assign(static_cast<size_t>(p_.loc_floats()), NAN);
    out_.raw.assign(static_cast<size_t>(p_.raw_total_floats()), NAN);
    for (size_t i = 0; i < p_.steps.size(); ++i) {
      const Status st = RunStep(p_.steps[i], canvases, picture_size);
      if (!st.ok()) {
        return InvalidArgument("step " + std::to_string(i) + " (" +
                               StepKindName(p_.steps[i].kind) + ", op " +
                               std::to_string(p_.steps[i].op) + "): " + st.message());
      }
    }
    return std::move(out_);
  }

 private:
  Status Check(int64_t offset, const NhwcShape& s, const char* what) const {
    if (offset < 0 || offset + s.elements() * eb_ > p_.arena.total_bytes) {
      return InvalidArgument(std::string(what) + " " + ShapeText(s) + " at byte " +
                             std::to_string(offset) + " is outside the arena of " +
                             std::to_string(p_.arena.total_bytes) + " bytes");
    }
    return Status::Ok();
  }

  StatusOr<std::vector<float>> Read(int64_t offset, const NhwcShape& s, const char* what) const {
    MOGSERVE_RETURN_IF_ERROR(Check(offset, s, what));
    std::vector<float> v(static_cast<size_t>(s.elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = Decode(&arena_[offset + i * eb_], p_.type);
    return v;
  }

  Status Write(int64_t offset, const NhwcShape& s, const std::vector<float>& v) {
    MOGSERVE_RETURN_IF_ERROR(Check(offset, s, "output"));
    for (size_t i = 0; i < v.size(); ++i) Encode(v[i], &arena_[offset + i * eb_], p_.type);
    return Status::Ok();
  }

  Status RunStep(const Step& s, const std::vector<std::vector<uint8_t>>& canvases,
                 const std::vector<int>& picture_size) {
    switch (s.kind) {
      case StepKind::kPreprocess:
        return Preprocess(s, canvases, picture_size);
      case StepKind::kPad:
        return Pad(s);
      case StepKind::kConv:
        return Conv(s);
      case StepKind::kClamp: {
        MOGSERVE_ASSIGN_OR_RETURN(std::vector<float> x, Read(s.out, s.out_shape, "clamp"));
        for (float& v : x) v = Clamp(v, s.lo, s.hi);
        return Write(s.out, s.out_shape, x);
      }
      case StepKind::kMaxPool:
        return MaxPool(s);
      case StepKind::kGroupNormStats:
        return GroupNormStats(s);
      case StepKind::kGroupNormApply:
        return GroupNormApply(s);
      case StepKind::kUpsampleAdd:
        return UpsampleAdd(s);
      case StepKind::kCopyChannels:
        return CopyChannels(s);
      case StepKind::kOutputLevel:
        return OutputLevel(s);
      case StepKind::kRawOutput:
        return RawOutput(s);
    }
    return InvalidArgument("unknown step kind");
  }

  Status Preprocess(const Step& s, const std::vector<std::vector<uint8_t>>& canvases,
                    const std::vector<int>& picture_size) {
    const NhwcShape& o = s.out_shape;
    if (static_cast<int>(canvases.size()) != o.n ||
        static_cast<int>(picture_size.size()) != 2 * o.n) {
      return InvalidArgument("expected " + std::to_string(o.n) + " canvases and sizes");
    }
    std::vector<float> v(static_cast<size_t>(o.elements()));
    for (int n = 0; n < o.n; ++n) {
      if (static_cast<int64_t>(canvases[n].size()) != int64_t{o.h} * o.w * 3) {
        return InvalidArgument("canvas " + std::to_string(n) + " has the wrong size");
      }
      for (int y = 0; y < o.h; ++y) {
        for (int x = 0; x < o.w; ++x) {
          const bool inside = x < picture_size[2 * n] && y < picture_size[2 * n + 1];
          const uint8_t* rgb = &canvases[n][(static_cast<size_t>(y) * o.w + x) * 3];
          for (int c = 0; c < o.c; ++c) {
            v[((static_cast<size_t>(n) * o.h + y) * o.w + x) * o.c + c] =
                PreprocessValue(p_.preprocess, c, c < 3 ? rgb[c] : uint8_t{0}, inside);
          }
        }
      }
    }
    return Write(s.out, o, v);
  }

  Status Pad(const Step& s) {
    MOGSERVE_ASSIGN_OR_RETURN(const std::vector<float> in, Read(s.in, s.in_shape, "pad input"));
    const NhwcShape &i = s.in_shape, &o = s.out_shape;
    std::vector<float> v(static_cast<size_t>(o.elements()), 0.0f);
    for (int n = 0; n < i.n; ++n) {
      for (int y = 0; y < i.h; ++y) {
        for (int x = 0; x < i.w; ++x) {
          for (int c = 0; c < i.c; ++c) {
            v[((static_cast<size_t>(n) * o.h + y + s.pad_top) * o.w + x + s.pad_left) * o.c + c] =
                in[((static_cast<size_t>(n) * i.h + y) * i.w + x) * i.c + c];
          }
        }
      }
    }
    return Write(s.out, o, v);
  }

  Status Conv(const Step& s) {
    const ConvGeometry& g = s.conv;
    const DeviceConvWeights& dw = w_.convs[s.def];
    if (dw.in_channels != g.in_channels || dw.out_channels != g.out_channels ||
        g.in_channels != s.in_shape.c || g.out_channels != s.out_shape.c) {
      return InvalidArgument("weights [" + std::to_string(dw.out_channels) + " x " +
                             std::to_string(dw.in_channels) + "] do not fit " +
                             ShapeText(s.in_shape) + " -> " + ShapeText(s.out_shape));
    }
    MOGSERVE_ASSIGN_OR_RETURN(const std::vector<float> x, Read(s.in, s.in_shape, "conv input"));
    std::vector<float> z;
    if (g.residual) {
      MOGSERVE_ASSIGN_OR_RETURN(z, Read(s.in2, s.out_shape, "residual"));
    }
    const std::vector<float> w = DecodeAll(dw.weight, w_.type);
    const std::vector<float> b = DecodeAll(dw.bias, w_.type);
    const NhwcShape &is = s.in_shape, &os = s.out_shape;
    const int cpg = g.in_channels / g.groups, kpg = g.out_channels / g.groups, k = g.kernel;
    std::vector<float> out(static_cast<size_t>(os.elements()));
    std::vector<double> acc(os.c);
    for (int n = 0; n < os.n; ++n) {
      for (int oy = 0; oy < os.h; ++oy) {
        for (int ox = 0; ox < os.w; ++ox) {
          for (int o = 0; o < os.c; ++o) acc[o] = b[o];
          for (int ky = 0; ky < k; ++ky) {
            const int iy = oy * g.stride - g.padding.top + ky * g.dilation;
            if (iy < 0 || iy >= is.h) continue;
            for (int kx = 0; kx < k; ++kx) {
              const int ix = ox * g.stride - g.padding.left + kx * g.dilation;
              if (ix < 0 || ix >= is.w) continue;
              const float* px = &x[((static_cast<size_t>(n) * is.h + iy) * is.w + ix) * is.c];
              for (int o = 0; o < os.c; ++o) {
                const float* wr = &w[((static_cast<size_t>(o) * k + ky) * k + kx) * cpg];
                const float* xr = px + (o / kpg) * cpg;
                double sum = 0.0;
                for (int c = 0; c < cpg; ++c) sum += static_cast<double>(wr[c]) * xr[c];
                acc[o] += sum;
              }
            }
          }
          const size_t base = ((static_cast<size_t>(n) * os.h + oy) * os.w + ox) * os.c;
          for (int o = 0; o < os.c; ++o) {
            double v = acc[o];
            if (g.residual) v += z[base + o];
            if (g.act == model::Activation::kRelu) v = v > 0.0 ? v : (v == v ? 0.0 : v);
            out[base + o] = static_cast<float>(v);
          }
        }
      }
    }
    return Write(s.out, os, out);
  }

  Status MaxPool(const Step& s) {
    MOGSERVE_ASSIGN_OR_RETURN(const std::vector<float> in, Read(s.in, s.in_shape, "pool input"));
    const NhwcShape &is = s.in_shape, &os = s.out_shape;
    std::vector<float> out(static_cast<size_t>(os.elements()));
    for (int n = 0; n < os.n; ++n) {
      for (int y = 0; y < os.h; ++y) {
        for (int x = 0; x < os.w; ++x) {
          const PoolWindow win =
              PoolWindowAt(y, x, is.h, is.w, s.kernel, s.stride, s.pad_top, s.pad_left);
          for (int c = 0; c < os.c; ++c) {
            out[((static_cast<size_t>(n) * os.h + y) * os.w + x) * os.c + c] =
                MaxOverWindow(win, [&](int yy, int xx) {
                  return in[((static_cast<size_t>(n) * is.h + yy) * is.w + xx) * is.c + c];
                });
          }
        }
      }
    }
    return Write(s.out, os, out);
  }

  Status GroupNormStats(const Step& s) {
    MOGSERVE_ASSIGN_OR_RETURN(const std::vector<float> x, Read(s.in, s.in_shape, "norm input"));
    const NhwcShape& sh = s.in_shape;
    const int per_group = s.channels / s.groups;
    stats_.assign(static_cast<size_t>(2) * sh.n * s.groups, 0.0f);
    for (int n = 0; n < sh.n; ++n) {
      for (int g = 0; g < s.groups; ++g) {
        double sum = 0.0, sq = 0.0;
        const int64_t pixels = int64_t{sh.h} * sh.w;
        for (int64_t p = 0; p < pixels; ++p) {
          for (int j = 0; j < per_group; ++j) {
            const double v = x[(n * pixels + p) * sh.c + g * per_group + j];
            sum += v;
            sq += v * v;
          }
        }
        const double count = static_cast<double>(pixels) * per_group;
        const double mean = sum / count;
        const double var = std::max(sq / count - mean * mean, 0.0);
        stats_[2 * (n * s.groups + g)] = static_cast<float>(mean);
        stats_[2 * (n * s.groups + g) + 1] = static_cast<float>(1.0 / std::sqrt(var + s.eps));
      }
    }
    return Status::Ok();
  }

  Status GroupNormApply(const Step& s) {
    MOGSERVE_ASSIGN_OR_RETURN(std::vector<float> x, Read(s.in, s.in_shape, "norm input"));
    const DeviceNormWeights& nw = w_.norms[s.def];
    const NhwcShape& sh = s.out_shape;
    const int per_group = s.channels / s.groups;
    for (size_t i = 0; i < x.size(); ++i) {
      const int c = static_cast<int>(i % sh.c);
      const int n = static_cast<int>(i / (static_cast<size_t>(sh.h) * sh.w * sh.c));
      if (c >= s.channels) {
        x[i] = 0.0f;
        continue;
      }
      const size_t row = static_cast<size_t>(n) * s.groups + c / per_group;
      x[i] = cuda::GroupNormApply(x[i], stats_[2 * row], stats_[2 * row + 1], nw.gamma[c], nw.beta[c],
                            s.act);
    }
    return Write(s.out, sh, x);
  }

  Status UpsampleAdd(const Step& s) {
    MOGSERVE_ASSIGN_OR_RETURN(const std::vector<float> top, Read(s.in, s.in_shape, "top"));
    MOGSERVE_ASSIGN_OR_RETURN(std::vector<float> out, Read(s.in2, s.out_shape, "lateral"));
    const NhwcShape &ts = s.in_shape, &os = s.out_shape;
    for (int n = 0; n < os.n; ++n) {
      for (int y = 0; y < os.h; ++y) {
        const UpsampleTap ty = UpsampleAxis(y, ts.h, s.nearest);
        for (int x = 0; x < os.w; ++x) {
          const UpsampleTap tx = UpsampleAxis(x, ts.w, s.nearest);
          for (int c = 0; c < os.c; ++c) {
            auto at = [&](int yy, int xx) {
              return top[((static_cast<size_t>(n) * ts.h + yy) * ts.w + xx) * ts.c + c];
            };
            out[((static_cast<size_t>(n) * os.h + y) * os.w + x) * os.c + c] +=
                Bilerp(at(ty.i0, tx.i0), at(ty.i0, tx.i1), at(ty.i1, tx.i0), at(ty.i1, tx.i1),
                       ty.frac, tx.frac);
          }
        }
      }
    }
    return Write(s.out, os, out);
  }

  // Only the channels this step owns are written: the others keep what the other inputs'
  // steps wrote (or the NaN the arena started with).
  Status CopyChannels(const Step& s) {
    MOGSERVE_ASSIGN_OR_RETURN(const std::vector<float> in, Read(s.in, s.in_shape, "concat input"));
    MOGSERVE_RETURN_IF_ERROR(Check(s.out, s.out_shape, "concat output"));
    const NhwcShape &is = s.in_shape, &os = s.out_shape;
    const int width = s.last_input ? os.c - s.channel_offset : s.channels;
    for (int64_t p = 0; p < int64_t{os.n} * os.h * os.w; ++p) {
      for (int c = 0; c < width; ++c) {
        const float v = c < s.channels ? in[p * is.c + c] : 0.0f;
        Encode(v, &arena_[s.out + (p * os.c + s.channel_offset + c) * eb_], p_.type);
      }
    }
    return Status::Ok();
  }

  Status OutputLevel(const Step& s) {
    MOGSERVE_ASSIGN_OR_RETURN(const std::vector<float> score, Read(s.in, s.in_shape, "scores"));
    MOGSERVE_ASSIGN_OR_RETURN(const std::vector<float> box, Read(s.in2, s.in2_shape, "boxes"));
    const int64_t plane = int64_t{s.in_shape.h} * s.in_shape.w;
    for (int n = 0; n < s.in_shape.n; ++n) {
      for (int64_t px = 0; px < plane; ++px) {
        for (int a = 0; a < s.anchors_per_cell; ++a) {
          const int64_t row =
              int64_t{n} * p_.anchors + AnchorRow(s.level_offset, px, s.anchors_per_cell, a);
          if (row >= p_.conf_floats()) return InvalidArgument("anchor row beyond the outputs");
          out_.conf[row] =
              Sigmoid(score[(n * plane + px) * s.in_shape.c + s.score_channel + a]);
          for (int k = 0; k < 4; ++k) {
            out_.loc[row * 4 + k] =
                box[(n * plane + px) * s.in2_shape.c + s.box_channel + 4 * a + k];
          }
        }
      }
    }
    return Status::Ok();
  }

  Status RawOutput(const Step& s) {
    MOGSERVE_ASSIGN_OR_RETURN(const std::vector<float> x, Read(s.in, s.in_shape, "raw output"));
    const int64_t plane = int64_t{s.in_shape.h} * s.in_shape.w;
    if (s.channels < 1 || s.channels > s.in_shape.c ||
        s.raw_offset + plane * s.channels > p_.raw_floats) {
      return InvalidArgument("raw output beyond an image's raw values");
    }
    for (int n = 0; n < s.in_shape.n; ++n) {
      for (int64_t px = 0; px < plane; ++px) {
        for (int c = 0; c < s.channels; ++c) {
          out_.raw[n * p_.raw_floats + s.raw_offset + px * s.channels + c] =
              x[(n * plane + px) * s.in_shape.c + c];
        }
      }
    }
    return Status::Ok();
  }

  const Program& p_;
  const DeviceWeights& w_;
  const int eb_;
  std::vector<uint8_t> arena_;
  std::vector<float> stats_;
  HostProgramOutputs out_;
};

}  // namespace

StatusOr<HostProgramOutputs> RunProgramOnHost(const Program& program, const DeviceWeights& weights,
                                              const std::vector<std::vector<uint8_t>>& canvases,
                                              const std::vector<int>& picture_size) {
  if (weights.type != program.type) {
    return InvalidArgument("weights stored as " + std::string(StorageTypeName(weights.type)) +
                           ", the program runs " + StorageTypeName(program.type));
  }
  return HostRun(program, weights).Run(canvases, picture_size);
}

}  // namespace mogserve::engine::cuda
