// The model registry (model/model_registry.h): names, the weights each spec needs, and that its
// loader gives the model the spec names — the real SSD files and synthetic MogFace weights.
#include "model/model_registry.h"

#include <gtest/gtest.h>

#include "options/option_table.h"

namespace mogserve::model {
namespace {

TEST(ModelRegistryTest, NamesAndFullNamesFindTheirSpecAndOthersAreRefused) {
  EXPECT_EQ(&DefaultModel(), &Models().front());
  for (const ModelSpec& spec : Models()) {
    EXPECT_EQ(*FindModel(spec.name), &spec);
    EXPECT_EQ(*FindModel(spec.full_name), &spec);
    EXPECT_NE(spec.load, nullptr) << spec.name;
  }
  const auto unknown = FindModel("yolo");
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.status().message(), "model 'yolo' is not known; allowed: " + ModelNames());
  EXPECT_EQ(ModelNames(), "ssd, blazeface, mogface, onnx");
}

// The option table's --model choices are the registry's names (docs and --help list them).
TEST(ModelRegistryTest, TheModelOptionsChoicesAreTheRegistrysNames) {
  const opt::Option* model = opt::Find("model");
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->choices, ModelNames());
}

TEST(ModelRegistryTest, EachLoaderGivesTheModelItsSpecNames) {
  const ModelSpec& ssd = **FindModel("ssd");
  ModelSource ssd_files;
  ssd_files.model_dir = MOGSERVE_TEST_MODEL_DIR;
  auto loaded_ssd = ssd.load(ssd_files);
  ASSERT_TRUE(loaded_ssd.ok()) << loaded_ssd.status().ToString();
  EXPECT_EQ(loaded_ssd->model->name(), ssd.full_name);
  EXPECT_EQ(loaded_ssd->source, MOGSERVE_TEST_MODEL_DIR);
  ssd_files.model_dir = "/no/such/folder";
  EXPECT_FALSE(ssd.load(ssd_files).ok());

  const ModelSpec& blazeface = **FindModel("blazeface");
  EXPECT_TRUE(blazeface.landmarks);
  ModelSource blazeface_files;
  blazeface_files.model_dir = std::string(MOGSERVE_MODELS_DIR) + "/blazeface";
  auto loaded_blazeface = blazeface.load(blazeface_files);
  ASSERT_TRUE(loaded_blazeface.ok()) << loaded_blazeface.status().ToString();
  EXPECT_EQ(loaded_blazeface->model->name(), blazeface.full_name);
  EXPECT_EQ(loaded_blazeface->model->variant(), "back");
  EXPECT_EQ(loaded_blazeface->model->fixed_side(), 256);
  blazeface_files.model_dir = "/no/such/folder";
  const auto missing = blazeface.load(blazeface_files);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("scripts/setup.sh"), std::string::npos);

  const ModelSpec& mogface = **FindModel("mogface");
  EXPECT_EQ(mogface.weights, ModelSpec::Weights::kCheckpoint);
  ModelSource r50;
  r50.synthetic_weights = "r50";
  r50.synthetic_seed = 3;
  auto synthetic = mogface.load(r50);
  ASSERT_TRUE(synthetic.ok()) << synthetic.status().ToString();
  EXPECT_EQ(synthetic->model->name(), mogface.full_name);
  EXPECT_EQ(synthetic->model->variant(), "r50");
  EXPECT_EQ(synthetic->source, "synthetic (seed 3)");
  // Exactly one of a checkpoint and synthetic weights.
  EXPECT_EQ(mogface.load({}).status().code(), StatusCode::kInvalidArgument);
  r50.weights = "x.pt";
  EXPECT_EQ(mogface.load(r50).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mogserve::model
