// The import of ONNX graphs into the network plan (model/onnx/onnx_network.h): what fuses into a
// convolution (BatchNormalization, a residual Add, Relu / Clip), the output chains and their
// activations, worked out by hand on small graphs and run by the FP64 reference executor; the
// structure of MediaPipe's BlazeFace files once imported; and every refusal naming its node. The
// values of whole imported files are checked against ONNX Runtime in tests/onnx.
#include "model/onnx/onnx_network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "model/layer_plan.h"
#include "model/prepared_weights.h"
#include "model/reference/reference_executor.h"
#include "onnx_test_util.h"

namespace mogserve::model::onnx {
namespace {

using testing::ModelWriter;

StatusOr<ImportedNetwork> ImportModel(const ModelWriter& w, int64_t h, int64_t width) {
  auto g = ParseModel(w.Bytes(), "t.onnx", ".");
  if (!g.ok()) return g.status();
  auto sg = StaticGraph::Infer(std::make_shared<const Graph>(std::move(*g)), 1, h, width);
  if (!sg.ok()) return sg.status();
  return ImportNetwork(*sg, "t", InputNormalization{});
}

// Ends `w` with a head: a 1x1 conv `from` (c channels) -> 2 channels (channels 0 and 1 of the
// input), Transpose (0, 2, 3, 1), Reshape [1, -1, 1], Sigmoid: output "score", 2 anchors per
// cell.
void ScoreHead(ModelWriter& w, const std::string& from, int c) {
  std::vector<float> k(2 * c, 0.0f);
  k[0] = 1;
  k[c + 1] = 1;
  w.Floats("head_w", {2, c, 1, 1}, k);
  w.Node("Conv", {from, "head_w"}, {"head"});
  ModelWriter::IntsAttr(w.Node("Transpose", {"head"}, {"t"}), "perm", {0, 2, 3, 1});
  w.Ints("rows", {1, -1, 1});
  w.Node("Reshape", {"t", "rows"}, {"r"});
  w.Node("Sigmoid", {"r"}, {"score"});
  w.Output("score");
}

TEST(OnnxNetwork, ConvolutionFusesBatchNormResidualAndClip) {
  // y = clip(BN(conv(x)) + x, 0, 6) with conv = 2·I and BN = (v − 0) / sqrt(1) · 1 + 1:
  // y = clip(3x + 1, 0, 6); score rows per pixel: sigmoid(y0), sigmoid(y1).
  ModelWriter w(13);
  w.Floats("w", {3, 3, 1, 1}, {2, 0, 0, 0, 2, 0, 0, 0, 2});
  w.Floats("b", {3}, {0, 0, 0});
  w.Node("Conv", {"x", "w", "b"}, {"c"});
  for (const char* name : {"gamma", "var"}) w.Floats(name, {3}, {1, 1, 1});
  for (const char* name : {"mean"}) w.Floats(name, {3}, {0, 0, 0});
  w.Floats("beta", {3}, {1, 1, 1});
  ModelWriter::FloatAttr(w.Node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"n"}),
                         "epsilon", 0.0f);
  w.Node("Add", {"n", "x"}, {"s"});
  w.Floats("lo", {}, {0});
  w.Floats("hi", {}, {6});
  w.Node("Clip", {"s", "lo", "hi"}, {"y"});
  ScoreHead(w, "y", 3);
  auto imported = ImportModel(w, 2, 3);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const Network& net = *imported->network;
  ASSERT_EQ(net.ops().size(), 2u);  // the fused convolution and the head
  const Op& fused = net.ops()[0];
  EXPECT_EQ(fused.inputs, (std::vector<int>{0, 0}));  // x, and x as the residual
  EXPECT_EQ(fused.act, Activation::kRelu6);
  ASSERT_TRUE(net.convs()[fused.def].batch_norm.has_value());
  ASSERT_EQ(imported->outputs.size(), 1u);
  const OutputSource& score = imported->outputs[0];
  EXPECT_EQ(score.name, "score");
  EXPECT_EQ(score.width, 1);
  EXPECT_EQ(score.activation, OutputActivation::kSigmoid);
  EXPECT_EQ(score.raw_count, 1);

