// The CUDA backend's lowering of a layer plan into device steps (engine/cuda/program.h), run on
// the host step by step (host_program.h) with the planned arena offsets, the device weights'
// layout and padding, and rounding to the storage type at every store, against the FP64
// reference executor: every network (the real SSD weights, MogFace R101 / E / R50 with
// synthetic weights), batch 2 with two picture sizes, FP32 / FP16 / BF16. What this cannot
// check is only what cuDNN and the kernels do with the same steps on a GPU (cuda_tests).
#include "engine/cuda/program.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <string>

#include "host_program.h"
#include "image/decode.h"
#include "image/resize.h"
#include "model/face_landmark_68.h"
#include "model/input_normalization.h"
#include "model/model_registry.h"
#include "model/mogface/mogface_network.h"
#include "model/onnx/onnx_network.h"
#include "model/prepared_weights.h"
#include "model/reference/reference_executor.h"
#include "model/ssd_mobilenet_v1.h"
#include "parity_support.h"

namespace mogserve::engine::cuda {
namespace {

using model::LayerPlan;

StatusOr<LayerPlan> PlanOf(std::shared_ptr<const model::Network> net, int h, int w) {
  return LayerPlan::Create(std::move(net), h, w);
}

TEST(ProgramTest, LowersEveryOpOfEveryNetwork) {
  struct Case {
    std::shared_ptr<const model::Network> net;
    int h, w;
  };
  using model::mogface::Variant;
  const Case cases[] = {{model::BuildSsdMobilenetV1Network(), 512, 512},
                        {model::mogface::BuildMogFaceNetwork(Variant::kR101), 96, 64},
                        {model::mogface::BuildMogFaceNetwork(Variant::kE), 96, 64},
                        {model::mogface::BuildMogFaceNetwork(Variant::kR50), 96, 64}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.net->name());
    auto plan = PlanOf(c.net, c.h, c.w);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    auto program = BuildProgram(*plan, 3, StorageType::kF16);
    ASSERT_TRUE(program.ok()) << program.status().ToString();
    const auto& ops = c.net->ops();
    std::set<int> covered;
    int asymmetric = 0, relu6 = 0, norms = 0, pads = 0, clamps = 0, stats = 0, applies = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == model::OpKind::kConv && !plan->padding(static_cast<int>(i)).symmetric()) {
        ++asymmetric;
      }
      if (ops[i].kind == model::OpKind::kConv && ops[i].act == model::Activation::kRelu6) ++relu6;
      if (ops[i].kind == model::OpKind::kGroupNorm) ++norms;
    }
    for (const Step& s : program->steps) {
      covered.insert(s.op);
      pads += s.kind == StepKind::kPad;
      clamps += s.kind == StepKind::kClamp;
      stats += s.kind == StepKind::kGroupNormStats;
      applies += s.kind == StepKind::kGroupNormApply;
      if (s.kind == StepKind::kConv) {
        EXPECT_TRUE(s.conv.padding.symmetric()) << s.op;
        EXPECT_NE(s.conv.act, model::Activation::kRelu6) << s.op;
        EXPECT_EQ(s.conv.batch, 3);
      }
      // Every buffer a step names lies inside the arena, at an aligned offset.
      for (int64_t offset : {s.in, s.in2, s.out}) {
        if (offset < 0) continue;
        EXPECT_EQ(offset % kArenaAlignmentBytes, 0);
        EXPECT_LT(offset, program->arena.total_bytes);
      }
    }
    EXPECT_EQ(static_cast<int>(covered.size()), static_cast<int>(ops.size()) + 1);  // + op −1
    EXPECT_EQ(pads, asymmetric);
    EXPECT_EQ(clamps, relu6);
    EXPECT_EQ(stats, norms);
    EXPECT_EQ(applies, norms);
    EXPECT_EQ(program->steps.front().kind, StepKind::kPreprocess);
    EXPECT_EQ(program->steps.back().kind, StepKind::kOutputLevel);
    EXPECT_EQ(program->anchors, plan->anchors());
    if (c.net->name().find("ssd") != std::string::npos) {
      EXPECT_GT(pads, 0);  // the stride-2 TF SAME convolutions
      EXPECT_GT(clamps, 0);
    }
  }
  auto plan = PlanOf(cases[0].net, 512, 512);
  EXPECT_EQ(BuildProgram(*plan, 0, StorageType::kF32).status().code(),
            StatusCode::kInvalidArgument);
}

