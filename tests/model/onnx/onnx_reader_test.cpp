// The ONNX reader: what it takes from a ModelProto (typed and raw tensor data, external data,
// attributes, the image input) and what it refuses, with messages that name the file and reason.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "model/onnx/onnx_graph.h"
#include "model/onnx/static_graph.h"
#include "onnx_test_util.h"

namespace mogserve::model::onnx {
namespace {

using testing::ModelWriter;

// A valid model: x -> Relu -> y.
ModelWriter ReluModel(int64_t opset = 13) {
  ModelWriter w(opset);
  w.Node("Relu", {"x"}, {"y"});
  w.Output("y");
  return w;
}

TEST(OnnxReader, ReadsTheGraph) {
  ModelWriter w = ReluModel();
  w.Floats("unused_w", {2, 2}, {1, 2, 3, 4});
  auto g = ParseModel(w.Bytes(), "m.onnx", ".");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->opset, 13);
  EXPECT_EQ(g->producer, "mogserve-test");
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->inputs[0].name, "x");
  ASSERT_EQ(g->inputs[0].dims.size(), 4u);
  EXPECT_EQ(g->inputs[0].dims[1].value, 3);
  EXPECT_FALSE(g->inputs[0].dims[2].fixed());
  EXPECT_EQ(g->inputs[0].dims[2].symbol, "d2");
  ASSERT_EQ(g->nodes.size(), 1u);
  EXPECT_EQ(g->nodes[0].op_type, "Relu");
  EXPECT_EQ(g->initializers.at("unused_w").floats, (std::vector<float>{1, 2, 3, 4}));
}

TEST(OnnxReader, InitializersListedAsInputsAreNotImageInputs) {
  ModelWriter w = ReluModel(9);  // IR 3 exporters list every initializer as an input too
  w.Floats("w", {1}, {0.5f});
  w.graph()->add_input()->set_name("w");
  auto g = ParseModel(w.Bytes(), "m.onnx", ".");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->inputs.size(), 1u);
}

