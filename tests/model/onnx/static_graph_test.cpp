// Shape inference and load-time folding of ONNX graphs, operator by operator, against shapes
// worked out by hand from the ONNX operator specifications (the family-shaped networks are
// checked against ONNX Runtime in tests/onnx).
#include "model/onnx/static_graph.h"

#include <gtest/gtest.h>

#include "model/host_tensor.h"
#include "model/onnx/family.h"
#include "onnx_test_util.h"

namespace mogserve::model::onnx {
namespace {

using testing::ModelWriter;
using Shape = std::vector<int64_t>;

StatusOr<StaticGraph> Infer(const ModelWriter& w, int64_t h, int64_t width, int64_t batch = 1) {
  auto g = ParseModel(w.Bytes(), "t.onnx", ".");
  if (!g.ok()) return g.status();
  return StaticGraph::Infer(std::make_shared<const Graph>(std::move(*g)), batch, h, width);
}

Shape ShapeOf(const ModelWriter& w, const std::string& value, int64_t h, int64_t width) {
  auto s = Infer(w, h, width);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? s->value(value).shape : Shape{};
}

// A conv of 3 -> 8 channels with kernel k.
ModelWriter ConvModel(int64_t k, const std::function<void(::onnx::NodeProto*)>& attrs) {
  ModelWriter w(13);
  w.Floats("w", {8, 3, k, k}, std::vector<float>(8 * 3 * k * k, 0.1f));
  auto* n = w.Node("Conv", {"x", "w"}, {"y"});
  attrs(n);
  w.Output("y");
  return w;
}

TEST(OnnxStaticGraph, ConvPaddingModes) {
  using W = ModelWriter;
  // Explicit asymmetric pads [top, left, bottom, right]: (13 + 1 + 2 − 3) / 2 + 1 = 7 rows,
  // (13 − 3) / 2 + 1 = 6 columns.
  EXPECT_EQ(ShapeOf(ConvModel(3,
                              [](auto* n) {
                                W::IntsAttr(n, "strides", {2, 2});
                                W::IntsAttr(n, "pads", {1, 0, 2, 0});
                              }),
                    "y", 13, 13),
            (Shape{1, 8, 7, 6}));
  // SAME_UPPER / SAME_LOWER: ceil(in / stride) whatever the kernel.
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    EXPECT_EQ(ShapeOf(ConvModel(5,
                                [&](auto* n) {
                                  W::IntsAttr(n, "strides", {2, 2});
                                  W::StringAttr(n, "auto_pad", mode);
                                }),
                      "y", 13, 20),
              (Shape{1, 8, 7, 10}));
  }
  // Dilation 2 without padding: 13 - 2·(3 − 1) = 9.
  EXPECT_EQ(ShapeOf(ConvModel(3,
                              [](auto* n) {
                                W::IntsAttr(n, "dilations", {2, 2});
                              }),
                    "y", 13, 13),
            (Shape{1, 8, 9, 9}));
  auto s = Infer(ConvModel(3, [](auto*) {}), 13, 13);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->total_macs(), int64_t{8} * 11 * 11 * 3 * 3 * 3);
}

TEST(OnnxStaticGraph, ConvThatDoesNotFitIsNamed) {
  ModelWriter w(13);
  w.Floats("w", {8, 4, 3, 3}, std::vector<float>(8 * 4 * 9, 0.1f));  // 4 input channels
  w.Node("Conv", {"x", "w"}, {"y"});
  w.Output("y");
  auto s = Infer(w, 8, 8);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidData);
  EXPECT_NE(s.status().message().find("node 'Conv_1' (Conv): input [1,3,8,8] and kernel "
                                      "[8,4,3,3] with group 1 do not fit"),
            std::string::npos)
      << s.status().message();
}