struct ModelCase {
  const char* name;  // "ssd" or a MogFace variant
  int h, w;
};

class ProgramParityTest : public ::testing::TestWithParam<ModelCase> {
 protected:
  void SetUp() override {
    model::ModelChoice choice;
    if (std::string(GetParam().name) == "ssd") {
      choice.spec = model::FindModel("ssd").value();
      choice.source.model_dir = MOGSERVE_TEST_MODEL_DIR;
    } else {
      choice.spec = model::FindModel("mogface").value();
      choice.source.synthetic_weights = GetParam().name;
    }
    auto loaded = model::LoadModel(choice);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    model_ = loaded->model;
    auto plan = PlanOf(model_->network(), GetParam().h, GetParam().w);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    plan_.emplace(std::move(*plan));
    inputs_ = MakeParityInputs(GetParam().h, GetParam().w, 7);
    reference_ = ReferenceOutputsOf(*model_, *plan_, inputs_);
    ASSERT_EQ(reference_.size(), 2u);
  }

  ParityErrors Run(Precision precision) {
    auto weights = PrepareDeviceWeights(*model_->network(), model_->weights(), precision);
    EXPECT_TRUE(weights.ok()) << weights.status().ToString();
    auto program = BuildProgram(*plan_, 2, StorageTypeOf(precision));
    EXPECT_TRUE(program.ok()) << program.status().ToString();
    auto out = RunProgramOnHost(*program, *weights, inputs_.canvases, inputs_.picture_size);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    if (!out.ok()) return {INFINITY, INFINITY, false};
    return CompareOutputs(out->conf, out->loc, reference_);
  }

  std::shared_ptr<const model::FaceModel> model_;
  std::optional<LayerPlan> plan_;
  ParityInputs inputs_;
  std::vector<model::ReferenceOutputs> reference_;
};

// Bounds: FP32 1e-4 (measured: below 2e-7); FP16 / BF16 the GPU parity bounds of
// specs/cuda_backend.md §9 (one rounding per stored tensor, as on the device), except the SSD in
// BF16, whose real weights give small box encodings that BF16's 8 bits move more (measured
// 0.013 and 0.048; bounded at 0.02 and 0.07).
TEST_P(ProgramParityTest, HostRunOfTheStepsMatchesTheReference) {
  struct Bound {
    Precision precision;
    double conf, loc_rel;
  };
  const bool ssd = std::string(GetParam().name) == "ssd";
  for (const Bound& b : {Bound{Precision::kFp32, 1e-4, 1e-4}, Bound{Precision::kFp16, 5e-3, 1e-2},
                         Bound{Precision::kBf16, ssd ? 2e-2 : 1e-2, ssd ? 7e-2 : 2e-2}}) {
    SCOPED_TRACE(PrecisionName(b.precision));
    const ParityErrors e = Run(b.precision);
    std::printf("%s %dx%d %s: max |dconf| %.3g, |dloc|/|loc| %.3g\n", GetParam().name, GetParam().w,
                GetParam().h, PrecisionName(b.precision), e.conf, e.loc_rel);
    EXPECT_TRUE(e.finite);
    EXPECT_LE(e.conf, b.conf);
    EXPECT_LE(e.loc_rel, b.loc_rel);
  }
}

// The comparison above can fail: one convolution writing 256 bytes past its planned offset
// leaves the start of its tensor unwritten (NaN, as the arena starts) and moves everything else.
class MisplacedOutputTest : public ProgramParityTest {};

