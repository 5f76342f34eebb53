#include "model/mogface/mogface_network.h"

#include <array>
#include <string>
#include <vector>

#include "model/network_builder.h"

namespace mogserve::model::mogface {
namespace {

using ConvArgs = NetworkBuilder::ConvArgs;

constexpr int kGroupNormGroups = 16;

ConvArgs Args(Activation act, int pad = 0, int stride = 1, int dilation = 1, int residual = -1) {
  ConvArgs a;
  a.act = act;
  a.padding.pad = pad;
  a.stride = stride;
  a.dilation = dilation;
  a.residual = residual;
  return a;
}

// Spec §2: stem, max-pool, four stages of v1.5 bottlenecks. Returns C2..C5.
std::array<int, 4> AddBackbone(NetworkBuilder& b, const std::array<int, 4>& blocks) {
  const int stem = b.AddTorchConv("backbone.conv1", 64, 3, 7, false, "backbone.bn1");
  int x = b.Conv(stem, b.input(), Args(Activation::kRelu, 3, 2));
  x = b.MaxPool(x, 3, 2, 1);
  std::array<int, 4> features{};
  int in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int width = 64 << stage, stride = stage == 0 ? 1 : 2;
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::string p = "backbone.layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      const int s = i == 0 ? stride : 1;
      const int c1 = b.AddTorchConv(p + ".conv1", width, in, 1, false, p + ".bn1");
      const int c2 = b.AddTorchConv(p + ".conv2", width, width, 3, false, p + ".bn2");
      const int c3 = b.AddTorchConv(p + ".conv3", 4 * width, width, 1, false, p + ".bn3");
      int shortcut = x;
      int y = b.Conv(c1, x, Args(Activation::kRelu));
      y = b.Conv(c2, y, Args(Activation::kRelu, 1, s));
      if (i == 0) {
        const int ds =
            b.AddTorchConv(p + ".downsample.0", 4 * width, in, 1, false, p + ".downsample.1");
        shortcut = b.Conv(ds, x, Args(Activation::kNone, 0, s));
      }
      x = b.Conv(c3, y, Args(Activation::kRelu, 0, 1, 1, shortcut));
      in = 4 * width;
    }
    features[stage] = x;
  }
  return features;
}

// Spec §3: LFPN. The top-down chain runs on the unsmoothed sums; the smoothing convs come after.
std::array<int, kLevels> AddLfpn(NetworkBuilder& b, const std::array<int, 4>& c, bool dsfd) {
  const int c6_reduce = b.AddTorchConv("fpn.c6.0", 512, 2048, 1, true, "fpn.c6.1");
  const int c6_conv = b.AddTorchConv("fpn.c6.3", 512, 512, 3, true, "fpn.c6.4");
  const int c7_reduce = b.AddTorchConv("fpn.c7.0", 128, 512, 1, true, "fpn.c7.1");
  const int c7_conv = b.AddTorchConv("fpn.c7.3", 256, 128, 3, true, "fpn.c7.4");
  const int c5_lat = b.AddTorchConv("fpn.c5_lat", 256, 2048, 3, true);
  const int c6_lat = b.AddTorchConv("fpn.c6_lat", 256, 512, 3, true);
  const int c7_lat = b.AddTorchConv("fpn.c7_lat", 256, 256, 3, true);
  const int p2_lat = b.AddTorchConv("fpn.p2_lat", 256, 256, 3, true);
  const int p3_lat = b.AddTorchConv("fpn.p3_lat", 256, 256, 3, true);
  const int p4_lat = b.AddTorchConv("fpn.p4_lat", 256, 256, 3, true);
  const int ff54 = b.AddTorchConv("fpn.ff_c5_c4.main_conv", 256, 1024, 1, true);
  const int ff43 = b.AddTorchConv("fpn.ff_c4_c3.main_conv", 256, 512, 1, true);
  const int ff32 = b.AddTorchConv("fpn.ff_c3_c2.main_conv", 256, 256, 1, true);
  if (dsfd) {  // training-only (spec §3): listed, never run
    const int in[6] = {256, 512, 1024, 2048, 256, 256};
    for (int i = 0; i < 6; ++i) {
      b.AddUnusedTorchConv("fpn.dsfd_modules." + std::to_string(i), 256, in[i], 3, true);
    }
  }
  const ConvArgs relu = Args(Activation::kRelu), plain3x3 = Args(Activation::kNone, 1);
  int c6 = b.Conv(c6_reduce, c[3], relu);
  c6 = b.Conv(c6_conv, c6, Args(Activation::kRelu, 1, 2));
  int c7 = b.Conv(c7_reduce, c6, relu);
  c7 = b.Conv(c7_conv, c7, Args(Activation::kRelu, 1, 2));
  const int p5 = b.Conv(c5_lat, c[3], plain3x3);
  const int t4 = b.UpsampleAdd(p5, b.Conv(ff54, c[2], Args(Activation::kNone)), "fpn.t4");
  const int t3 = b.UpsampleAdd(t4, b.Conv(ff43, c[1], Args(Activation::kNone)), "fpn.t3");
  const int t2 = b.UpsampleAdd(t3, b.Conv(ff32, c[0], Args(Activation::kNone)), "fpn.t2");
  return {b.Conv(p2_lat, t2, plain3x3), b.Conv(p3_lat, t3, plain3x3),
          b.Conv(p4_lat, t4, plain3x3), p5,
          b.Conv(c6_lat, c6, plain3x3), b.Conv(c7_lat, c7, plain3x3)};
}