TEST(OnnxReader, ConvertsEveryStoredElementType) {
  ModelWriter w = ReluModel();
  auto* raw = w.graph()->add_initializer();  // raw little-endian FLOAT16: 1.0, -2.0
  raw->set_name("half_raw");
  raw->set_data_type(::onnx::TensorProto::FLOAT16);
  raw->add_dims(2);
  const uint8_t half[] = {0x00, 0x3c, 0x00, 0xc0};
  raw->set_raw_data(std::string(reinterpret_cast<const char*>(half), 4));
  auto* typed = w.graph()->add_initializer();  // FLOAT16 as int32_data bits: 0.5
  typed->set_name("half_typed");
  typed->set_data_type(::onnx::TensorProto::FLOAT16);
  typed->add_dims(1);
  typed->add_int32_data(0x3800);
  auto* big = w.graph()->add_initializer();  // raw INT64 beyond float precision
  big->set_name("big");
  big->set_data_type(::onnx::TensorProto::INT64);
  big->add_dims(1);
  const int64_t huge = std::numeric_limits<int64_t>::max();
  big->set_raw_data(std::string(reinterpret_cast<const char*>(&huge), 8));
  auto* i32 = w.graph()->add_initializer();  // raw INT32 above 2^24: exact
  i32->set_name("i32");
  i32->set_data_type(::onnx::TensorProto::INT32);
  i32->add_dims(1);
  const int32_t odd = 16777217;
  i32->set_raw_data(std::string(reinterpret_cast<const char*>(&odd), 4));
  auto* dbl = w.graph()->add_initializer();
  dbl->set_name("double");
  dbl->set_data_type(::onnx::TensorProto::DOUBLE);
  dbl->add_double_data(0.25);  // a scalar: no dims
  auto g = ParseModel(w.Bytes(), "m.onnx", ".");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->initializers.at("half_raw").floats, (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(g->initializers.at("half_typed").floats, (std::vector<float>{0.5f}));
  EXPECT_EQ(g->initializers.at("big").kind, ValueKind::kInt);
  EXPECT_EQ(g->initializers.at("big").ints, (std::vector<int64_t>{huge}));
  EXPECT_EQ(g->initializers.at("i32").ints, (std::vector<int64_t>{16777217}));
  EXPECT_TRUE(g->initializers.at("double").shape.empty());
  EXPECT_EQ(g->initializers.at("double").floats, (std::vector<float>{0.25f}));
}

TEST(OnnxReader, RefusesWhatItCannotRead) {
  struct Case {
    std::string name;
    std::function<void(ModelWriter&)> edit;
    StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"opset 8", [](ModelWriter& w) { w.model().mutable_opset_import(0)->set_version(8); },
       StatusCode::kUnsupported, "operator set version 8; supported: 9 to 17"},
      {"opset 18", [](ModelWriter& w) { w.model().mutable_opset_import(0)->set_version(18); },
       StatusCode::kUnsupported, "operator set version 18"},
      {"dangling input", [](ModelWriter& w) { w.Node("Relu", {"nowhere"}, {"z"}); },
       StatusCode::kInvalidData, "reads 'nowhere', which no graph input, initializer"},
      {"out of order",
       [](ModelWriter& w) {
         w.graph()->mutable_node(0)->set_input(0, "later");
         w.Node("Relu", {"x"}, {"later"});
       },
       StatusCode::kInvalidData, "reads 'later'"},
      {"custom domain",
       [](ModelWriter& w) { w.Node("Fancy", {"x"}, {"f"})->set_domain("com.example"); },
       StatusCode::kUnsupported, "com.example::Fancy, an operator outside the standard domain"},
      {"short raw data",
       [](ModelWriter& w) {
         auto* t = w.Floats("w", {4}, {});
         t->set_raw_data(std::string(12, '\0'));
       },
       StatusCode::kInvalidData, "tensor 'w' holds 12 bytes; its shape [4] of FLOAT needs 16"},
      {"typed count",
       [](ModelWriter& w) {
         w.Floats("w", {3}, {1, 2});
       },
       StatusCode::kInvalidData, "tensor 'w' holds 2 values; its shape [3] needs 3"},
      // 2^31 INT64 values declared, none stored: refused before any allocation.
      {"huge without data", [](ModelWriter& w) { w.Floats("w", {int64_t{1} << 31}, {}); },
       StatusCode::kInvalidData, "tensor 'w' holds 0 values; its shape [2147483648] needs"},
      {"string tensor",
       [](ModelWriter& w) {
         auto* t = w.graph()->add_initializer();
         t->set_name("s");
         t->set_data_type(::onnx::TensorProto::STRING);
       },
       StatusCode::kUnsupported, "tensor 's' has element type STRING"},
      {"missing output", [](ModelWriter& w) { w.Output("nothing"); }, StatusCode::kInvalidData,
       "graph output 'nothing' is produced by no node"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ModelWriter w = ReluModel();
    c.edit(w);
    auto g = ParseModel(w.Bytes(), "dir/m.onnx", ".");
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), c.code) << g.status().ToString();
    EXPECT_NE(g.status().message().find("dir/m.onnx: "), std::string::npos) << g.status().message();
    EXPECT_NE(g.status().message().find(c.message), std::string::npos) << g.status().message();
  }
}

TEST(OnnxReader, NotAnOnnxFile) {
  for (const std::string bytes : {std::string("\xff\xd8\xff\xe0 JFIF", 10), std::string(),
                                  std::string("hello world, not a protobuf")}) {
    auto g = ParseModel(bytes, "photo.jpg", ".");
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidData);
    EXPECT_NE(g.status().message().find("photo.jpg: not an ONNX model"), std::string::npos)
        << g.status().message();
  }
  auto missing = ReadModel("/nonexistent/model.onnx");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/model.onnx"), std::string::npos);
}

