// A network written once, torch-free: a small static graph of the ops our detectors use, the
// weights each convolution and normalisation reads from a checkpoint (by key), the input
// normalisation and the output stage. Backends (the LibTorch CPU backend, the FP64 reference
// executor, later CUDA) run it through a LayerPlan (layer_plan.h), which adds the shapes of one
// input size. Immutable after NetworkBuilder::Finish(); safe to share between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mogserve::model {

// One tensor a checkpoint must (used) or may (!used) hold.
struct KeySpec {
  std::string name;
  std::vector<int64_t> shape;  // {} for a scalar (num_batches_tracked)
  bool used = true;            // false: allowed in checkpoints but never read (DSFD, ...)
};

enum class Activation { kNone, kRelu, kRelu6 };
const char* ActivationName(Activation act);

// How a stored kernel is laid out; prepared weights are always OIHW.
enum class KernelLayout {
  kOihw,         // PyTorch: [out, in/groups, kh, kw]
  kTfHwio,       // TensorFlow conv: [kh, kw, in, out]
  kTfDepthwise,  // TensorFlow depthwise: [kh, kw, channels, 1]
  kTfDense,      // TensorFlow fully connected: [in, out], a 1x1 kernel
};

// A block of output channels of a convolution, read from one stored kernel (and bias): rows
// first_row, first_row + row_step, ... of a stored kernel with stored_out_channels rows. Most
// convolutions are one part taking every row; the SSD's fused heads concatenate the box rows
// and the face-logit rows of two stored kernels.
struct WeightPart {
  KernelLayout layout = KernelLayout::kOihw;
  std::string weight_key;
  std::string bias_key;  // "" = no bias (zeros)
  int stored_out_channels = 0;
  int first_row = 0;
  int row_step = 1;
  int rows = 0;  // output channels this part contributes
};

// An inference BatchNorm folded into the convolution (in FP64): w' = w·s, b' = (b − mean)·s +
// beta with s = gamma / sqrt(var + eps).
struct BatchNormKeys {
  std::string gamma, beta, mean, var;
  std::string num_batches_tracked;  // "" when the format has none (TF); an unused key otherwise
  double eps = 1e-5;
};

// One set of convolution weights, named once, applied by one or more conv ops (MogFace's towers
// reuse conv1 four times per level).
struct ConvDef {
  std::string name;
  int out_channels = 0;
  int in_channels = 0;  // total input channels (in/groups per weight row)
  int kernel = 1;       // square kernels only
  int groups = 1;
  std::vector<WeightPart> parts;  // rows concatenate to out_channels
  std::optional<BatchNormKeys> batch_norm;
};

// GroupNorm weights (gamma, beta) over `channels` in `groups` groups.
struct NormDef {
  std::string name;
  int channels = 0;
  int groups = 1;
  double eps = 1e-5;
  std::string gamma_key, beta_key;
};

enum class OpKind {
  kConv,         // act(conv(in0) + bias [+ in1]); in1, when present, is a residual of the
                 // output's shape
  kMaxPool,      // kernel x kernel, stride, symmetric -inf padding
  kGroupNorm,    // GroupNorm with statistics in FP32 or better, then act (kNone or kRelu)
  kUpsampleAdd,  // in1 + top-left crop of x2 of in0: bilinear (half-pixel, edge-clamped) or
                 // nearest (source = dst / 2, rounded down), as Op::nearest says
  kConcat,       // channel concatenation of the inputs, in order
  kPadChannels,  // in0's channels, then zero channels up to the output's count (BlazeFace's
                 // residuals into wider blocks: TensorFlow's Pad on the channel axis)
  kActivation,   // act(in0) on its own, where the sum before it is read again (face-api's
                 // dense blocks: relu(a + b) feeds one conv while a + b feeds the next sum)
};
const char* OpKindName(OpKind kind);