  auto plan = LayerPlan::Create(imported->network, 2, 3);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto weights = PrepareWeights(net, imported->weights, "t");
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  // Channel 0: -1 .. 4 (clipped at 0 and 6 after 3x + 1), channel 1: 0.1 .. 0.6, channel 2: 9.
  std::vector<double> in;
  for (int i = 0; i < 6; ++i) in.push_back(i - 1.0);
  for (int i = 0; i < 6; ++i) in.push_back(0.1 * (i + 1));
  for (int i = 0; i < 6; ++i) in.push_back(9);
  auto out = RunReference(*plan, *weights, in);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<float> raw(out->raw.begin(), out->raw.end());
  const std::vector<float> rows = GraphOutput(score, raw, plan->raw_bounds());
  ASSERT_EQ(rows.size(), 12u);
  for (int p = 0; p < 6; ++p) {
    const double y0 = std::clamp(3 * in[p] + 1, 0.0, 6.0);
    const double y1 = std::clamp(3 * in[6 + p] + 1, 0.0, 6.0);
    EXPECT_NEAR(rows[2 * p], 1 / (1 + std::exp(-y0)), 1e-6) << "pixel " << p;
    EXPECT_NEAR(rows[2 * p + 1], 1 / (1 + std::exp(-y1)), 1e-6) << "pixel " << p;
  }
}

TEST(OnnxNetwork, OutputLevelsConcatenateAndSoftmaxRows) {
  // Two levels (the input at full size and max-pooled) of a 2-value softmax output: the raw
  // outputs in the output's order, and GraphOutput's rows summing to 1.
  ModelWriter w(13);
  w.Floats("k", {4, 3, 1, 1}, std::vector<float>(12, 0.5f));
  w.Node("Conv", {"x", "k"}, {"a"});
  auto* pool = w.Node("MaxPool", {"x"}, {"p"});
  ModelWriter::IntsAttr(pool, "kernel_shape", {2, 2});
  ModelWriter::IntsAttr(pool, "strides", {2, 2});
  w.Node("Conv", {"p", "k"}, {"b"});
  w.Ints("rows", {1, -1, 2});
  for (const char* level : {"a", "b"}) {
    ModelWriter::IntsAttr(w.Node("Transpose", {level}, {std::string(level) + "_t"}), "perm",
                          {0, 2, 3, 1});
    w.Node("Reshape", {std::string(level) + "_t", "rows"}, {std::string(level) + "_r"});
  }
  ModelWriter::IntAttr(w.Node("Concat", {"a_r", "b_r"}, {"c"}), "axis", 1);
  ModelWriter::IntAttr(w.Node("Softmax", {"c"}, {"conf"}), "axis", -1);
  w.Output("conf");
  auto imported = ImportModel(w, 4, 4);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const OutputSource& conf = imported->outputs.at(0);
  EXPECT_EQ(conf.raw_count, 2);
  EXPECT_EQ(conf.width, 2);
  EXPECT_EQ(conf.activation, OutputActivation::kSoftmax);
  auto plan = LayerPlan::Create(imported->network, 4, 4);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->raw_floats(), 16 * 4 + 4 * 4);  // (16 + 4 cells) x 2 anchors x 2 values
  std::vector<float> raw(plan->raw_floats());
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<float>(i % 7);
  const std::vector<float> rows = GraphOutput(conf, raw, plan->raw_bounds());
  ASSERT_EQ(rows.size(), raw.size());
  for (size_t r = 0; r < rows.size(); r += 2) {
    EXPECT_NEAR(rows[r] + rows[r + 1], 1.0f, 1e-6);
    EXPECT_NEAR(rows[r + 1] / rows[r], std::exp(raw[r + 1] - raw[r]), 1e-4);
  }
}