TEST_P(MisplacedOutputTest, IsCaught) {
  auto built = BuildProgram(*plan_, 2, StorageType::kF32);
  ASSERT_TRUE(built.ok());
  Program program = std::move(*built);
  auto weights = PrepareDeviceWeights(*model_->network(), model_->weights(), Precision::kFp32);
  ASSERT_TRUE(weights.ok());
  for (Step& s : program.steps) {
    if (s.kind == StepKind::kConv && s.op > 2) {
      s.out += kArenaAlignmentBytes;
      break;
    }
  }
  auto out = RunProgramOnHost(program, *weights, inputs_.canvases, inputs_.picture_size);
  if (!out.ok()) return;  // pushed past the end of the arena: also caught
  const ParityErrors e = CompareOutputs(out->conf, out->loc, reference_);
  EXPECT_FALSE(e.finite && e.conf <= 1e-4 && e.loc_rel <= 1e-4);
}

// The host run of `plan`'s steps at batch 2 against the FP64 reference's raw outputs of the
// two pictures, in FP32 (relative L2 within 1e-5) and FP16 (5e-3); `check` looks at each
// program's steps first.
void CheckRawOutputs(const char* name, const model::Network& net,
                     const model::PreparedWeights& prepared, const model::LayerPlan& plan,
                     const ParityInputs& inputs, const std::function<void(const Program&)>& check) {
  ASSERT_EQ(inputs.pictures.size(), 2u);
  std::vector<std::vector<double>> want;
  for (const image::Image& picture : inputs.pictures) {
    auto r = model::RunReference(plan, prepared,
                                 model::NormalizePlanar(net.normalization(), picture,
                                                        plan.input_width(), plan.input_height()));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    want.push_back(r->raw);
  }
  struct Bound {
    Precision precision;
    double rel;
  };
  for (const Bound& b : {Bound{Precision::kFp32, 1e-5}, Bound{Precision::kFp16, 5e-3}}) {
    SCOPED_TRACE(PrecisionName(b.precision));
    auto weights = PrepareDeviceWeights(net, prepared, b.precision);
    ASSERT_TRUE(weights.ok()) << weights.status().ToString();
    auto program = BuildProgram(plan, 2, StorageTypeOf(b.precision));
    ASSERT_TRUE(program.ok()) << program.status().ToString();
    EXPECT_EQ(program->raw_floats, plan.raw_floats());
    check(*program);
    auto out = RunProgramOnHost(*program, *weights, inputs.canvases, inputs.picture_size);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->raw.size(), 2 * want[0].size());
    double d2 = 0, n2 = 0;
    bool finite = true;
    for (size_t i = 0; i < 2; ++i) {
      for (size_t k = 0; k < want[i].size(); ++k) {
        const double got = out->raw[i * want[i].size() + k];
        finite = finite && std::isfinite(got);
        d2 += (got - want[i][k]) * (got - want[i][k]);
        n2 += want[i][k] * want[i][k];
      }
    }
    const double rel = std::sqrt(d2 / n2);
    std::printf("%s %s: |draw|/|raw| %.3g\n", name, PrecisionName(b.precision), rel);
    EXPECT_TRUE(finite);
    EXPECT_LE(rel, b.rel);
  }
}

