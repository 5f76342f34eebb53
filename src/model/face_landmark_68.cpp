#include "model/face_landmark_68.h"

#include "model/network_builder.h"

namespace mogserve::model {
namespace {

using ConvArgs = NetworkBuilder::ConvArgs;

constexpr int kCells = 7 * 7;
constexpr int kOutputs = 2 * kLandmark68Points;

ConvArgs Same(int stride, Activation act, int residual = -1) {
  ConvArgs a;
  a.stride = stride;
  a.padding.tf_same = true;
  a.act = act;
  a.residual = residual;
  return a;
}

int AddConv(NetworkBuilder& b, const std::string& name, KernelLayout layout,
            const std::string& weight_key, const std::string& bias_key, int kernel, int in, int out,
            int groups) {
  ConvDef d;
  d.name = name;
  d.out_channels = out;
  d.in_channels = in;
  d.kernel = kernel;
  d.groups = groups;
  d.parts.push_back(
      {layout, weight_key, bias_key, layout == KernelLayout::kTfDepthwise ? in : out, 0, 1, out});
  return b.AddConvDef(std::move(d));
}

// tf.separableConv2d(x, depthwise 3x3 (no bias), pointwise 1x1, stride, 'same') + bias, then
// act(· + residual).
int SeparableConv(NetworkBuilder& b, const std::string& prefix, int x, int out, int stride,
                  Activation act, int residual = -1) {
  const int in = b.channels(x);
  const int dw = AddConv(b, prefix + "/depthwise_filter", KernelLayout::kTfDepthwise,
                         prefix + "/depthwise_filter", "", 3, in, in, in);
  const int pw = AddConv(b, prefix + "/pointwise_filter", KernelLayout::kTfHwio,
                         prefix + "/pointwise_filter", prefix + "/bias", 1, in, out, 1);
  const int d = b.Conv(dw, x, Same(stride, Activation::kNone), prefix + "/depthwise");
  return b.Conv(pw, d, Same(1, act, residual), prefix + "/pointwise");
}

// denseBlock4: out1 = relu(conv0(x)) (stride 2), out_k = sep_k(relu(out1 + ... + out_{k-1})),
// result relu(out1 + ... + out4). The running sums are the convolutions' residuals; the ReLU of
// a sum that is read again is an op of its own.
int DenseBlock4(NetworkBuilder& b, const std::string& prefix, int x, int out, bool first) {
  int out1;
  if (first) {
    const int c0 = AddConv(b, prefix + "/conv0", KernelLayout::kTfHwio, prefix + "/conv0/filters",
                           prefix + "/conv0/bias", 3, b.channels(x), out, 1);
    out1 = b.Conv(c0, x, Same(2, Activation::kRelu), prefix + "/conv0");
  } else {
    out1 = SeparableConv(b, prefix + "/conv0", x, out, 2, Activation::kRelu);
  }
  const int sum2 = SeparableConv(b, prefix + "/conv1", out1, out, 1, Activation::kNone, out1);
  const int in3 = b.Activate(sum2, Activation::kRelu, prefix + "/relu2");
  const int sum3 = SeparableConv(b, prefix + "/conv2", in3, out, 1, Activation::kNone, sum2);
  const int in4 = b.Activate(sum3, Activation::kRelu, prefix + "/relu3");
  return SeparableConv(b, prefix + "/conv3", in4, out, 1, Activation::kRelu, sum3);
}

}  // namespace

std::shared_ptr<const Network> BuildFaceLandmark68Network() {
  NetworkBuilder b("FaceLandmark68Net");
  InputNormalization n;
  constexpr double kMean[3] = {122.782, 117.001, 104.298};
  for (int c = 0; c < 3; ++c) {
    n.mean[c] = kMean[c];
    n.divisor[c] = 255.0;
  }
  b.SetNormalization(n);
  b.SetFixedInputSide(kLandmark68InputSide);
  int x = b.input();
  constexpr int kChannels[4] = {32, 64, 128, 256};
  for (int i = 0; i < 4; ++i) {
    x = DenseBlock4(b, "dense" + std::to_string(i), x, kChannels[i], i == 0);
  }
  const int fc = AddConv(b, "fc", KernelLayout::kTfDense, "fc/weights", "fc/bias", 1, kChannels[3],
                         kOutputs, 1);
  b.AddRawOutput(b.Conv(fc, x, Same(1, Activation::kNone), "fc"));
  return b.FinishOrAbort();
}

StatusOr<std::unique_ptr<FaceLandmark68Model>> FaceLandmark68Model::Create(
    const TfjsWeights& weights) {
  std::shared_ptr<const Network> network = BuildFaceLandmark68Network();
  MOGSERVE_ASSIGN_OR_RETURN(PreparedWeights prepared,
                            PrepareWeights(*network, weights, "FaceLandmark68Net weights"));
  return std::unique_ptr<FaceLandmark68Model>(
      new FaceLandmark68Model(std::move(network), std::move(prepared)));
}

StatusOr<std::unique_ptr<FaceLandmark68Model>> FaceLandmark68Model::Load(const std::string& dir) {
  auto weights = LoadTfjsWeights(dir, kLandmark68WeightsName);
  if (!weights.ok()) {
    return Status(weights.status().code(),
                  weights.status().message() + " (run scripts/setup.sh to fetch the landmark net)");
  }
  return Create(*weights);
}

std::vector<Point> Points68(std::span<const float> raw) {
  std::vector<Point> points(kLandmark68Points);
  if (raw.size() != static_cast<size_t>(kCells) * kOutputs) return {};
  for (int v = 0; v < kOutputs; ++v) {
    double sum = 0;
    for (int cell = 0; cell < kCells; ++cell) sum += raw[static_cast<size_t>(cell) * kOutputs + v];
    const double mean = sum / kCells;
    if (v % 2 == 0) {
      points[v / 2].x = static_cast<float>(mean);
    } else {
      points[v / 2].y = static_cast<float>(mean);
    }
  }
  return points;
}

std::vector<Point> FivePointsOf68(std::span<const Point> p) {
  if (p.size() != static_cast<size_t>(kLandmark68Points)) return {};
  auto mean = [&](int first) {
    Point m{0, 0};
    for (int i = first; i < first + 6; ++i) {
      m.x += p[i].x / 6;
      m.y += p[i].y / 6;
    }
    return m;
  };
  // iBUG 36-41 is the subject's right eye: the picture's left.
  std::vector<Point> five(kNumLandmarks);
  five[kLeftEye] = mean(36);
  five[kRightEye] = mean(42);
  five[kNose] = p[30];
  five[kLeftMouth] = p[48];
  five[kRightMouth] = p[54];
  return five;
}

}  // namespace mogserve::model