TEST(OnnxNetwork, BlazeFaceFilesMapOntoThePlan) {
  for (const auto& [file, side, convs, pads] :
       {std::make_tuple("face_detection_front_128x128_barracuda.onnx", 128, 37, 11),
        std::make_tuple("face_detection_back_256x256_barracuda.onnx", 256, 69, 2)}) {
    SCOPED_TRACE(file);
    auto g = ReadModel(std::string(MOGSERVE_MODELS_DIR) + "/blazeface/" + file);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    std::map<std::string, int> nodes;
    for (const Node& n : g->nodes) ++nodes[n.op_type];
    auto sg = StaticGraph::Infer(std::make_shared<const Graph>(std::move(*g)), 1, side, side);
    ASSERT_TRUE(sg.ok()) << sg.status().ToString();
    auto imported = ImportNetwork(*sg, "blazeface", InputNormalization{});
    ASSERT_TRUE(imported.ok()) << imported.status().ToString();
    const Network& net = *imported->network;
    EXPECT_EQ(net.fixed_input_side(), side);
    int conv_ops = 0, residual = 0, relu = 0, pad_channels = 0, pools = 0, fixed_sides = 0;
    for (const Op& op : net.ops()) {
      conv_ops += op.kind == OpKind::kConv;
      residual += op.kind == OpKind::kConv && op.inputs.size() == 2;
      relu += op.act == Activation::kRelu;
      pad_channels += op.kind == OpKind::kPadChannels;
      pools += op.kind == OpKind::kMaxPool;
      fixed_sides += op.padding.fixed_sides;
    }
    // Every Add became a convolution's residual, every Relu a convolution's activation, every
    // Concat (of ConstantOfShape zeros) a channel padding.
    EXPECT_EQ(conv_ops, convs);
    EXPECT_EQ(conv_ops, nodes["Conv"]);
    EXPECT_EQ(residual, nodes["Add"]);
    EXPECT_EQ(relu, nodes["Relu"]);
    EXPECT_EQ(pad_channels, pads);
    EXPECT_EQ(pad_channels, nodes["Concat"]);
    EXPECT_EQ(pools, nodes["MaxPool"]);
    EXPECT_GE(fixed_sides, 4);  // the 5x5 stem and the stride-2 depthwise convolutions
    ASSERT_EQ(imported->outputs.size(), 4u);
    const int widths[] = {1, 1, 16, 16};
    for (int o = 0; o < 4; ++o) {
      EXPECT_EQ(imported->outputs[o].width, widths[o]);
      EXPECT_EQ(imported->outputs[o].first_raw, o);
      EXPECT_EQ(imported->outputs[o].activation, OutputActivation::kNone);
    }
    auto plan = LayerPlan::Create(imported->network, side, side);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->raw_floats(), (512 + 384) * 17);
    EXPECT_TRUE(PrepareWeights(net, imported->weights, file).ok());
  }
}

// A conv "c" of x (3 -> 3 channels, kernel k x k2), then `tail`, then the score head from `last`.
ModelWriter Body(const std::function<std::string(ModelWriter&)>& tail, int64_t k = 1,
                 int64_t k2 = 1) {
  ModelWriter w(13);
  w.Floats("w", {3, 3, k, k2}, std::vector<float>(9 * k * k2, 0.1f));
  w.Node("Conv", {"x", "w"}, {"c"});
  ScoreHead(w, tail(w), 3);
  return w;
}

void ExpectRefused(const ModelWriter& w, const std::string& node, const std::string& words) {
  auto imported = ImportModel(w, 8, 8);
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(imported.status().message().find(node), std::string::npos)
      << imported.status().message();
  EXPECT_NE(imported.status().message().find(words), std::string::npos)
      << imported.status().message();
}

TEST(OnnxNetwork, WhatThePlanDoesNotTakeIsRefusedNamingTheNode) {
  ExpectRefused(Body([](ModelWriter& w) {
                  ModelWriter::FloatAttr(w.Node("LeakyRelu", {"c"}, {"l"}), "alpha", 0.1f);
                  return std::string("l");
                }),
                "LeakyRelu_2", "is not mapped onto the network plan");
  ExpectRefused(Body([](ModelWriter& w) {
                  w.Floats("lo", {}, {0});
                  w.Floats("hi", {}, {3});
                  w.Node("Clip", {"c", "lo", "hi"}, {"y"});
                  return std::string("y");
                }),
                "Clip_2", "ReLU6 (0, 6)");
  ExpectRefused(Body([](ModelWriter& w) {
                  w.Node("Add", {"x", "x"}, {"s"});
                  w.Node("Add", {"c", "s"}, {"y"});
                  return std::string("y");
                }),
                "Add_2", "residual sum");
  ExpectRefused(Body([](ModelWriter&) { return std::string("c"); }, 1, 3), "Conv_1",
                "square kernels");
  ExpectRefused(Body([](ModelWriter& w) {
                  w.Node("Relu", {"x"}, {"r"});
                  w.Node("Add", {"c", "r"}, {"y"});
                  return std::string("y");
                }),
                "Relu_2", "does not follow a convolution");
  // An output straight from a convolution (NCHW, not rows).
  ModelWriter direct(13);
  direct.Floats("w", {3, 3, 1, 1}, std::vector<float>(9, 0.1f));
  direct.Node("Conv", {"x", "w"}, {"c"});
  direct.Output("c");
  ExpectRefused(direct, "Conv_1", "an output must be");
}

}  // namespace
}  // namespace mogserve::model::onnx