TEST(OnnxStaticGraph, ConvTransposeAndPools) {
  ModelWriter w(13);
  w.Floats("wt", {3, 4, 4, 4}, std::vector<float>(3 * 4 * 16, 0.1f));
  auto* t = w.Node("ConvTranspose", {"x", "wt"}, {"up"});
  ModelWriter::IntsAttr(t, "strides", {2, 2});
  ModelWriter::IntsAttr(t, "pads", {1, 1, 1, 1});
  auto* mp = w.Node("MaxPool", {"up"}, {"mp"});
  ModelWriter::IntsAttr(mp, "kernel_shape", {3, 3});
  ModelWriter::IntsAttr(mp, "strides", {2, 2});
  ModelWriter::IntAttr(mp, "ceil_mode", 1);
  w.Node("GlobalAveragePool", {"mp"}, {"gap"});
  w.Output("gap");
  auto s = Infer(w, 10, 7);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // 2·(10 − 1) + 4 − 2 = 20, 2·(7 − 1) + 4 − 2 = 14; ceil((20 − 3) / 2) + 1 = 10, 7.
  EXPECT_EQ(s->value("up").shape, (Shape{1, 4, 20, 14}));
  EXPECT_EQ(s->value("mp").shape, (Shape{1, 4, 10, 7}));
  EXPECT_EQ(s->value("gap").shape, (Shape{1, 4, 1, 1}));
  EXPECT_EQ(s->macs(0), int64_t{1} * 3 * 10 * 7 * 4 * 4 * 4);
}

// The rows a detection head writes: NCHW -> NHWC -> [N, H·W·A, C], by Reshape with 0 and -1.
TEST(OnnxStaticGraph, HeadLayoutOps) {
  ModelWriter w(13);
  auto* tr = w.Node("Transpose", {"x"}, {"nhwc"});
  ModelWriter::IntsAttr(tr, "perm", {0, 2, 3, 1});
  w.Ints("rows_shape", {0, -1, 1});
  w.Node("Reshape", {"nhwc", "rows_shape"}, {"rows"});
  auto* fl = w.Node("Flatten", {"x"}, {"flat"});
  ModelWriter::IntAttr(fl, "axis", 2);
  w.Ints("sq_axes", {0});
  w.Node("Squeeze", {"rows", "sq_axes"}, {"squeezed"});
  w.Ints("unsq_axes", {0, -1});
  w.Node("Unsqueeze", {"squeezed", "unsq_axes"}, {"unsqueezed"});
  auto* sm = w.Node("Softmax", {"rows"}, {"probs"});
  ModelWriter::IntAttr(sm, "axis", -1);
  w.Output("probs");
  w.Output("flat");
  w.Output("unsqueezed");
  auto s = Infer(w, 5, 7);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->value("nhwc").shape, (Shape{1, 5, 7, 3}));
  EXPECT_EQ(s->value("rows").shape, (Shape{1, 105, 1}));
  EXPECT_EQ(s->value("flat").shape, (Shape{3, 35}));
  EXPECT_EQ(s->value("squeezed").shape, (Shape{105, 1}));
  EXPECT_EQ(s->value("unsqueezed").shape, (Shape{1, 105, 1, 1}));
  EXPECT_EQ(s->value("probs").shape, (Shape{1, 105, 1}));
}

// Squeeze/Unsqueeze take axes as an attribute up to opset 12 and as an input from 13.
TEST(OnnxStaticGraph, AxesMoveFromAttributeToInputAtOpset13) {
  ModelWriter w(11);
  auto* u = w.Node("Unsqueeze", {"x"}, {"u"});
  ModelWriter::IntsAttr(u, "axes", {1});
  w.Output("u");
  EXPECT_EQ(ShapeOf(w, "u", 4, 4), (Shape{1, 1, 3, 4, 4}));
}