// Convolution padding: symmetric `pad` on every side, TensorFlow SAME (out = ceil(in / stride);
// top/left get floor(total / 2), bottom/right the rest), resolved per input size, or fixed sides
// (an ONNX file's explicit `pads`, which may differ per side).
struct Padding {
  bool tf_same = false;
  int pad = 0;
  bool fixed_sides = false;
  int top = 0, left = 0, bottom = 0, right = 0;  // fixed_sides only
  static Padding Sides(int top, int left, int bottom, int right) {
    return {.fixed_sides = true, .top = top, .left = left, .bottom = bottom, .right = right};
  }
};

struct Op {
  OpKind kind = OpKind::kConv;
  std::string name;         // for errors and dumps
  std::vector<int> inputs;  // tensor ids
  int output = -1;          // tensor id
  int def = -1;             // kConv: ConvDef index; kGroupNorm: NormDef index
  Activation act = Activation::kNone;
  int stride = 1;
  int dilation = 1;
  Padding padding;  // kConv, kMaxPool
  int kernel = 1;   // kMaxPool
  bool nearest = false;  // kUpsampleAdd: nearest-neighbour instead of bilinear
};

// Input normalisation of the uint8 RGB canvas: x = (v − mean[c]) / divisor[c], per channel.
// zero_padding: the canvas area outside the picture is 0 after normalisation (MogFace, spec
// §10.1); otherwise padding pixels are normalised like the rest (the SSD's black border).
struct InputNormalization {
  double mean[3] = {0, 0, 0};
  double divisor[3] = {1, 1, 1};
  bool zero_padding = false;
};

// One prediction level of the output stage: per cell (y, x) and anchor a, the anchor index is
// offset + (y·W + x)·anchors + a; its score is sigmoid(score tensor channel score_channel + a)
// and its box numbers are box tensor channels box_channel + 4a .. + 4a + 3.
struct OutputLevel {
  int score_tensor = -1;
  int score_channel = 0;
  int box_tensor = -1;
  int box_channel = 0;
  int anchors_per_cell = 1;
};

class Network {
 public:
  const std::string& name() const { return name_; }
  int input_channels() const { return 3; }
  int input_tensor() const { return 0; }
  // Channels of each tensor (0 is the input); spatial sizes come from a LayerPlan.
  const std::vector<int>& tensor_channels() const { return tensor_channels_; }
  const std::vector<std::string>& tensor_names() const { return tensor_names_; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<ConvDef>& convs() const { return convs_; }
  const std::vector<NormDef>& norms() const { return norms_; }
  const std::vector<OutputLevel>& outputs() const { return outputs_; }
  // Tensors handed back as they are, each image's values channels-last ([H, W, C], FP32), for
  // decoders that apply their own activations and box decoding (the ONNX families). A network
  // has output levels, raw outputs or both.
  const std::vector<int>& raw_outputs() const { return raw_outputs_; }
  const InputNormalization& normalization() const { return normalization_; }
  // > 0: the only input size (square) the network accepts (the SSD's 512).
  int fixed_input_side() const { return fixed_input_side_; }
  // Keys read besides the convs and norms (the SSD's anchor table), and keys a checkpoint may
  // carry without them being read (MogFace's DSFD branch, dead tower convs).
  const std::vector<KeySpec>& other_keys() const { return other_keys_; }
  // Whether a checkpoint may hold keys the network does not list (the tfjs file's constants).
  bool allows_unlisted_keys() const { return allows_unlisted_keys_; }

  // Every key the network lists: each conv's and norm's (definition order), then other_keys().
  std::vector<KeySpec> Keys() const;
  // The keys one conv or norm definition reads, with their stored shapes.
  std::vector<KeySpec> ConvKeys(int conv) const;
  std::vector<KeySpec> NormKeys(int norm) const;

 private:
  friend class NetworkBuilder;

  std::string name_;
  std::vector<int> tensor_channels_;
  std::vector<std::string> tensor_names_;
  std::vector<Op> ops_;
  std::vector<ConvDef> convs_;
  std::vector<NormDef> norms_;
  std::vector<OutputLevel> outputs_;
  std::vector<int> raw_outputs_;
  InputNormalization normalization_;
  int fixed_input_side_ = 0;
  std::vector<KeySpec> other_keys_;
  bool allows_unlisted_keys_ = false;
};

}  // namespace mogserve::model
