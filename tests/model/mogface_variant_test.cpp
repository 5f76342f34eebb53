// Tests of the MogFace checkpoint layout (spec: specs/mogface.md §9): key counts per variant,
// variant detection, the strict key check, `module.` normalisation and the synthetic weights.
#include "model/mogface/mogface_variant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "model/mogface/synthetic_weights.h"

namespace mogserve::model::mogface {
namespace {

size_t CountPrefix(const std::vector<KeySpec>& keys, const std::string& prefix) {
  size_t n = 0;
  for (const KeySpec& k : keys) n += k.name.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

TEST(MogFaceVariant, ExpectedKeysMatchSpecCounts) {
  const std::vector<KeySpec> r101 = ExpectedKeys(Variant::kR101, false);
  EXPECT_EQ(r101.size(), 728u);
  EXPECT_EQ(CountPrefix(r101, "backbone."), 624u);
  EXPECT_EQ(CountPrefix(r101, "fpn."), 58u);
  EXPECT_EQ(CountPrefix(r101, "pred_net."), 46u);
  EXPECT_EQ(CountPrefix(r101, "backbone.") + CountPrefix(r101, "fpn."), 682u);
  size_t batches_tracked = 0;
  for (const KeySpec& k : r101) batches_tracked += k.name.ends_with("num_batches_tracked");
  EXPECT_EQ(batches_tracked, 108u);
  EXPECT_EQ(ExpectedKeys(Variant::kR101, true).size(), 732u);
  const std::vector<KeySpec> e = ExpectedKeys(Variant::kE, true);
  EXPECT_EQ(e.size(), 994u);
  EXPECT_EQ(CountPrefix(e, "backbone."), 858u);
  EXPECT_EQ(CountPrefix(e, "pred_net."), 78u);
  EXPECT_EQ(ExpectedKeys(Variant::kE, false).size(), 990u);
  EXPECT_EQ(ExpectedKeys(Variant::kR50, false).size(), 388u);
  EXPECT_EQ(ExpectedKeys(Variant::kR50, true).size(), 388u);  // R50 has no DSFD heads
  // Parameter counts of spec §8 (parameters only: no BN running statistics).
  auto params = [](Variant v, bool dsfd) {
    int64_t n = 0;
    for (const KeySpec& k : ExpectedKeys(v, dsfd)) {
      if (k.name.find(".running_") != std::string::npos || k.shape.empty()) continue;
      int64_t c = 1;
      for (int64_t d : k.shape) c *= d;
      n += c;
    }
    return n;
  };
  EXPECT_NEAR(params(Variant::kR101, false) / 1e6, 85.26, 0.015);
  EXPECT_NEAR(params(Variant::kR101, true) / 1e6, 85.27, 0.015);
  EXPECT_NEAR(params(Variant::kE, true) / 1e6, 85.67, 0.015);
  EXPECT_NEAR(params(Variant::kR50, false) / 1e6, 36.07, 0.015);
  // Names are unique.
  std::set<std::string> names;
  for (const KeySpec& k : e) EXPECT_TRUE(names.insert(k.name).second) << k.name;
}

TEST(MogFaceVariant, DetectCheckNormaliseAndSynthesise) {
  for (Variant v : {Variant::kR101, Variant::kE, Variant::kR50}) {
    for (bool dsfd : {false, true}) {
      const HostTensorMap w = SyntheticWeights(v, 7, dsfd);
      ASSERT_EQ(w.size(), ExpectedKeys(v, dsfd).size());
      for (const KeySpec& k : ExpectedKeys(v, dsfd)) {
        ASSERT_TRUE(w.count(k.name)) << k.name;
        EXPECT_EQ(w.at(k.name).shape, k.shape) << k.name;
        EXPECT_EQ(static_cast<int64_t>(w.at(k.name).values.size()), w.at(k.name).numel());
      }
      StatusOr<Variant> detected = DetectVariant(w);
      ASSERT_TRUE(detected.ok()) << detected.status().ToString();
      EXPECT_EQ(*detected, v);
      EXPECT_TRUE(CheckCheckpointKeys(w, v).ok()) << CheckCheckpointKeys(w, v).ToString();
      if (v != Variant::kR50) break;  // the R101/E DSFD cases are covered below
    }
    EXPECT_EQ(*ParseVariant(VariantName(v)), v);
  }
  EXPECT_FALSE(ParseVariant("r18").ok());

  // Deterministic per key and seed: the same values with or without the DSFD heads.
  HostTensorMap r50a = SyntheticWeights(Variant::kR50, 1, false);
  const HostTensorMap r50b = SyntheticWeights(Variant::kR50, 1, true);
  const HostTensorMap r50c = SyntheticWeights(Variant::kR50, 2, false);
  const std::string conv = "backbone.layer3.2.conv2.weight";
  EXPECT_EQ(r50a.at(conv).values, r50b.at(conv).values);
  EXPECT_NE(r50a.at(conv).values, r50c.at(conv).values);
  // He init: std ~ sqrt(2 / (256*9)) = 0.0295.
  double sum_sq = 0;
  for (float x : r50a.at(conv).values) sum_sq += double{x} * x;
  EXPECT_NEAR(std::sqrt(sum_sq / r50a.at(conv).numel()), 0.0295, 0.001);

  // Missing, extra and mis-shaped keys, each named in the message.
  HostTensorMap bad = r50a;
  bad.erase("fpn.p3_lat.bias");
  bad["pred_net.bogus.weight"] = HostTensor{{3}, {0, 0, 0}};
  bad["fpn.c7_lat.weight"].shape = {256, 256, 1, 9};
  Status st = CheckCheckpointKeys(bad, Variant::kR50);
  EXPECT_EQ(st.code(), StatusCode::kInvalidData);
  for (const char* key : {"fpn.p3_lat.bias", "pred_net.bogus.weight", "fpn.c7_lat.weight"}) {
    EXPECT_NE(st.message().find(key), std::string::npos) << key << " in " << st.message();
  }
  // Long lists are capped.
  HostTensorMap many = r50a;
  for (int i = 0; i < 25; ++i) many["extra." + std::to_string(i)] = HostTensor{{1}, {0}};
  st = CheckCheckpointKeys(many, Variant::kR50);
  EXPECT_NE(st.message().find("(and 15 more)"), std::string::npos) << st.message();
  // Unused keys may be absent.
  HostTensorMap lean = r50a;
  std::erase_if(lean, [](const auto& kv) { return kv.first.ends_with("num_batches_tracked"); });
  EXPECT_TRUE(CheckCheckpointKeys(lean, Variant::kR50).ok());

  // `module.` prefixes are stripped; a collision keeps the prefix (and so fails as extra).
  HostTensorMap prefixed;
  for (auto& [name, t] : r50a) prefixed["module." + name] = t;
  EXPECT_TRUE(HasModulePrefix(prefixed));
  HostTensorMap normal = NormalizeCheckpointKeys(prefixed);
  EXPECT_FALSE(HasModulePrefix(normal));
  EXPECT_EQ(normal.size(), r50a.size());
  EXPECT_EQ(*DetectVariant(normal), Variant::kR50);
  prefixed["backbone.conv1.weight"] = r50a.at("backbone.conv1.weight");
  normal = NormalizeCheckpointKeys(std::move(prefixed));
  EXPECT_TRUE(normal.count("module.backbone.conv1.weight"));

  // HCAM: unsupported with a reason; garbage and truncated backbones: invalid data.
  r50a["fp_context.down_convs.0.weight"] = HostTensor{{256, 256, 1, 1}, {}};
  st = DetectVariant(r50a).status();
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("HCAM"), std::string::npos);
  EXPECT_EQ(DetectVariant(HostTensorMap{{"conv.weight", HostTensor{{1}, {0}}}}).status().code(),
            StatusCode::kInvalidData);
  HostTensorMap shallow = SyntheticWeights(Variant::kR50, 1, false);
  std::erase_if(shallow, [](const auto& kv) { return kv.first.starts_with("backbone.layer3.5."); });
  st = DetectVariant(shallow).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidData);
  EXPECT_NE(st.message().find("layer3"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace mogserve::model::mogface