// The shape sub-graph torch writes for F.interpolate(x, size=lateral.shape[2:]): Shape, Gather,
// Unsqueeze, Concat, Cast, Slice -> Resize(sizes), all folded at load time.
TEST(OnnxStaticGraph, FoldsShapeSubgraphsIntoResize) {
  ModelWriter w(13);
  w.Floats("k", {3, 3, 1, 1}, std::vector<float>(9, 1.0f));
  auto* pool = w.Node("MaxPool", {"x"}, {"small"});
  ModelWriter::IntsAttr(pool, "kernel_shape", {2, 2});
  ModelWriter::IntsAttr(pool, "strides", {2, 2});
  w.Node("Shape", {"x"}, {"shape"});
  w.Ints("starts", {2});
  w.Ints("ends", {std::numeric_limits<int64_t>::max()});  // "to the end"
  w.Node("Slice", {"shape", "starts", "ends"}, {"hw"});
  w.Node("Shape", {"small"}, {"small_shape"});
  w.Ints("zero_one", {0, 1});
  auto* g = w.Node("Gather", {"small_shape", "zero_one"}, {"nc"});
  ModelWriter::IntAttr(g, "axis", 0);
  auto* cat = w.Node("Concat", {"nc", "hw"}, {"sizes"});
  ModelWriter::IntAttr(cat, "axis", 0);
  auto* resize = w.Node("Resize", {"small", "", "", "sizes"}, {"big"});
  ModelWriter::StringAttr(resize, "mode", "nearest");
  w.Node("Add", {"big", "x"}, {"y"});
  w.Output("y");
  auto s = Infer(w, 15, 9);  // odd: the pooled map is 7x4, resized back to 15x9
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->value("small").shape, (Shape{1, 3, 7, 4}));
  ASSERT_TRUE(s->value("sizes").constant);
  EXPECT_EQ(s->value("sizes").constant->ints, (Shape{1, 3, 15, 9}));
  EXPECT_EQ(s->value("y").shape, (Shape{1, 3, 15, 9}));
  // Left to run: MaxPool, Resize, Add.
  EXPECT_EQ(s->live_nodes().size(), 3u);
}

TEST(OnnxStaticGraph, ResizeByScalesAndUpsampleAtOpset9) {
  ModelWriter w(11);
  w.Floats("scales", {4}, {1, 1, 2, 2});
  auto* r = w.Node("Resize", {"x", "", "scales"}, {"y"});
  ModelWriter::StringAttr(r, "mode", "linear");
  w.Output("y");
  EXPECT_EQ(ShapeOf(w, "y", 5, 6), (Shape{1, 3, 10, 12}));
  ModelWriter v(9);
  v.Floats("scales", {4}, {1, 1, 2, 2});
  v.Node("Upsample", {"x", "scales"}, {"y"});
  v.Output("y");
  EXPECT_EQ(ShapeOf(v, "y", 5, 6), (Shape{1, 3, 10, 12}));
  ModelWriter cubic(11);
  cubic.Floats("scales", {4}, {1, 1, 2, 2});
  auto* c = cubic.Node("Resize", {"x", "", "scales"}, {"y"});
  ModelWriter::StringAttr(c, "mode", "cubic");
  cubic.Output("y");
  auto s = Infer(cubic, 5, 6);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(s.status().message().find("mode 'cubic' (nearest, linear)"), std::string::npos);
}

TEST(OnnxStaticGraph, PadSliceSplitAcrossOpsets) {
  ModelWriter old(10);  // Pad's pads as an attribute
  auto* p = old.Node("Pad", {"x"}, {"y"});
  ModelWriter::IntsAttr(p, "pads", {0, 0, 1, 2, 0, 0, 3, 4});
  old.Output("y");
  EXPECT_EQ(ShapeOf(old, "y", 5, 5), (Shape{1, 3, 9, 11}));
  ModelWriter w(13);
  w.Ints("pads", {0, 0, 1, 2, 0, 0, 3, 4});
  w.Node("Pad", {"x", "pads"}, {"padded"});
  // Every other row from the end backwards: starts -1, ends "before the start", step -2.
  w.Ints("starts", {-1});
  w.Ints("ends", {std::numeric_limits<int64_t>::min()});
  w.Ints("axes", {2});
  w.Ints("steps", {-2});
  w.Node("Slice", {"padded", "starts", "ends", "axes", "steps"}, {"rows"});
  w.Ints("split", {1, 2});
  auto* sp = w.Node("Split", {"x", "split"}, {"a", "b"});
  ModelWriter::IntAttr(sp, "axis", 1);
  w.Output("rows");
  w.Output("b");
  auto s = Infer(w, 5, 5);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->value("padded").shape, (Shape{1, 3, 9, 11}));
  EXPECT_EQ(s->value("rows").shape, (Shape{1, 3, 5, 11}));  // rows 8, 6, 4, 2, 0
  EXPECT_EQ(s->value("a").shape, (Shape{1, 1, 5, 5}));
  EXPECT_EQ(s->value("b").shape, (Shape{1, 2, 5, 5}));
}