// An imported ONNX network (MediaPipe's BlazeFace front, 128²): fixed-sides padding, channel
// padding (a copy step zeroing the rest), depthwise convolutions over channels that are not
// multiples of 8, and raw outputs, against the reference's raw values, on two real photos
// letterboxed into the canvas. FP32 and FP16 (measured 3.5e-7 and 3.5e-4). Not BF16: on
// sample2.jpg this network's activations reach ~1.2e4, and BF16's 8-bit rounding at every store
// then moves its outputs by 0.24 (relative L2) from the FP64 reference — BF16 itself, not the
// lowering: the same network in NumPy with every stored tensor and weight rounded to BF16 is
// 0.26 off (FP16: 1.6e-3; on grace_hopper.jpg 1.1 % and 7.5e-4; blazeface_precision.py in
// tests/reference), so a bound there would prove nothing about the steps. BF16 suits networks
// with normalised activations (MogFace, the SSD).
TEST(ProgramTest, ImportedBlazeFaceRawOutputsMatchTheReference) {
  auto graph = model::onnx::ReadModel(std::string(MOGSERVE_MODELS_DIR) +
                                      "/blazeface/face_detection_front_128x128_barracuda.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  auto sg = model::onnx::StaticGraph::Infer(
      std::make_shared<const model::onnx::Graph>(std::move(*graph)), 1, 128, 128);
  ASSERT_TRUE(sg.ok()) << sg.status().ToString();
  model::InputNormalization norm;
  for (int c = 0; c < 3; ++c) norm.mean[c] = norm.divisor[c] = 127.5;
  auto imported = model::onnx::ImportNetwork(*sg, "blazeface", norm);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const model::Network& net = *imported->network;
  auto prepared = model::PrepareWeights(net, imported->weights, "blazeface");
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  auto plan = PlanOf(imported->network, 128, 128);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ParityInputs inputs;
  for (const char* name : {"sample2.jpg", "grace_hopper.jpg"}) {
    std::ifstream in(std::string(MOGSERVE_TEST_DATA_DIR) + "/photos/" + name, std::ios::binary);
    auto photo = image::Decode(std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {}));
    ASSERT_TRUE(photo.ok()) << name;
    const image::Letterbox box =
        image::FitLetterbox(photo->image.width, photo->image.height, 128, 128);
    inputs.canvases.push_back(image::RenderLetterbox(photo->image, box).data);
    inputs.picture_size.insert(inputs.picture_size.end(), {box.content_width, box.content_height});
    inputs.pictures.push_back(image::Resize(photo->image, box.content_width, box.content_height));
  }
  CheckRawOutputs("blazeface 128x128", net, *prepared, *plan, inputs, [](const Program& p) {
    int raw_steps = 0;
    for (const Step& s : p.steps) raw_steps += s.kind == StepKind::kRawOutput;
    EXPECT_EQ(raw_steps, 4);
  });
}

// face-api's landmark net (the SSD's second stage: standalone ReLUs lowered to a copy and a
// clamp to [0, +inf), the dense layer per cell), real weights, on two faces cut from the photos
// and scaled to 112x112: the host run of the steps against the FP64 reference.
TEST(ProgramTest, LandmarkNetRawOutputsMatchTheReference) {
  auto net = model::FaceLandmark68Model::Load(std::string(MOGSERVE_MODELS_DIR) + "/" +
                                              model::kLandmark68Folder);
  ASSERT_TRUE(net.ok()) << net.status().ToString();
  const model::Network& network = *(*net)->network();
  auto plan = PlanOf((*net)->network(), 112, 112);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ParityInputs inputs;
  struct Face {
    const char* photo;
    int x1, y1, x2, y2;
  };
  for (const Face& f :
       {Face{"grace_hopper.jpg", 168, 123, 353, 328}, Face{"astronaut.png", 181, 73, 264, 175}}) {
    std::ifstream in(std::string(MOGSERVE_TEST_DATA_DIR) + "/photos/" + f.photo, std::ios::binary);
    auto photo = image::Decode(std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {}));
    ASSERT_TRUE(photo.ok()) << f.photo;
    image::Image face(f.x2 - f.x1, f.y2 - f.y1);
    for (int y = 0; y < face.height; ++y) {
      std::copy_n(photo->image.pixel(f.x1, f.y1 + y), face.width * 3, face.pixel(0, y));
    }
    const image::Image crop = image::Resize(face, 112, 112);
    inputs.canvases.push_back(crop.data);
    inputs.picture_size.insert(inputs.picture_size.end(), {112, 112});
    inputs.pictures.push_back(crop);
  }
  CheckRawOutputs("landmark net", network, (*net)->weights(), *plan, inputs, [](const Program& p) {
    int clamps = 0;
    for (const Step& s : p.steps) {
      clamps += s.kind == StepKind::kClamp && std::isinf(s.hi);
    }
    EXPECT_EQ(clamps, 8);  // the eight standalone ReLUs
  });
}

INSTANTIATE_TEST_SUITE_P(Networks, ProgramParityTest,
                         ::testing::Values(ModelCase{"ssd", 512, 512}, ModelCase{"r101", 64, 64},
                                           ModelCase{"e", 64, 64}, ModelCase{"r50", 72, 104}),
                         [](const auto& info) { return std::string(info.param.name); });
INSTANTIATE_TEST_SUITE_P(R50, MisplacedOutputTest, ::testing::Values(ModelCase{"r50", 72, 104}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace mogserve::engine::cuda
