// The Open Inference Protocol's request parsing and response building (server/oip.h) without a
// server: JSON and binary (Triton's byte layout) requests, every refusal with its status and
// code, and the outputs' shapes, padding and binary layout.
#include "server/oip.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace mogserve::server::oip {
namespace {

using ::testing::HasSubstr;

// "\xff\xd8..." is not checked here (decoding is the pipeline's): any bytes are an image.
const std::string kJpegA = std::string("\xff\xd8\xff\xe0", 4) + "first";
const std::string kJpegB = std::string("\xff\xd8\xff\xe0", 4) + "second!";

std::string Base64(const std::string& bytes) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v =
        (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += t[(v >> k) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint8_t(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= uint8_t(bytes[i + 1]) << 8;
    out += t[(v >> 18) & 63];
    out += t[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? t[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string LengthPrefixed(const std::vector<std::string>& elements) {
  std::string out;
  for (const std::string& e : elements) {
    const uint32_t n = static_cast<uint32_t>(e.size());
    for (int k = 0; k < 4; ++k) out += static_cast<char>((n >> (8 * k)) & 0xFF);
    out += e;
  }
  return out;
}

InferRequest Parsed(const std::string& header_length, const std::string& body) {
  auto r = ParseInferRequest(header_length, body, RequestLimits{});
  if (auto* e = std::get_if<HttpError>(&r)) {
    ADD_FAILURE() << e->status << " " << e->code << ": " << e->message;
    return {};
  }
  return std::get<InferRequest>(r);
}

HttpError Refused(const std::string& header_length, const std::string& body,
                  RequestLimits limits = {}) {
  auto r = ParseInferRequest(header_length, body, limits);
  if (auto* e = std::get_if<HttpError>(&r)) return *e;
  ADD_FAILURE() << "accepted: " << body.substr(0, 200);
  return {};
}

TEST(OipTest, JsonRequestWithBase64ImagesAndParameters) {
  const nlohmann::json req = {
      {"id", "req-7"},
      {"parameters", {{"score_threshold", 0.7}, {"max_faces", 3}, {"priority", "bulk"}}},
      {"inputs",
       {{{"name", "IMAGE"},
         {"datatype", "BYTES"},
         {"shape", {2}},
         {"data", {Base64(kJpegA), Base64(kJpegB)}}}}},
      {"outputs",
       {{{"name", "COUNT"}}, {{"name", "BOXES"}, {"parameters", {{"binary_data", true}}}}}}};
  const InferRequest r = Parsed("", req.dump());
  EXPECT_EQ(r.id, "req-7");
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[0].bytes, ImageBytes(kJpegA));
  EXPECT_EQ(r.images[1].bytes, ImageBytes(kJpegB));
  EXPECT_EQ(r.images[1].name, "IMAGE[1]");
  EXPECT_FLOAT_EQ(*r.params.score_threshold, 0.7f);
  EXPECT_EQ(*r.params.max_faces, 3);
  EXPECT_EQ(*r.params.priority, "bulk");
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(r.outputs[0].name, "COUNT");
  EXPECT_FALSE(r.outputs[0].binary);
  EXPECT_TRUE(r.outputs[1].binary);
}

TEST(OipTest, NestedShapeNByOneAndDefaultOutputs) {
  const nlohmann::json req = {{"parameters", {{"binary_data_output", true}}},
                              {"inputs",
                               {{{"name", "IMAGE"},
                                 {"datatype", "BYTES"},
                                 {"shape", {1, 1}},
                                 {"data", {{Base64(kJpegA)}}}}}}};
  const InferRequest r = Parsed("", req.dump());
  ASSERT_EQ(r.images.size(), 1u);
  ASSERT_EQ(r.outputs.size(), 4u);
  for (const RequestedOutput& o : r.outputs) EXPECT_TRUE(o.binary) << o.name;
}

TEST(OipTest, BinaryRequestInTritonsLayout) {
  const std::string bin = LengthPrefixed({kJpegA, kJpegB});
  const nlohmann::json req = {{"inputs",
                               {{{"name", "IMAGE"},
                                 {"datatype", "BYTES"},
                                 {"shape", {2}},
                                 {"parameters", {{"binary_data_size", bin.size()}}}}}}};
  const std::string json = req.dump();
  const InferRequest r = Parsed(std::to_string(json.size()), json + bin);
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[0].bytes, ImageBytes(kJpegA));
  EXPECT_EQ(r.images[1].bytes, ImageBytes(kJpegB));
}

TEST(OipTest, EveryRefusalNamesWhatIsWrong) {
  const std::string bin = LengthPrefixed({kJpegA});
  auto input = [](nlohmann::json extra) {
    nlohmann::json in = {{"name", "IMAGE"}, {"datatype", "BYTES"}, {"shape", {1}}};
    for (auto& [k, v] : extra.items()) in[k] = v;
    return nlohmann::json{{"inputs", {in}}};
  };
  struct Case {
    std::string header, body;
    int status;
    std::string code, says;
  };
  nlohmann::json with_binary = input({{"parameters", {{"binary_data_size", bin.size()}}}});
  const std::string wb = with_binary.dump();
  nlohmann::json unknown_param = input({{"data", {Base64(kJpegA)}}});
  unknown_param["parameters"] = {{"format", "modelscope"}};
  nlohmann::json bad_value = input({{"data", {Base64(kJpegA)}}});
  bad_value["parameters"] = {{"score_threshold", 2}};
  nlohmann::json bad_output = input({{"data", {Base64(kJpegA)}}});
  bad_output["outputs"] = {{{"name", "MASKS"}}};
  nlohmann::json output_name_type = input({{"data", {Base64(kJpegA)}}});
  output_name_type["outputs"] = {{{"name", {1, 2}}}};
  nlohmann::json too_many = input({{"shape", {33}}});
  const Case cases[] = {
      {"", "not json", 400, "bad_request", "not valid JSON"},
      {"", "[1]", 400, "bad_request", "JSON object"},
      {"", R"({"inputs":[]})", 400, "bad_request", "exactly one input"},
      {"", input({{"name", "PIXELS"}, {"data", {Base64(kJpegA)}}}).dump(), 400, "bad_request",
       "'PIXELS' is not known"},
      {"", input({{"datatype", "UINT8"}, {"data", {Base64(kJpegA)}}}).dump(), 400, "bad_request",
       "datatype must be BYTES"},
      // Members of the wrong JSON type (found by the fuzz target: json's value() threw).
      {"", input({{"name", {"IMAGE"}}, {"data", {Base64(kJpegA)}}}).dump(), 400, "bad_request",
       "name must be a string"},
      {"", input({{"datatype", 7}, {"data", {Base64(kJpegA)}}}).dump(), 400, "bad_request",
       "datatype must be BYTES"},
      {"", input({{"shape", {2}}, {"data", {Base64(kJpegA)}}}).dump(), 400, "bad_request",
       "shape says 2 images, the data holds 1"},
      {"", input({{"shape", {1, 3}}, {"data", {Base64(kJpegA)}}}).dump(), 400, "bad_request",
       "[N] or [N, 1]"},
      {"", input({{"data", {"@@@"}}}).dump(), 400, "invalid_image", "IMAGE[0] is not valid base64"},
      {"", input({{"data", {Base64(kJpegA)}}, {"parameters", {{"content_type", "raw"}}}}).dump(),
       400, "bad_request", "content_type"},
      {"", input({}).dump(), 400, "bad_request", "neither data nor binary_data_size"},
      {"", unknown_param.dump(), 400, "invalid_parameter", "unknown parameter 'format'"},
      {"", bad_value.dump(), 422, "invalid_parameter", "score_threshold"},
      {"", bad_output.dump(), 400, "bad_request", "'MASKS' is not known"},
      {"", output_name_type.dump(), 400, "bad_request", "output '' is not known"},
      {"", too_many.dump(), 413, "too_many_images", "at most 32"},
      {std::to_string(wb.size()), wb + bin + "x", 400, "bad_request", "add up to"},
      {std::to_string(wb.size()), wb + bin.substr(0, bin.size() - 1), 400, "bad_request",
       "more than the binary data"},
      {"12x", wb + bin, 400, "bad_request", "Inference-Header-Content-Length"},
      {std::to_string(wb.size() + bin.size() + 1), wb + bin, 400, "bad_request",
       "no larger than the body"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body.substr(0, 120));
    const HttpError e = Refused(c.header, c.body);
    EXPECT_EQ(e.status, c.status);
    EXPECT_EQ(e.code, c.code);
    EXPECT_THAT(e.message, HasSubstr(c.says));
  }
  // A binary element whose length runs past its input's bytes.
  std::string broken = LengthPrefixed({kJpegA});
  broken[0] = static_cast<char>(200);
  nlohmann::json req = input({{"parameters", {{"binary_data_size", broken.size()}}}});
  const HttpError e = Refused(std::to_string(req.dump().size()), req.dump() + broken);
  EXPECT_THAT(e.message, HasSubstr("runs past"));
}

pipeline::RequestResult Done(int w, int h, std::vector<Detection> faces) {
  pipeline::RequestResult r;
  r.outcome = scheduler::Outcome::kDone;
  r.result.width = w;
  r.result.height = h;
  r.result.faces = std::move(faces);
  return r;
}

TEST(OipTest, JsonOutputsArePaddedToTheMostFaces) {
  InferRequest req;
  req.id = "abc";
  req.images = {{"IMAGE[0]", {}}, {"IMAGE[1]", {}}};
  for (const char* n : kOutputNames) req.outputs.push_back({n, false});
  Detection with_landmarks{.x1 = 10, .y1 = 20, .x2 = 30, .y2 = 40, .score = 0.9f};
  with_landmarks.landmarks = {{12, 25}, {28, 25}, {20, 30}, {14, 35}, {26, 35}};
  const std::vector<pipeline::RequestResult> results = {
      Done(640, 480, {with_landmarks, {50, 60, 70, 80, 0.8f}}), Done(100, 50, {})};
  const http::HttpResponse r = InferResponse(req, "ssd-mobilenetv1", results);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  const nlohmann::json j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["id"], "abc");
  EXPECT_EQ(j["model_name"], "ssd-mobilenetv1");
  const nlohmann::json& out = j["outputs"];
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0]["name"], "BOXES");
  EXPECT_EQ(out[0]["shape"], nlohmann::json({2, 2, 4}));
  EXPECT_EQ(out[0]["data"],
            nlohmann::json({10, 20, 30, 40, 50, 60, 70, 80, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(out[1]["shape"], nlohmann::json({2, 2}));
  EXPECT_NEAR(out[1]["data"][0].get<double>(), 0.9, 1e-6);
  EXPECT_EQ(out[1]["data"][3], 0);
  EXPECT_EQ(out[2]["datatype"], "INT32");
  EXPECT_EQ(out[2]["data"], nlohmann::json({2, 0}));
  EXPECT_EQ(out[3]["data"], nlohmann::json({640, 480, 100, 50}));
  // LANDMARKS [N, K, 5, 2]: the first face's points, zeros for the face and image without.
  EXPECT_EQ(out[4]["name"], "LANDMARKS");
  EXPECT_EQ(out[4]["shape"], nlohmann::json({2, 2, 5, 2}));
  std::vector<float> landmarks(40, 0.0f);
  const std::vector<float> first = {12, 25, 28, 25, 20, 30, 14, 35, 26, 35};
  std::copy(first.begin(), first.end(), landmarks.begin());
  EXPECT_EQ(out[4]["data"], nlohmann::json(landmarks));
}

TEST(OipTest, BinaryOutputsFollowTheJson) {
  InferRequest req;
  req.images = {{"IMAGE[0]", {}}};
  req.outputs = {{"COUNT", true}, {"SCORES", true}, {"IMAGE_SIZE", false}};
  const http::HttpResponse r =
      InferResponse(req, "m", {Done(8, 6, {{1, 2, 3, 4, 0.5f}, {1, 2, 3, 4, 0.25f}})});
  EXPECT_EQ(r.content_type, "application/octet-stream");
  size_t j = 0;
  for (const auto& [name, value] : r.headers) {
    if (name == "Inference-Header-Content-Length") j = std::stoul(value);
  }
  ASSERT_GT(j, 0u);
  const nlohmann::json head = nlohmann::json::parse(r.body.substr(0, j));
  EXPECT_EQ(head["outputs"][0]["parameters"]["binary_data_size"], 4);
  EXPECT_EQ(head["outputs"][1]["parameters"]["binary_data_size"], 8);
  EXPECT_EQ(head["outputs"][2]["data"], nlohmann::json({8, 6}));
  ASSERT_EQ(r.body.size(), j + 12);
  int32_t count = 0;
  float scores[2];
  std::memcpy(&count, r.body.data() + j, 4);
  std::memcpy(scores, r.body.data() + j + 4, 8);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(scores[0], 0.5f);
  EXPECT_EQ(scores[1], 0.25f);
}

TEST(OipTest, OneFailedImageFailsTheRequestNamingIt) {
  InferRequest req;
  req.images = {{"IMAGE[0]", {}}, {"IMAGE[1]", {}}};
  req.outputs = {{"COUNT", false}};
  pipeline::RequestResult bad;
  bad.outcome = scheduler::Outcome::kRejectedBadInput;
  bad.status = InvalidData("not an image");
  const http::HttpResponse r = InferResponse(req, "m", {Done(1, 1, {}), bad});
  EXPECT_EQ(r.status, 400);
  const nlohmann::json j = nlohmann::json::parse(r.body);
  ASSERT_TRUE(j["error"].is_string());
  EXPECT_THAT(j["error"].get<std::string>(), HasSubstr("invalid_image: IMAGE[1]: not an image"));
}

// The transport-neutral pieces REST and gRPC share.
TEST(OipSharedTest, ImageTensorChecks) {
  RequestLimits limits;
  limits.max_images = 2;
  int64_t n = 0;
  EXPECT_FALSE(CheckImageTensor("IMAGE", "BYTES", std::vector<int64_t>{2, 1}, limits, &n));
  EXPECT_EQ(n, 2);
  EXPECT_THAT(CheckImageTensor("IMG", "BYTES", std::vector<int64_t>{1}, limits, &n)->message,
              HasSubstr("input 'IMG' is not known"));
  EXPECT_THAT(CheckImageTensor("IMAGE", "FP32", std::vector<int64_t>{1}, limits, &n)->message,
              HasSubstr("datatype must be BYTES (encoded JPEG, PNG or WebP pictures), not 'FP32'"));
  EXPECT_THAT(CheckImageTensor("IMAGE", "BYTES", std::nullopt, limits, &n)->message,
              HasSubstr("shape must be [N] or [N, 1]"));
  EXPECT_THAT(CheckImageTensor("IMAGE", "BYTES", std::vector<int64_t>{-1}, limits, &n)->message,
              HasSubstr("shape must be"));
  EXPECT_THAT(CheckImageTensor("IMAGE", "BYTES", std::vector<int64_t>{0}, limits, &n)->message,
              HasSubstr("no image"));
  EXPECT_EQ(CheckImageTensor("IMAGE", "BYTES", std::vector<int64_t>{3}, limits, &n)->status, 413);
  InferRequest r;
  r.images = {{"IMAGE[0]", ImageBytes("a")}, {"IMAGE[1]", {}}};
  EXPECT_THAT(CheckImageCount(3, r)->message, HasSubstr("shape says 3 images, the data holds 2"));
  EXPECT_EQ(CheckImageCount(2, r)->code, "invalid_image");
  EXPECT_THAT(CheckImageCount(2, r)->message, HasSubstr("IMAGE[1] is empty"));
}

TEST(OipSharedTest, OutputsAndFailures) {
  InferRequest r;
  EXPECT_FALSE(AddOutput("SCORES", false, r));
  EXPECT_THAT(
      AddOutput("MASKS", false, r)->message,
      HasSubstr(
          "output 'MASKS' is not known; allowed: BOXES, SCORES, COUNT, IMAGE_SIZE, LANDMARKS"));
  ASSERT_EQ(r.outputs.size(), 1u);
  r.images = {{"IMAGE[0]", {}}, {"IMAGE[1]", {}}};
  const std::vector<OutputTensor> t =
      OutputTensors(r, {Done(4, 4, {{0, 0, 1, 1, 0.5f}}), Done(4, 4, {})});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].name, "SCORES");
  EXPECT_EQ(t[0].shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(t[0].f, (std::vector<float>{0.5f, 0.0f}));
  EXPECT_EQ(t[0].Bytes().size(), 8u);
  pipeline::RequestResult late;
  late.outcome = scheduler::Outcome::kRejectedDeadline;
  late.status = Status(StatusCode::kDeadlineExceeded, "too late");
  const std::optional<HttpError> e = FirstFailure(r, {Done(1, 1, {}), late});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 504);
  EXPECT_EQ(e->message, "IMAGE[1]: too late");
  EXPECT_FALSE(FirstFailure(r, {Done(1, 1, {}), Done(1, 1, {})}));
}

}  // namespace
}  // namespace mogserve::server::oip