TEST(OnnxReader, TruncatedFilesAreRefusedNotMisread) {
  ModelWriter w = ReluModel();
  w.Floats("w", {64}, std::vector<float>(64, 1.5f));
  const std::string bytes = w.Bytes();
  // Every proper prefix: inside a field (not a protobuf), before the graph (no graph), or
  // after it but before the operator-set import (serialised last, by field number).
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    auto g = ParseModel(bytes.substr(0, cut), "cut.onnx", ".");
    ASSERT_FALSE(g.ok()) << "a " << cut << "-byte prefix of " << bytes.size() << " was read";
    EXPECT_NE(g.status().message().find("cut.onnx: "), std::string::npos);
  }
  EXPECT_TRUE(ParseModel(bytes, "whole.onnx", ".").ok());
}

TEST(OnnxReader, ExternalData) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("onnx_external_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const float values[] = {1.0f, 2.0f, 3.0f};
  {
    std::ofstream f(dir / "weights.bin", std::ios::binary);
    f.write("PAD!", 4);
    f.write(reinterpret_cast<const char*>(values), sizeof(values));
  }
  auto model = [&](const std::string& location, const std::string& offset) {
    ModelWriter w = ReluModel();
    auto* t = w.graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(::onnx::TensorProto::FLOAT);
    t->add_dims(3);
    t->set_data_location(::onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : {std::pair<std::string, std::string>{"location", location},
                               {"offset", offset},
                               {"length", "12"}}) {
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    std::ofstream(dir / "m.onnx", std::ios::binary) << w.Bytes();
    return ReadModel((dir / "m.onnx").string());
  };
  auto ok = model("weights.bin", "4");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->initializers.at("w").floats, (std::vector<float>{1, 2, 3}));
  auto outside = model("../weights.bin", "4");
  EXPECT_NE(outside.status().message().find("must be a file name relative to the model's folder"),
            std::string::npos)
      << outside.status().ToString();
  auto past_end = model("weights.bin", "8");
  EXPECT_NE(past_end.status().message().find("outside"), std::string::npos)
      << past_end.status().ToString();
  auto overflow = model("weights.bin", "9223372036854775800");
  EXPECT_NE(overflow.status().message().find("outside"), std::string::npos)
      << overflow.status().ToString();
  auto absent = model("nope.bin", "0");
  EXPECT_EQ(absent.status().code(), StatusCode::kNotFound) << absent.status().ToString();
  std::filesystem::remove_all(dir);
}

// Random byte flips, insertions and cuts of a real model (BlazeFace, from scripts/setup.sh): the
// reader and shape inference return a model or an error, never crash or hang.
TEST(OnnxReader, SurvivesCorruptedRealModels) {
  const std::string path =
      std::string(MOGSERVE_MODELS_DIR) + "/blazeface/face_detection_front_128x128_barracuda.onnx";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " (scripts/setup.sh fetches it)";
  const std::string original((std::istreambuf_iterator<char>(in)), {});
  std::mt19937 rng(7);
  int read = 0, inferred = 0;
  for (int round = 0; round < 400; ++round) {
    std::string bytes = original;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0:
          bytes[at] = static_cast<char>(rng());
          break;
        case 1:
          bytes.insert(at, 1, static_cast<char>(rng()));
          break;
        default:
          bytes.resize(std::max<size_t>(at, 1));
          break;
      }
    }
    auto g = ParseModel(bytes, "fuzzed.onnx", ".");
    if (!g.ok()) continue;
    ++read;
    auto s = StaticGraph::Infer(std::make_shared<const Graph>(std::move(*g)), 1, 128, 128);
    if (s.ok()) ++inferred;
  }
  // Most single-byte flips land in weights, which read fine; cuts are refused.
  EXPECT_GT(read, 0);
  EXPECT_LT(read, 400);
  RecordProperty("read", read);
  RecordProperty("inferred", inferred);
}

}  // namespace
}  // namespace mogserve::model::onnx