TEST(OnnxStaticGraph, FoldsConstantsExactly) {
  ModelWriter w(13);
  w.Ints("a", {6, 7, std::numeric_limits<int64_t>::max()});
  w.Ints("b", {2, -2, 1});
  w.Node("Div", {"a", "b"}, {"q"});    // 3, -3 (truncation), INT64_MAX
  w.Node("Add", {"a", "b"}, {"sum"});  // 8, 5, saturated at INT64_MAX
  auto* t = w.Node("Transpose", {"m"}, {"mt"});
  ModelWriter::IntsAttr(t, "perm", {1, 0});
  w.Floats("m", {2, 3}, {1, 2, 3, 4, 5, 6});
  w.Node("Relu", {"x"}, {"y"});
  w.Output("y");
  // "m" is defined after its reader in the initializer list: order of initializers is free.
  auto s = Infer(w, 4, 4);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->value("q").constant->ints, (Shape{3, -3, std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(s->value("sum").constant->ints, (Shape{8, 5, std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(s->value("mt").constant->floats, (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(s->live_nodes(), (std::vector<int>{3}));
}

TEST(OnnxStaticGraph, UnsupportedOperatorsAreNamedWithTheSupportedList) {
  ModelWriter w(13);
  w.Node("Relu", {"x"}, {"r"});
  w.Node("Erf", {"r"}, {"e"});
  w.Output("e");
  auto s = Infer(w, 4, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnsupported);
  const std::string& m = s.status().message();
  EXPECT_NE(m.find("t.onnx: node 'Erf_2' is Erf, an operator mogserve does not import; "
                   "supported: Add, AveragePool, BatchNormalization"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("Upsample"), std::string::npos) << m;
}

TEST(OnnxStaticGraph, LoadTimeOnlyOperatorsOnImageValuesAreRefused) {
  ModelWriter w(13);
  w.Node("Floor", {"x"}, {"f"});
  w.Output("f");
  auto s = Infer(w, 4, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("node 'Floor_1' (Floor) computes on a value that depends "
                                      "on the image"),
            std::string::npos)
      << s.status().message();
}

// Shapes a corrupt or hostile file can ask for (found by tests/fuzz/onnx_model_fuzzer.cpp): an
// error naming the node, never an overflow (the sanitizer builds would abort on one).
TEST(OnnxStaticGraph, HugeShapesAreRefusedWithoutOverflow) {
  const int64_t big = std::numeric_limits<int64_t>::max() / 3;
  ModelWriter reshape(13);
  reshape.Ints("shape", {big, 384, -1});
  reshape.Node("Reshape", {"x", "shape"}, {"y"});
  reshape.Output("y");
  auto r = Infer(reshape, 8, 8);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot reshape [1,3,8,8]"), std::string::npos)
      << r.status().message();
  ModelWriter resize(11);
  resize.Floats("scales", {4}, {1, 1, 1e30f, 2});
  resize.Node("Resize", {"x", "", "scales"}, {"y"});
  resize.Output("y");
  auto z = Infer(resize, 8, 8);
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("scale"), std::string::npos) << z.status().message();
  ModelWriter broadcast(13);
  broadcast.Floats("w", {1 << 20, 1, 1, 1}, std::vector<float>(1 << 20, 1.0f));
  broadcast.Node("Mul", {"x", "w"}, {"y"});  // [1,3,8192,8192] x [2^20,1,1,1]: 3·2^46 values
  broadcast.Output("y");
  auto g = ParseModel(broadcast.Bytes(), "t.onnx", ".");
  ASSERT_TRUE(g.ok());
  auto b = StaticGraph::Infer(std::make_shared<const Graph>(std::move(*g)), 1, 8192, 8192);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("would make a value of shape [1048576,3,8192,8192]"),
            std::string::npos)
      << b.status().message();
}

// Found in review against the operator specifications: each is a malformed or unusual file that
// must give the spec's shape or an error naming the node, never a crash or undefined behaviour.
TEST(OnnxStaticGraph, ReviewedEdgeCases) {
  auto error_of = [](ModelWriter& w, const std::string& out) {
    w.Output(out);
    auto s = Infer(w, 11, 11);
    return s.ok() ? std::string("ok ") + ShapeString(s->value(out).shape) : s.status().message();
  };
  {  // Range on an empty tensor: scalars required.
    ModelWriter w(13);
    w.Ints("empty", {});
    w.Ints("four", {4});
    w.Node("Range", {"empty", "four", "four"}, {"r"});
    EXPECT_NE(error_of(w, "r").find("must be scalars"), std::string::npos);
  }
  {  // Split without outputs.
    ModelWriter w(13);
    w.Node("Split", {"x"}, {});
    w.Node("Relu", {"x"}, {"y"});
    EXPECT_NE(error_of(w, "y").find("no outputs"), std::string::npos);
  }
  {  // A pooling kernel below 1.
    ModelWriter w(13);
    auto* n = w.Node("MaxPool", {"x"}, {"y"});
    ModelWriter::IntsAttr(n, "kernel_shape", {-5, -5});
    EXPECT_NE(error_of(w, "y").find("kernel -5x-5"), std::string::npos);
  }
  {  // A group beyond the channels.
    ModelWriter w(13);
    w.Floats("w", {4, 1, 1, 1}, {1, 1, 1, 1});
    auto* n = w.Node("Conv", {"x", "w"}, {"y"});
    ModelWriter::IntAttr(n, "group", (int64_t{1} << 62) + 1);
    EXPECT_NE(error_of(w, "y").find("group"), std::string::npos);
  }
  {  // ConvTranspose with SAME: output = input · stride (11 · 2 = 22).
    ModelWriter w(13);
    w.Floats("w", {3, 2, 3, 3}, std::vector<float>(54, 0.1f));
    auto* n = w.Node("ConvTranspose", {"x", "w"}, {"y"});
    ModelWriter::IntsAttr(n, "strides", {2, 2});
    ModelWriter::StringAttr(n, "auto_pad", "SAME_UPPER");
    EXPECT_EQ(error_of(w, "y"), "ok [1,2,22,22]");
  }
  {  // Resize with scales and an empty sizes input (opset 11+): the scales count.
    ModelWriter w(11);
    w.Floats("roi", {0}, {});
    w.Floats("scales", {4}, {1, 1, 2, 2});
    w.Ints("sizes", {});
    w.Node("Resize", {"x", "roi", "scales", "sizes"}, {"y"});
    EXPECT_EQ(error_of(w, "y"), "ok [1,3,22,22]");
  }
  {  // Flatten of a value with a zero dim: [0, 3], not [0, 0].
    ModelWriter w(13);
    w.Floats("z", {0, 3}, {});
    w.Node("Flatten", {"z"}, {"f"});
    w.Node("Relu", {"x"}, {"y"});
    w.Output("y");
    auto s = Infer(w, 4, 4);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->value("f").shape, (Shape{0, 3}));
  }
  {  // Unsqueeze at opset 13 needs its axes input.
    ModelWriter w(13);
    w.Node("Unsqueeze", {"x"}, {"y"});
    EXPECT_NE(error_of(w, "y").find("axes (input 1) is missing"), std::string::npos);
  }
  {  // Slice of an empty axis with a negative step: empty.
    ModelWriter w(13);
    w.Floats("z", {0}, {});
    w.Ints("starts", {-1});
    w.Ints("ends", {std::numeric_limits<int64_t>::min()});
    w.Ints("axes", {0});
    w.Ints("steps", {-1});
    w.Node("Slice", {"z", "starts", "ends", "axes", "steps"}, {"s"});
    w.Node("Relu", {"x"}, {"y"});
    w.Output("y");
    auto s = Infer(w, 4, 4);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->value("s").shape, (Shape{0}));
  }
  {  // A declared input beyond every bound.
    ModelWriter w(13, {1, 3, std::numeric_limits<int64_t>::max(), 4});
    w.Node("Relu", {"x"}, {"y"});
    w.Output("y");
    auto g = ParseModel(w.Bytes(), "t.onnx", ".");
    ASSERT_TRUE(g.ok());
    auto s = StaticGraph::Infer(std::make_shared<const Graph>(std::move(*g)), 1,
                                std::numeric_limits<int64_t>::max(), 4);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("input 'x' has shape"), std::string::npos);
  }
}

// Cast folds to the target type's values (ONNX Runtime's results).
TEST(OnnxStaticGraph, CastFoldsPerTargetType) {
  ModelWriter w(13);
  w.Floats("f", {4}, {0.5f, 2.0f, -1.7f, 300.0f});
  auto cast = [&](const std::string& out, int64_t to) {
    ModelWriter::IntAttr(w.Node("Cast", {"f"}, {out}), "to", to);
  };
  cast("as_bool", 9);
  cast("as_u8", 2);
  cast("as_i64", 7);
  w.Node("Relu", {"x"}, {"y"});
  w.Output("y");
  auto s = Infer(w, 4, 4);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->value("as_bool").constant->ints, (Shape{1, 1, 1, 1}));
  EXPECT_EQ(s->value("as_u8").constant->ints, (Shape{0, 2, 255, 44}));
  EXPECT_EQ(s->value("as_i64").constant->ints, (Shape{0, 2, -1, 300}));
  EXPECT_EQ(s->value("as_u8").constant->data_type, 2);
  ModelWriter nan(13);
  nan.Floats("f", {1}, {std::numeric_limits<float>::quiet_NaN()});
  ModelWriter::IntAttr(nan.Node("Cast", {"f"}, {"i"}), "to", 7);
  nan.Output("i");
  auto bad = Infer(nan, 4, 4);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cannot cast nan to an integer"), std::string::npos)
      << bad.status().message();
}

TEST(OnnxStaticGraph, ImageInputForms) {
  ModelWriter nhwc(12, {1, 128, 128, 3});
  auto* t = nhwc.Node("Transpose", {"x"}, {"nchw"});
  ModelWriter::IntsAttr(t, "perm", {0, 3, 1, 2});
  nhwc.Output("nchw");
  auto s = Infer(nhwc, 128, 128);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->input().channels_last);
  EXPECT_EQ(s->value("nchw").shape, (Shape{1, 3, 128, 128}));
  auto wrong_size = Infer(nhwc, 64, 64);
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_NE(wrong_size.status().message().find("is fixed at [1,128,128,3]; asked for [1,64,64,3]"),
            std::string::npos)
      << wrong_size.status().message();
  ModelWriter gray(13, {1, 1, -1, -1});
  gray.Node("Relu", {"x"}, {"y"});
  gray.Output("y");
  auto g = Infer(gray, 8, 8);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("has 1 channels; an RGB image has 3"), std::string::npos);
  ModelWriter two(13);
  two.graph()->add_input()->set_name("scale");
  two.Node("Mul", {"x", "scale"}, {"y"});
  two.Output("y");
  auto t2 = Infer(two, 8, 8);
  ASSERT_FALSE(t2.ok());
  EXPECT_NE(t2.status().message().find("takes one image input; this model has 2: x, scale"),
            std::string::npos)
      << t2.status().message();
}

