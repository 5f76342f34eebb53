// cuDNN's view of every convolution of the real plans (engine/cuda/conv_descriptors.h), built
// without a GPU: cuDNN's own output size equals the plan's, the math type follows the precision
// (FP32 never silently TF32), ReLU6 asks for a clamp, and the SSD's asymmetric TF-SAME paddings
// are refused (program.h pads those inputs explicitly, so the engine never asks).
#include "engine/cuda/conv_descriptors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/cuda/arena.h"
#include "model/mogface/mogface_network.h"
#include "model/ssd_mobilenet_v1.h"

namespace mogserve::engine::cuda {
namespace {

using ::testing::HasSubstr;

struct Counts {
  int convs = 0, asymmetric = 0, clamps = 0, identity = 0;
};

Counts CheckEveryConv(std::shared_ptr<const model::Network> net, int h, int w, int batch,
                      Precision precision) {
  auto plan = model::LayerPlan::Create(std::move(net), h, w);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  Counts counts;
  const auto& ops = plan->network().ops();
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (ops[i].kind != model::OpKind::kConv) continue;
    ++counts.convs;
    auto g = ConvGeometryOf(*plan, i, batch);
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    auto d = ConvDescriptors::Create(*g, StorageTypeOf(precision), precision);
    if (!g->padding.symmetric()) {
      ++counts.asymmetric;
      EXPECT_EQ(d.status().code(), StatusCode::kUnimplemented) << ops[i].name;
      EXPECT_THAT(d.status().message(), HasSubstr("asymmetric padding"));
      continue;
    }
    EXPECT_TRUE(d.ok()) << ops[i].name << ": " << d.status().ToString();
    if (!d.ok()) continue;
    auto dims = (*d)->OutputDims();
    EXPECT_TRUE(dims.ok()) << dims.status().ToString();
    const model::TensorShape& out = plan->shape(ops[i].output);
    const int channels = plan->network().convs()[ops[i].def].groups == 1
                             ? DeviceChannels(out.channels)
                             : out.channels;
    EXPECT_EQ(*dims, (std::array<int, 4>{batch, channels, out.height, out.width})) << ops[i].name;
    counts.clamps += (*d)->needs_clamp();
    counts.identity += (*d)->identity_epilogue();
    // The activation cuDNN was given: ReLU (ReLU6 too, plus a clamp) or identity, NaN not
    // propagated (what the fused call supports; see conv_descriptors.cpp).
    cudnnActivationMode_t mode{};
    cudnnNanPropagation_t nan{};
    double coef = -1;
    EXPECT_EQ(cudnnGetActivationDescriptor((*d)->activation(), &mode, &nan, &coef),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(nan, CUDNN_NOT_PROPAGATE_NAN) << ops[i].name;
    EXPECT_EQ(mode, ops[i].act == model::Activation::kNone ? CUDNN_ACTIVATION_IDENTITY
                                                           : CUDNN_ACTIVATION_RELU)
        << ops[i].name;
    EXPECT_EQ((*d)->identity_epilogue(), ops[i].act == model::Activation::kNone) << ops[i].name;
  }
  return counts;
}

TEST(ConvDescriptorsTest, MogFaceConvsMatchThePlanInCudnn) {
  using model::mogface::Variant;
  for (Variant v : {Variant::kR101, Variant::kE, Variant::kR50}) {
    SCOPED_TRACE(model::mogface::VariantName(v));
    const auto net = model::mogface::BuildMogFaceNetwork(v);
    for (auto [h, w] : {std::pair{640, 640}, std::pair{165, 229}}) {
      const Counts c = CheckEveryConv(net, h, w, 8, Precision::kFp16);
      EXPECT_GT(c.convs, 50);
      EXPECT_EQ(c.asymmetric, 0);
      EXPECT_EQ(c.clamps, 0);
      EXPECT_GT(c.identity, 0);  // laterals, towers
      EXPECT_LT(c.identity, c.convs);
    }
  }
}

TEST(ConvDescriptorsTest, SsdAsymmetricPaddingIsNotWrittenYet) {
  const Counts c =
      CheckEveryConv(model::BuildSsdMobilenetV1Network(), 512, 512, 4, Precision::kBf16);
  EXPECT_GT(c.convs, 20);
  EXPECT_GT(c.asymmetric, 0);  // the stride-2 TF-SAME convolutions
  EXPECT_LT(c.asymmetric, c.convs);
  EXPECT_GT(c.clamps, 0);  // ReLU6
}

TEST(ConvDescriptorsTest, MathTypeFollowsThePrecision) {
  auto plan = model::LayerPlan::Create(
      model::mogface::BuildMogFaceNetwork(model::mogface::Variant::kR50), 64, 64);
  ASSERT_TRUE(plan.ok());
  auto g = ConvGeometryOf(*plan, 0, 1);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->in_channels, 8);  // the stem reads the 3 channels padded to 8
  struct Case {
    Precision precision;
    cudnnMathType_t math;
  };
  for (const Case& c : {Case{Precision::kFp32, CUDNN_FMA_MATH},
                        Case{Precision::kTf32, CUDNN_DEFAULT_MATH},
                        Case{Precision::kFp16, CUDNN_TENSOR_OP_MATH},
                        Case{Precision::kBf16, CUDNN_TENSOR_OP_MATH}}) {
    auto d = ConvDescriptors::Create(*g, StorageTypeOf(c.precision), c.precision);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    auto math = (*d)->MathType();
    ASSERT_TRUE(math.ok());
    EXPECT_EQ(*math, c.math) << PrecisionName(c.precision);
  }
  EXPECT_EQ(ConvGeometryOf(*plan, 1, 1).status().code(), StatusCode::kInvalidArgument);  // max-pool
  EXPECT_EQ(ConvGeometryOf(*plan, 0, 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mogserve::engine::cuda