// A deep tower (spec §4a): 4 x (conv1, GroupNorm gn_i, ReLU), the SAME conv1 every time.
struct Tower {
  int conv = -1;
  std::array<int, 4> norms{};
};

Tower AddTower(NetworkBuilder& b, const std::string& name, int channels) {
  const std::string p = "pred_net.deep_" + name + "_head.";
  Tower t;
  t.conv = b.AddTorchConv(p + "conv1", channels, channels, 3, true);
  for (int i = 2; i <= 4; ++i) {  // conv2-conv4: dead weights (spec §4a quirk)
    b.AddUnusedTorchConv(p + "conv" + std::to_string(i), channels, channels, 3, true);
  }
  for (int i = 0; i < 4; ++i) {
    const std::string gn = p + "gn" + std::to_string(i + 1);
    t.norms[i] = b.AddNormDef({gn, channels, kGroupNormGroups, 1e-5, gn + ".weight", gn + ".bias"});
  }
  return t;
}

int RunTower(NetworkBuilder& b, const Tower& t, int x) {
  for (int i = 0; i < 4; ++i) {
    x = b.GroupNorm(t.norms[i], b.Conv(t.conv, x, Args(Activation::kNone, 1)), Activation::kRelu);
  }
  return x;
}

// SSH (spec §4a): [conv1, conv2_1(t), conv2_2_1(conv2_2(t))] with t = conv2(x), all ReLU.
struct Ssh {
  int conv1, conv2, conv2_1, conv2_2, conv2_2_1;
};

Ssh AddSsh(NetworkBuilder& b) {
  const std::string p = "pred_net.conv_SSH.";
  return {b.AddTorchConv(p + "conv1", 256, 256, 3, true),
          b.AddTorchConv(p + "conv2", 128, 256, 3, true),
          b.AddTorchConv(p + "conv2_1", 128, 128, 3, true),
          b.AddTorchConv(p + "conv2_2", 128, 128, 3, true),
          b.AddTorchConv(p + "conv2_2_1", 128, 128, 3, true)};
}

int RunSsh(NetworkBuilder& b, const Ssh& s, int x) {
  const int a = b.Conv(s.conv1, x, Args(Activation::kRelu, 1));
  const int t = b.Conv(s.conv2, x, Args(Activation::kRelu, 2, 1, 2));
  const int c = b.Conv(s.conv2_1, t, Args(Activation::kRelu, 1));
  int d = b.Conv(s.conv2_2, t, Args(Activation::kRelu, 2, 1, 2));
  d = b.Conv(s.conv2_2_1, d, Args(Activation::kRelu, 1));
  return b.Concat({a, c, d});
}

// CPM (spec §4b): r = ReLU(branch1 + branch2c(branch2b(branch2a))), then SSH parts on r;
// ReLU(concat) is written as a ReLU on each concatenated branch.
struct Cpm {
  int branch1, branch2a, branch2b, branch2c, ssh1, dimred, ssh2, ssh3a, ssh3b;
};

Cpm AddCpm(NetworkBuilder& b) {
  const std::string p = "pred_net.conv_CPM.";
  auto conv_bn = [&](const char* name, int out, int in, int k) {
    return b.AddTorchConv(p + name + ".conv1", out, in, k, true, p + name + ".bn1");
  };
  Cpm c;
  c.branch1 = conv_bn("branch1", 512, 256, 1);
  c.branch2a = conv_bn("branch2a", 128, 256, 1);
  c.branch2b = conv_bn("branch2b", 128, 128, 3);
  c.branch2c = conv_bn("branch2c", 512, 128, 1);
  c.ssh1 = b.AddTorchConv(p + "ssh_1", 128, 512, 3, true);
  c.dimred = b.AddTorchConv(p + "ssh_dimred", 64, 512, 3, true);
  c.ssh2 = b.AddTorchConv(p + "ssh_2", 64, 64, 3, true);
  c.ssh3a = b.AddTorchConv(p + "ssh_3a", 64, 64, 3, true);
  c.ssh3b = b.AddTorchConv(p + "ssh_3b", 64, 64, 3, true);
  return c;
}