TEST(OnnxFamily, FromOutputRows) {
  // UltraFace: [1, A, 2] scores and [1, A, 4] boxes.
  ModelWriter w(13);
  auto* tr = w.Node("Transpose", {"x"}, {"nhwc"});
  ModelWriter::IntsAttr(tr, "perm", {0, 2, 3, 1});
  w.Ints("s2", {1, -1, 2});
  w.Ints("s4", {1, -1, 4});
  w.Floats("w", {12, 3, 1, 1}, std::vector<float>(36, 0.1f));
  w.Node("Conv", {"x", "w"}, {"c"});
  auto* tc = w.Node("Transpose", {"c"}, {"cn"});
  ModelWriter::IntsAttr(tc, "perm", {0, 2, 3, 1});
  w.Node("Reshape", {"cn", "s4"}, {"boxes"});
  w.Ints("s6", {1, -1, 6});
  w.Node("Reshape", {"nhwc", "s2"}, {"odd"});
  w.Output("odd");
  w.Output("boxes");
  auto s = Infer(w, 4, 4);  // odd: [1, 24, 2]; boxes: [1, 48, 4] -> rows differ: no family
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const FamilyMatch none = DetectFamily(*s);
  EXPECT_FALSE(none.family);
  EXPECT_NE(none.reason.find("odd 24x2, boxes 48x4 match no known family"), std::string::npos)
      << none.reason;
  EXPECT_EQ(ParseFamily("scrfd"), Family::kScrfd);
  EXPECT_FALSE(ParseFamily("ssd"));
}

}  // namespace
}  // namespace mogserve::model::onnx