int RunCpm(NetworkBuilder& b, const Cpm& c, int x) {
  const int r1 = b.Conv(c.branch1, x, Args(Activation::kNone));
  int y = b.Conv(c.branch2a, x, Args(Activation::kRelu));
  y = b.Conv(c.branch2b, y, Args(Activation::kRelu, 1));
  const int r = b.Conv(c.branch2c, y, Args(Activation::kRelu, 0, 1, 1, r1));
  const int s1 = b.Conv(c.ssh1, r, Args(Activation::kRelu, 1));
  const int d = b.Conv(c.dimred, r, Args(Activation::kRelu, 1));
  const int s2 = b.Conv(c.ssh2, d, Args(Activation::kRelu, 1));
  const int s3 =
      b.Conv(c.ssh3b, b.Conv(c.ssh3a, d, Args(Activation::kRelu, 1)), Args(Activation::kRelu, 1));
  return b.Concat({s1, s2, s3});
}

void AddOutputs(NetworkBuilder& b, int cls, int loc) {
  OutputLevel level;
  level.score_tensor = cls;
  level.box_tensor = loc;
  b.AddOutputLevel(level);
}

// Spec §4a/§4b: one head shared by every level.
void AddMogPredNet(NetworkBuilder& b, Variant variant, const std::array<int, kLevels>& levels,
                   bool dsfd_heads) {
  const int channels = HeadChannels(variant);
  Ssh ssh{};
  Cpm cpm{};
  if (variant == Variant::kR101) {
    ssh = AddSsh(b);
  } else {
    cpm = AddCpm(b);
  }
  const Tower cls_tower = AddTower(b, "cls", channels);
  const Tower loc_tower = AddTower(b, "loc", channels);
  const int pred_cls = b.AddTorchConv("pred_net.pred_cls", 1, channels, 3, true);
  const int pred_loc = b.AddTorchConv("pred_net.pred_loc", 4, channels, 3, true);
  if (dsfd_heads) {
    b.AddUnusedTorchConv("pred_net.dsfd_loc", 4, 256, 3, true);
    b.AddUnusedTorchConv("pred_net.dsfd_conf", 1, 256, 3, true);
  }
  for (int level : levels) {
    const int context = variant == Variant::kR101 ? RunSsh(b, ssh, level) : RunCpm(b, cpm, level);
    const int cls = b.Conv(pred_cls, RunTower(b, cls_tower, context), Args(Activation::kNone, 1));
    const int loc = b.Conv(pred_loc, RunTower(b, loc_tower, context), Args(Activation::kNone, 1));
    AddOutputs(b, cls, loc);
  }
}

// Spec §4c: unshared 3x3 predictors per level.
void AddRetinaPredNet(NetworkBuilder& b, const std::array<int, kLevels>& levels) {
  std::array<int, kLevels> cls{}, loc{};
  for (int l = 0; l < kLevels; ++l) {
    cls[l] = b.AddTorchConv("pred_net.pred_cls." + std::to_string(l), 1, 256, 3, true);
  }
  for (int l = 0; l < kLevels; ++l) {
    loc[l] = b.AddTorchConv("pred_net.pred_loc." + std::to_string(l), 4, 256, 3, true);
  }
  for (int l = 0; l < kLevels; ++l) {
    AddOutputs(b, b.Conv(cls[l], levels[l], Args(Activation::kNone, 1)),
               b.Conv(loc[l], levels[l], Args(Activation::kNone, 1)));
  }
}

}  // namespace

std::shared_ptr<const Network> BuildMogFaceNetwork(Variant variant, bool list_dsfd_heads) {
  NetworkBuilder b(std::string("MogFace ") + VariantName(variant));
  // Spec §6a: ImageNet mean and std (x255) in RGB order, then the extra /255.
  InputNormalization n;
  const double mean[3] = {123.675, 116.28, 103.53}, std[3] = {58.395, 57.12, 57.375};
  for (int c = 0; c < 3; ++c) {
    n.mean[c] = mean[c];
    n.divisor[c] = std[c] * 255.0;
  }
  n.zero_padding = true;  // padding = the mean colour (spec §10.1)
  b.SetNormalization(n);
  const std::array<int, 4> c = AddBackbone(b, BackboneBlocks(variant));
  const std::array<int, kLevels> levels = AddLfpn(b, c, HasDsfdModules(variant));
  if (variant == Variant::kR50) {
    AddRetinaPredNet(b, levels);
  } else {
    AddMogPredNet(b, variant, levels, list_dsfd_heads);
  }
  return b.FinishOrAbort();
}

}  // namespace mogserve::model::mogface
