// End-to-end tests of `mogserve serve`: the real binary on a free port, over real HTTP. Every
// endpoint and input form with the photos' ground truth, every error status with its message,
// the API key, CORS, configuration from the environment, /readyz around the warm-up, and
// `serve --help`. (Load, queue-full and shutdown tests: serve_load_test.cpp.)
#include <gtest/gtest.h>
#include <webp/encode.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <span>
#include <tuple>

#include "common/cpu_info.h"
#include "image/decode.h"
#include "serve_support.h"

namespace mogserve::e2e {
namespace {

using nlohmann::json;

json ParseBody(const httplib::Result& res) {
  if (!res) return json();
  return json::parse(res->body, nullptr, /*allow_exceptions=*/false);
}

std::string Describe(const httplib::Result& res) {
  if (!res) return "no response: " + httplib::to_string(res.error());
  return std::to_string(res->status) + " " + res->body.substr(0, 2000);
}

// grace_hopper.jpg re-encoded as WebP (the photos have no WebP).
std::string WebpPhoto() {
  const std::string& jpeg = PhotoBytes("grace_hopper.jpg");
  auto decoded = image::Decode(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size()));
  EXPECT_TRUE(decoded.ok());
  if (!decoded.ok()) return "";
  const image::Image& img = decoded->image;
  uint8_t* out = nullptr;
  const size_t size =
      WebPEncodeRGB(img.data.data(), img.width, img.height, img.width * 3, 90, &out);
  std::string webp(reinterpret_cast<const char*>(out), size);
  WebPFree(out);
  return webp;
}

// `jpeg` with the size in its SOF header replaced (the decoder refuses by the header).
std::string PatchJpegSize(std::string jpeg, int width, int height) {
  size_t i = 2;  // after SOI
  while (i + 9 <= jpeg.size() && static_cast<uint8_t>(jpeg[i]) == 0xFF) {
    const uint8_t marker = static_cast<uint8_t>(jpeg[i + 1]);
    const size_t length =
        (static_cast<uint8_t>(jpeg[i + 2]) << 8) | static_cast<uint8_t>(jpeg[i + 3]);
    if (marker >= 0xC0 && marker <= 0xC2) {
      jpeg[i + 5] = static_cast<char>(height >> 8);
      jpeg[i + 6] = static_cast<char>(height & 0xFF);
      jpeg[i + 7] = static_cast<char>(width >> 8);
      jpeg[i + 8] = static_cast<char>(width & 0xFF);
      return jpeg;
    }
    i += 2 + length;
  }
  ADD_FAILURE() << "no SOF marker";
  return jpeg;
}

// A 1x1 GIF: a real image in a format the server does not decode.
const std::string kGif("GIF89a\x01\x00\x01\x00\x00\x00\x00;", 13);

// One server for the API tests: small limits so that every 413 is cheap to provoke.
class ServeApiTest : public ::testing::Test {
 protected:
  static constexpr int kMaxImages = 4;
  static constexpr int64_t kMaxBodyBytes = 4 << 20;
  static constexpr int64_t kMaxPixels = 4'000'000;

  static void SetUpTestSuite() {
    server_ = StartSharedServer({"--plan-batch-sizes", "1,2", "--max-batch-size", "4",
                                 "--max-images", std::to_string(kMaxImages), "--max-body-bytes",
                                 std::to_string(kMaxBodyBytes), "--max-pixels",
                                 std::to_string(kMaxPixels)});
  }
  static void TearDownTestSuite() { StopSharedServer(server_); }
  void SetUp() override {
    ASSERT_NE(server_, nullptr) << "the server did not start";
    client_ = server_->NewClient();
  }

  httplib::Result PostImage(const std::string& bytes, const std::string& type,
                            const std::string& query = "") {
    return client_->Post(("/v1/detect" + query).c_str(), bytes, type.c_str());
  }

  static std::unique_ptr<ServeProcess> server_;
  std::unique_ptr<httplib::Client> client_;
};
std::unique_ptr<ServeProcess> ServeApiTest::server_;

TEST_F(ServeApiTest, HealthReadinessModelsStatsAndMetricsEndpoints) {
  {
    auto res = client_->Get("/healthz");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(ParseBody(res), json({{"status", "ok"}}));
  }
  {
    auto res = client_->Get("/readyz");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(ParseBody(res), json({{"ready", true}}));
  }
  {
    auto res = client_->Get("/v1/models");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 200);
    const json j = ParseBody(res);
    ASSERT_TRUE(j.contains("models") && j["models"].size() == 1) << res->body;
    const json& m = j["models"][0];
    EXPECT_TRUE(Contains(m.value("name", ""), "ssd")) << res->body;
    EXPECT_EQ(m.value("device", ""), "cpu");
    EXPECT_EQ(m.value("precision", ""), "fp32");
    EXPECT_EQ(m.value("instances", 0), 1);
    EXPECT_TRUE(Contains(m.value("scheduler", ""), "max batch 4")) << res->body;
    EXPECT_FALSE(m.value("buffer_plan", "").empty());
    EXPECT_NEAR(m["defaults"].value("score_threshold", 0.0), 0.5, 1e-6);
    EXPECT_EQ(m.value("landmarks", ""), "face-api's 68-point net, five points") << res->body;
    // The host CPU as this process sees it (the server is its child: the same cap, if any).
    EXPECT_EQ(m.value("precision_choice", "?"), "");
    ASSERT_TRUE(m.contains("cpu")) << res->body;
    EXPECT_EQ(m["cpu"].value("isa", ""), IsaLevelName(HostCpu().Level())) << res->body;
    EXPECT_EQ(m["cpu"].value("model", ""), HostCpu().model_name) << res->body;
    EXPECT_EQ(m["cpu"]["features"].get<std::vector<std::string>>(), HostCpu().Names());
  }
  // One detection, so that the histograms have samples.
  ASSERT_TRUE(PostImage(PhotoBytes("grace_hopper.jpg"), "image/jpeg"));
  {
    auto res = client_->Get("/v1/stats");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 200);
    const json j = ParseBody(res);
    EXPECT_EQ(j.value("ready", false), true) << res->body;
    EXPECT_GE(j["requests"].value("done", 0), 1) << res->body;
    for (const char* key : {"queue_depth", "batches", "engine_busy_ratio", "memory", "recent"}) {
      EXPECT_TRUE(j.contains(key)) << key << " missing: " << res->body;
    }
  }
  {
    auto res = client_->Get("/metrics");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_TRUE(Contains(res->get_header_value("Content-Type"), "text/plain; version=0.0.4"));
    const std::string& text = res->body;
    // DESIGN.md §6 names, with their types.
    for (const char* family :
         {"# TYPE mogserve_requests_total counter", "# TYPE mogserve_http_responses_total counter",
          "# TYPE mogserve_request_duration_seconds histogram",
          "# TYPE mogserve_queue_duration_seconds histogram",
          "# TYPE mogserve_batch_size histogram",
          "# TYPE mogserve_inference_duration_seconds histogram",
          "# TYPE mogserve_queue_depth gauge", "# TYPE mogserve_engine_busy_ratio gauge",
          "# TYPE mogserve_device_memory_bytes gauge"}) {
      EXPECT_TRUE(Contains(text, family)) << family << " missing:\n" << text;
    }
    const auto metrics = ParseMetrics(text);
    EXPECT_GE(MetricValue(metrics, "mogserve_requests_total{outcome=\"done\"}"), 1) << text;
    EXPECT_GE(MetricValue(metrics, "mogserve_request_duration_seconds_bucket{le=\"+Inf\"}"), 1)
        << text;
    EXPECT_EQ(MetricValue(metrics, "mogserve_request_duration_seconds_bucket{le=\"+Inf\"}"),
              MetricValue(metrics, "mogserve_request_duration_seconds_count"));
    EXPECT_GE(MetricValue(metrics, "mogserve_batch_size_count"), 1) << text;
    EXPECT_GE(
        MetricValue(metrics, "mogserve_http_responses_total{route=\"/v1/detect\",code=\"200\"}"), 1)
        << text;
  }
}

TEST_F(ServeApiTest, RawBodyOfEachImageTypeGetsTheFaces) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"grace_hopper.jpg", "image/jpeg"},
      {"sample1.jpg", "image/jpeg"},
      {"astronaut.png", "image/png"},
      {"coffee.png", "image/png"},
      {"sample3.jpg", "application/octet-stream"},
      {"camera.png", "image/png"},
  };
  for (const auto& [photo, type] : cases) {
    SCOPED_TRACE(photo + " as " + type);
    auto res = PostImage(PhotoBytes(photo), type);
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
    const json j = ParseBody(res);
    EXPECT_EQ(CheckFaces(j, photo), "");
    for (const char* key :
         {"queue_ms", "preprocess_ms", "inference_ms", "postprocess_ms", "batch_size"}) {
      EXPECT_TRUE(j["timing"].contains(key)) << key << " missing: " << res->body;
    }
    for (const json& face : j["faces"]) EXPECT_GT(face.value("score", 0.0), 0.5);
  }
  {
    SCOPED_TRACE("WebP");
    auto res = PostImage(WebpPhoto(), "image/webp");
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(CheckFaces(ParseBody(res), "grace_hopper.jpg"), "");
  }
}

TEST_F(ServeApiTest, MultipartWithOneAndWithManyImageFields) {
  {
    SCOPED_TRACE("one image field: one result");
    httplib::MultipartFormDataItems form = {
        {"image", PhotoBytes("sample2.jpg"), "sample2.jpg", "image/jpeg"}};
    auto res = client_->Post("/v1/detect", form);
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(CheckFaces(ParseBody(res), "sample2.jpg"), "");
  }
  {
    SCOPED_TRACE("three image fields: a list in order");
    const std::vector<std::string> photos = {"sample4.jpg", "camera.png", "coffee.png"};
    httplib::MultipartFormDataItems form;
    for (const std::string& p : photos) form.push_back({"image", PhotoBytes(p), p, ""});
    auto res = client_->Post("/v1/detect", form);
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json j = ParseBody(res);
    ASSERT_TRUE(j.contains("results")) << res->body;
    ASSERT_EQ(j["results"].size(), photos.size()) << res->body;
    for (size_t i = 0; i < photos.size(); ++i) {
      EXPECT_EQ(j["results"][i].value("name", ""), photos[i]);
      EXPECT_EQ(j["results"][i].value("status", 0), 200);
      EXPECT_EQ(CheckFaces(j["results"][i], photos[i]), "");
    }
  }
  {
    SCOPED_TRACE("an option as a form field");
    httplib::MultipartFormDataItems form = {
        {"image", PhotoBytes("sample5.jpg"), "sample5.jpg", "image/jpeg"},
        {"max_faces", "1", "", ""}};
    auto res = client_->Post("/v1/detect", form);
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    ASSERT_GT(TrueFaceCount("sample5.jpg"), 1u);
    EXPECT_EQ(ParseBody(res)["faces"].size(), 1u) << res->body;
  }
}

// POST /v1/anonymize: /v1/detect's request, the picture back in its own format with the faces it
// found hidden (the detector finds none of them in the answer), the same size; several pictures
// come back as multipart/mixed parts in order; its own parameters are checked like any option.
TEST_F(ServeApiTest, AnonymizeAnswersEachPictureWithItsFacesHidden) {
  const auto detect = [&](const std::string& bytes, const std::string& type) {
    auto res = client_->Post("/v1/detect", bytes, type.c_str());
    EXPECT_TRUE(res && res->status == 200) << Describe(res);
    return res ? ParseBody(res) : json();
  };
  for (const auto& [photo, type, query] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"grace_hopper.jpg", "image/jpeg", ""},
           {"astronaut.png", "image/png", "?method=pixelate&shape=box&box_scale=1.5"}}) {
    SCOPED_TRACE(photo + query);
    const size_t before = detect(PhotoBytes(photo), type)["faces"].size();
    ASSERT_GT(before, 0u);
    auto res = client_->Post(("/v1/anonymize" + query).c_str(), PhotoBytes(photo), type.c_str());
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), type);
    EXPECT_EQ(res->get_header_value("X-Faces-Covered"), std::to_string(before));
    const auto original = image::Decode(std::span<const uint8_t>(
        reinterpret_cast<const uint8_t*>(PhotoBytes(photo).data()), PhotoBytes(photo).size()));
    const auto answer = image::Decode(std::span<const uint8_t>(
        reinterpret_cast<const uint8_t*>(res->body.data()), res->body.size()));
    ASSERT_TRUE(original.ok() && answer.ok());
    EXPECT_EQ(answer->width, original->width);
    EXPECT_EQ(answer->height, original->height);
    EXPECT_EQ(detect(res->body, type)["faces"].size(), 0u) << "a face still found";
  }
  {
    SCOPED_TRACE("two pictures: multipart/mixed");
    httplib::MultipartFormDataItems form = {
        {"image", PhotoBytes("sample1.jpg"), "sample1.jpg", "image/jpeg"},
        {"image", PhotoBytes("coffee.png"), "coffee.png", "image/png"}};
    auto res = client_->Post("/v1/anonymize", form);
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body.substr(0, 200);
    const std::string ct = res->get_header_value("Content-Type");
    ASSERT_EQ(ct.rfind("multipart/mixed; boundary=", 0), 0u) << ct;
    const std::string boundary = "--" + ct.substr(ct.find('=') + 1);
    std::vector<std::string> types;
    for (size_t at = res->body.find(boundary); at != std::string::npos;
         at = res->body.find(boundary, at + boundary.size())) {
      const size_t type_at = res->body.find("Content-Type: ", at);
      if (type_at == std::string::npos ||
          res->body.compare(at, boundary.size() + 2, boundary + "--") == 0)
        break;
      types.push_back(
          res->body.substr(type_at + 14, res->body.find("\r\n", type_at) - type_at - 14));
    }
    EXPECT_EQ(types, (std::vector<std::string>{"image/jpeg", "image/png"}));
    EXPECT_NE(res->body.find("filename=\"sample1.jpg\"\r\nX-Status: 200"), std::string::npos);
  }
  for (const auto& [query, message] : std::vector<std::pair<std::string, std::string>>{
           {"?method=smudge", "method 'smudge' is not one of: blur, pixelate, fill"},
           {"?shape=star", "shape 'star' is not one of: ellipse, box"},
           {"?box_scale=9", "box_scale: '9' is not allowed; a number from 1 to 3"},
           {"?max_faces=-1", "max_faces"}}) {
    SCOPED_TRACE(query);
    auto res = client_->Post(("/v1/anonymize" + query).c_str(), PhotoBytes("grace_hopper.jpg"),
                             "image/jpeg");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 422) << res->body;
    EXPECT_EQ(CheckError(res->body, "invalid_parameter", {message}), "");
  }
}

TEST_F(ServeApiTest, JsonWithOneBase64ImageAndWithAnImagesList) {
  {
    SCOPED_TRACE("image");
    const json body = {{"image", Base64(PhotoBytes("sample6.jpg"))}};
    auto res = client_->Post("/v1/detect", body.dump(), "application/json");
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(CheckFaces(ParseBody(res), "sample6.jpg"), "");
  }
  {
    SCOPED_TRACE("image as a data: URL");
    const json body = {{"image", "data:image/png;base64," + Base64(PhotoBytes("astronaut.png"))}};
    auto res = client_->Post("/v1/detect", body.dump(), "application/json");
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(CheckFaces(ParseBody(res), "astronaut.png"), "");
  }
  {
    SCOPED_TRACE("images list with options in the body");
    const json body = {
        {"images", {Base64(PhotoBytes("sample1.jpg")), Base64(PhotoBytes("grace_hopper.jpg"))}},
        {"score_threshold", 0.5},
        {"priority", "interactive"},
        {"timeout_ms", 60000}};
    auto res = client_->Post("/v1/detect", body.dump(), "application/json");
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json j = ParseBody(res);
    ASSERT_EQ(j["results"].size(), 2u) << res->body;
    EXPECT_EQ(j["results"][0].value("name", ""), "images[0]");
    EXPECT_EQ(CheckFaces(j["results"][0], "sample1.jpg"), "");
    EXPECT_EQ(j["results"][1].value("name", ""), "images[1]");
    EXPECT_EQ(CheckFaces(j["results"][1], "grace_hopper.jpg"), "");
  }
}

// min_face_size (the option table's) on each HTTP surface: the query, a JSON member and the OIP
// parameters. sample1's faces have shorter sides of about 181, 191 and 200 px, the best-scoring
// one the smallest: faces below the size go before max_faces picks the best.
TEST_F(ServeApiTest, MinFaceSizeDropsSmallFacesBeforeMaxFacesOnEveryHttpSurface) {
  const std::string& photo = PhotoBytes("sample1.jpg");
  const json all = ParseBody(PostImage(photo, "image/jpeg"));
  ASSERT_EQ(CheckFaces(all, "sample1.jpg"), "");
  const auto shorter = [](const json& f) {
    const json& b = f["box"];
    return std::min(b[2].get<double>() - b[0].get<double>(),
                    b[3].get<double>() - b[1].get<double>());
  };
  ASSERT_EQ(all["faces"].size(), 3u) << all.dump();
  const double best_side = shorter(all["faces"][0]);
  // A size just above the best face's side keeps every bigger face and drops the best one.
  const int min_size = static_cast<int>(std::floor(best_side)) + 1;
  std::vector<json> bigger;
  for (const json& f : all["faces"]) {
    if (shorter(f) >= min_size) bigger.push_back(f);
  }
  ASSERT_FALSE(bigger.empty());
  ASSERT_LT(bigger.size(), all["faces"].size()) << "sample1's best face is not its smallest";
  const std::string size = std::to_string(min_size);
  {
    SCOPED_TRACE("query");
    const json j = ParseBody(PostImage(photo, "image/jpeg", "?min_face_size=" + size));
    EXPECT_EQ(j["faces"], json(bigger));
    const json one =
        ParseBody(PostImage(photo, "image/jpeg", "?max_faces=1&min_face_size=" + size));
    ASSERT_EQ(one["faces"].size(), 1u) << one.dump();
    EXPECT_EQ(one["faces"][0], bigger[0]) << "the size filter runs before max_faces";
  }
  {
    SCOPED_TRACE("JSON member");
    const json body = {{"image", Base64(photo)}, {"min_face_size", min_size}};
    auto res = client_->Post("/v1/detect", body.dump(), "application/json");
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(ParseBody(res)["faces"], json(bigger));
  }
  {
    SCOPED_TRACE("OIP REST parameter");
    const json body = {
        {"inputs",
         {{{"name", "IMAGE"}, {"shape", {1}}, {"datatype", "BYTES"}, {"data", {Base64(photo)}}}}},
        {"parameters", {{"min_face_size", min_size}}}};
    auto res = client_->Post("/v2/models/ssd-mobilenetv1/infer", body.dump(), "application/json");
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json j = ParseBody(res);
    for (const json& out : j["outputs"]) {
      if (out["name"] == "COUNT") {
        EXPECT_EQ(out["data"][0].get<size_t>(), bigger.size()) << j.dump();
      }
    }
  }
  {
    SCOPED_TRACE("out of range");
    auto res = PostImage(photo, "image/jpeg", "?min_face_size=-1");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 422);
    EXPECT_EQ(CheckError(res->body, "invalid_parameter",
                         {"min_face_size: '-1' is not allowed", "pixels from 0 to 100000"}),
              "");
  }
}

TEST_F(ServeApiTest, OptionsChangeTheResultAsDocumented) {
  const std::string& photo = PhotoBytes("sample1.jpg");
  auto base = PostImage(photo, "image/jpeg");
  ASSERT_TRUE(base) << Describe(base);
  ASSERT_EQ(base->status, 200) << base->body;
  const json all = ParseBody(base);
  ASSERT_EQ(CheckFaces(all, "sample1.jpg"), "");
  double best_score = 0, lowest_score = 1;
  json best_face;
  for (const json& f : all["faces"]) {
    if (f["score"].get<double>() > best_score) best_face = f;
    best_score = std::max(best_score, f["score"].get<double>());
    lowest_score = std::min(lowest_score, f["score"].get<double>());
  }
  {
    SCOPED_TRACE("max_faces=1: the best face only");
    auto res = PostImage(photo, "image/jpeg", "?max_faces=1");
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json j = ParseBody(res);
    ASSERT_EQ(j["faces"].size(), 1u) << res->body;
    EXPECT_EQ(j["faces"][0], best_face);
  }
  {
    SCOPED_TRACE("score_threshold above the lowest score drops it");
    const double threshold = lowest_score + 1e-4;
    ASSERT_LT(threshold, best_score);
    auto res = PostImage(photo, "image/jpeg", "?score_threshold=" + std::to_string(threshold));
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json j = ParseBody(res);
    EXPECT_LT(j["faces"].size(), all["faces"].size()) << res->body;
    EXPECT_GE(j["faces"].size(), 1u) << res->body;
    for (const json& f : j["faces"]) EXPECT_GT(f["score"].get<double>(), threshold);
  }
  for (const char* priority : {"interactive", "api", "bulk", "stream"}) {
    SCOPED_TRACE(std::string("priority=") + priority);
    auto res = PostImage(photo, "image/jpeg", std::string("?priority=") + priority);
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(ParseBody(res)["faces"], all["faces"]);
  }
  {
    SCOPED_TRACE("timeout_ms long enough");
    auto res = PostImage(photo, "image/jpeg", "?timeout_ms=120000");
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(ParseBody(res)["faces"], all["faces"]);
  }
  {
    SCOPED_TRACE("format=modelscope");
    auto res = PostImage(photo, "image/jpeg", "?format=modelscope");
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json j = ParseBody(res);
    EXPECT_FALSE(j.contains("faces")) << res->body;
    ASSERT_EQ(j["scores"].size(), all["faces"].size()) << res->body;
    ASSERT_EQ(j["boxes"].size(), all["faces"].size()) << res->body;
    // The landmark net's five points (--landmarks auto) as ModelScope's flat keypoints.
    ASSERT_TRUE(j["keypoints"].is_array()) << res->body;
    ASSERT_EQ(j["keypoints"].size(), all["faces"].size()) << res->body;
    for (size_t i = 0; i < all["faces"].size(); ++i) {
      EXPECT_EQ(j["boxes"][i], all["faces"][i]["box"]);
      EXPECT_EQ(j["scores"][i], all["faces"][i]["score"]);
      json flat = json::array();
      for (const json& p : all["faces"][i]["landmarks"]) {
        flat.push_back(p[0]);
        flat.push_back(p[1]);
      }
      EXPECT_EQ(j["keypoints"][i], flat);
    }
  }
}

struct ErrorCase {
  std::string what;
  std::string path;
  std::string body;
  std::string content_type;
  int status;
  std::string code;
  std::vector<std::string> message_parts;
};

TEST_F(ServeApiTest, EveryErrorHasItsStatusCodeAndMessage) {
  const std::string& jpeg = PhotoBytes("grace_hopper.jpg");
  const std::string truncated = PhotoBytes("sample1.jpg").substr(0, 20000);
  const std::vector<ErrorCase> cases = {
      {"truncated JPEG",
       "/v1/detect",
       truncated,
       "image/jpeg",
       400,
       "invalid_image",
       {"truncated"}},
      {"empty body", "/v1/detect", "", "image/jpeg", 400, "invalid_image", {"empty"}},
      {"malformed JSON",
       "/v1/detect",
       "{\"image\": ",
       "application/json",
       400,
       "bad_request",
       {"JSON"}},
      {"bad base64",
       "/v1/detect",
       R"({"image": "%%%"})",
       "application/json",
       400,
       "invalid_image",
       {"base64"}},
      {"no image in JSON",
       "/v1/detect",
       R"({"max_faces": 3})",
       "application/json",
       400,
       "no_image",
       {"no image"}},
      {"text/plain",
       "/v1/detect",
       "hello",
       "text/plain",
       415,
       "unsupported_media_type",
       {"text/plain", "image/jpeg", "multipart/form-data", "application/json"}},
      {"GIF bytes",
       "/v1/detect",
       kGif,
       "application/octet-stream",
       415,
       "unsupported_image_format",
       {"GIF", "JPEG, PNG, WebP"}},
      {"not an image",
       "/v1/detect",
       "just some text, not a picture",
       "image/png",
       415,
       "unsupported_image_format",
       {"JPEG, PNG, WebP"}},
      {"score_threshold",
       "/v1/detect?score_threshold=2",
       jpeg,
       "image/jpeg",
       422,
       "invalid_parameter",
       {"score_threshold", "'2'", "from 0 to 1"}},
      {"max_faces",
       "/v1/detect?max_faces=0",
       jpeg,
       "image/jpeg",
       422,
       "invalid_parameter",
       {"max_faces", "from 1 to 10000"}},
      {"priority",
       "/v1/detect?priority=urgent",
       jpeg,
       "image/jpeg",
       422,
       "invalid_parameter",
       {"priority", "urgent", "interactive, api, bulk, stream"}},
      {"timeout_ms",
       "/v1/detect?timeout_ms=soon",
       jpeg,
       "image/jpeg",
       422,
       "invalid_parameter",
       {"timeout_ms", "milliseconds"}},
      {"format",
       "/v1/detect?format=xml",
       jpeg,
       "image/jpeg",
       422,
       "invalid_parameter",
       {"format", "modelscope"}},
      {"unknown parameter",
       "/v1/detect?colour=red",
       jpeg,
       "image/jpeg",
       422,
       "invalid_parameter",
       {"colour", "score_threshold, max_faces, min_face_size, priority, timeout_ms, format"}},
      {"JSON option",
       "/v1/detect",
       json({{"image", Base64(jpeg)}, {"max_faces", -1}}).dump(),
       "application/json",
       422,
       "invalid_parameter",
       {"max_faces", "-1"}},
      {"body over --max-body-bytes",
       "/v1/detect",
       std::string(kMaxBodyBytes + 1, 'x'),
       "image/jpeg",
       413,
       "payload_too_large",
       {"limit"}},
      {"image over --max-pixels",
       "/v1/detect",
       PatchJpegSize(jpeg, 2001, 2000),
       "image/jpeg",
       413,
       "image_too_large",
       {"2001x2000", std::to_string(kMaxPixels)}},
      {"deadline",
       "/v1/detect?timeout_ms=1",
       jpeg,
       "image/jpeg",
       504,
       "deadline_exceeded",
       {"deadline"}},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.what);
    auto res = client_->Post(c.path.c_str(), c.body, c.content_type.c_str());
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, c.status) << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
    EXPECT_EQ(CheckError(res->body, c.code, c.message_parts), "");
  }
  {
    SCOPED_TRACE("more images than --max-images (multipart)");
    httplib::MultipartFormDataItems form;
    for (int i = 0; i <= kMaxImages; ++i) form.push_back({"image", jpeg, "g.jpg", "image/jpeg"});
    auto res = client_->Post("/v1/detect", form);
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 413) << res->body;
    EXPECT_EQ(CheckError(res->body, "too_many_images",
                         {"more than " + std::to_string(kMaxImages) + " images"}),
              "");
  }
  {
    SCOPED_TRACE("more images than --max-images (JSON)");
    const json body = {{"images", std::vector<std::string>(kMaxImages + 1, Base64(jpeg))}};
    auto res = client_->Post("/v1/detect", body.dump(), "application/json");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 413) << res->body;
    EXPECT_EQ(CheckError(res->body, "too_many_images", {std::to_string(kMaxImages)}), "");
  }
  {
    SCOPED_TRACE("one bad image among several: 200, with the error in its entry");
    httplib::MultipartFormDataItems form = {{"image", jpeg, "good.jpg", "image/jpeg"},
                                            {"image", truncated, "bad.jpg", "image/jpeg"}};
    auto res = client_->Post("/v1/detect", form);
    ASSERT_TRUE(res) << Describe(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json j = ParseBody(res);
    ASSERT_EQ(j["results"].size(), 2u) << res->body;
    EXPECT_EQ(CheckFaces(j["results"][0], "grace_hopper.jpg"), "");
    EXPECT_EQ(j["results"][1].value("status", 0), 400);
    EXPECT_EQ(CheckError(j["results"][1].dump(), "invalid_image", {"truncated"}), "");
  }
  {
    SCOPED_TRACE("a known path with another method: 405 with Allow");
    auto res = client_->Get("/v1/detect");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 405) << res->body;
    EXPECT_EQ(res->get_header_value("Allow"), "POST");
    EXPECT_EQ(CheckError(res->body, "method_not_allowed", {"answers POST, not GET"}), "");
  }
  for (const auto& [method, path] :
       std::vector<std::pair<std::string, std::string>>{{"GET", "/nope"}, {"POST", "/v1/nope"}}) {
    SCOPED_TRACE(method + " " + path);
    auto res = method == "GET" ? client_->Get(path.c_str())
                               : client_->Post(path.c_str(), jpeg, "image/jpeg");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 404) << res->body;
    EXPECT_EQ(CheckError(res->body, "not_found", {method + " " + path}), "");
  }
}

TEST_F(ServeApiTest, NoCorsHeadersWithoutCorsOrigin) {
  const httplib::Headers origin = {{"Origin", "https://elsewhere.example"}};
  auto res = client_->Post("/v1/detect", origin, PhotoBytes("grace_hopper.jpg"), "image/jpeg");
  ASSERT_TRUE(res) << Describe(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_FALSE(res->has_header("Access-Control-Allow-Origin"));
  auto preflight = client_->Options("/v1/detect", {{"Origin", "https://elsewhere.example"},
                                                   {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(preflight) << Describe(preflight);
  EXPECT_NE(preflight->status, 204);
  EXPECT_FALSE(preflight->has_header("Access-Control-Allow-Origin"));
  EXPECT_FALSE(preflight->has_header("Access-Control-Allow-Methods"));
}

// The API key and CORS origin come from the environment (MOGSERVE_*), as does the port.
TEST(ServeE2E, ApiKeyCorsAndPortFromTheEnvironment) {
  ServeProcess server;
  ProcessOptions options;
  options.env = {{"MOGSERVE_PORT", "0"},
                 {"MOGSERVE_API_KEY", "s3cret-key"},
                 {"MOGSERVE_CORS_ORIGIN", "https://ui.example"},
                 {"MOGSERVE_MAX_BATCH_SIZE", "2"}};
  ASSERT_TRUE(server.Start({"--plan-batch-sizes", "1"}, options, /*add_port_flag=*/false));
  EXPECT_NE(server.port(), 7860) << "MOGSERVE_PORT=0 was not applied";
  ASSERT_TRUE(server.WaitReady());
  auto client = server.NewClient();
  const std::string& jpeg = PhotoBytes("grace_hopper.jpg");
  {
    SCOPED_TRACE("no key");
    auto res = client->Post("/v1/detect", jpeg, "image/jpeg");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 401) << res->body;
    EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Bearer");
    EXPECT_EQ(CheckError(res->body, "unauthorized", {"API key", "Authorization: Bearer"}), "");
    EXPECT_EQ(res->get_header_value("Access-Control-Allow-Origin"), "https://ui.example");
  }
  for (const std::string& header : {std::string("Bearer wrong"), std::string("Bearer s3cret"),
                                    std::string("Bearer s3cret-key2"),
                                    std::string("Basic s3cret-key"), std::string("s3cret-key")}) {
    SCOPED_TRACE("Authorization: " + header);
    auto res = client->Post("/v1/detect", {{"Authorization", header}}, jpeg, "image/jpeg");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 401) << res->body;
    EXPECT_EQ(CheckError(res->body, "unauthorized", {"not valid"}), "");
  }
  {
    SCOPED_TRACE("every /v1/ route needs the key");
    for (const char* path : {"/v1/models", "/v1/stats"}) {
      auto res = client->Get(path);
      ASSERT_TRUE(res) << Describe(res);
      EXPECT_EQ(res->status, 401) << path;
    }
  }
  {
    SCOPED_TRACE("probes and metrics need no key");
    for (const char* path : {"/healthz", "/readyz", "/metrics"}) {
      auto res = client->Get(path);
      ASSERT_TRUE(res) << Describe(res);
      EXPECT_EQ(res->status, 200) << path;
    }
  }
  {
    SCOPED_TRACE("the right key");
    client->set_bearer_token_auth("s3cret-key");
    auto res = client->Post("/v1/detect", {{"Origin", "https://ui.example"}}, jpeg, "image/jpeg");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(CheckFaces(ParseBody(res), "grace_hopper.jpg"), "");
    EXPECT_EQ(res->get_header_value("Access-Control-Allow-Origin"), "https://ui.example");
    auto models = client->Get("/v1/models");
    ASSERT_TRUE(models) << Describe(models);
    EXPECT_EQ(models->status, 200);
    EXPECT_TRUE(Contains(ParseBody(models)["models"][0].value("scheduler", ""), "max batch 2"))
        << "MOGSERVE_MAX_BATCH_SIZE was not applied: " << models->body;
  }
  {
    SCOPED_TRACE("CORS preflight: answered without the key");
    auto client2 = server.NewClient();
    auto res = client2->Options("/v1/detect",
                                {{"Origin", "https://ui.example"},
                                 {"Access-Control-Request-Method", "POST"},
                                 {"Access-Control-Request-Headers", "authorization,content-type"}});
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 204);
    EXPECT_EQ(res->get_header_value("Access-Control-Allow-Origin"), "https://ui.example");
    EXPECT_TRUE(Contains(res->get_header_value("Access-Control-Allow-Methods"), "POST"));
    const std::string allowed_headers = res->get_header_value("Access-Control-Allow-Headers");
    EXPECT_TRUE(Contains(allowed_headers, "Authorization")) << allowed_headers;
    EXPECT_TRUE(Contains(allowed_headers, "Content-Type")) << allowed_headers;
  }
  const ProcessResult r = server.Stop();
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_FALSE(Contains(r.out + r.err, "s3cret-key")) << "the API key must not be logged";
}

// /readyz is 503 while the buffer plan is measured, and /v1/detect refuses with Retry-After.
// Measuring batch sizes 1, 2 and 4 (first passes included) takes far longer than the first
// requests below, sent as soon as the server listens.
TEST(ServeE2E, NotReadyDuringTheWarmUpThenReady) {
  ServeProcess server;
  ASSERT_TRUE(server.Start({"--plan-batch-sizes", "1,2,4", "--max-batch-size", "4"}));
  auto client = server.NewClient();
  {
    auto res = client->Get("/readyz");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 503) << res->body;
    EXPECT_EQ(res->get_header_value("Retry-After"), "1");
    EXPECT_EQ(ParseBody(res).value("ready", true), false) << res->body;
  }
  {
    auto res = client->Post("/v1/detect", PhotoBytes("grace_hopper.jpg"), "image/jpeg");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 503) << res->body;
    EXPECT_EQ(res->get_header_value("Retry-After"), "1");
    EXPECT_EQ(CheckError(res->body, "not_ready", {"warming up"}), "");
  }
  {
    auto res = client->Get("/healthz");
    ASSERT_TRUE(res) << Describe(res);
    EXPECT_EQ(res->status, 200) << "alive while warming up";
  }
  ASSERT_TRUE(server.WaitReady());
  auto res = client->Post("/v1/detect", PhotoBytes("grace_hopper.jpg"), "image/jpeg");
  ASSERT_TRUE(res) << Describe(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(CheckFaces(ParseBody(res), "grace_hopper.jpg"), "");
  const ProcessResult r = server.Stop();
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  // The start-up banner.
  for (const char* part : {"model: ssd", "buffer plan", "ready: open http://127.0.0.1:"}) {
    EXPECT_TRUE(Contains(r.out + r.err, part)) << part << " missing:\n" << r.out << r.err;
  }
}

// `serve --help` documents every flag with its default, and how to set it from the environment.
TEST(ServeE2E, HelpDocumentsEveryFlagWithItsDefault) {
  const ProcessResult r = RunMogserve({"serve", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const std::string& help = r.out;
  // Flag, and its default as the help shows it ("" = the description must say "default" / "off").
  const std::vector<std::pair<std::string, std::string>> flags = {
      {"--host", "=127.0.0.1"},
      {"--port", "=7860"},
      {"--api-key", ""},
      {"--cors-origin", ""},
      {"--max-body-bytes", "=67108864"},
      {"--max-images", "=32"},
      {"--max-pixels", "=50000000"},
      {"--api-key-file", ""},
      {"--max-body-bytes-in-flight", "=1073741824"},
      {"--max-header-bytes", "=16384"},
      {"--max-connections", "=10000"},
      {"--io-threads", "=2"},
      {"--header-timeout", "=10"},
      {"--body-timeout", "=60"},
      {"--idle-timeout", "=10"},
      {"--access-log", "=text"},
      {"--drain-timeout", "=30"},
      {"--scheduler", "=continuous"},
      {"--max-batch-size", "=16"},
      {"--timeout", "=0.002"},
      {"--max-batch-pixels", "=0"},
      {"--queue-capacity", "=4096"},
      {"--queue-capacity-bytes", "=1073741824"},
      {"--request-timeout", "=30"},
      {"--latency-target-ms", "=100"},
      {"--pad-batches", ""},
      {"--instances", "=0"},
      {"--workers", "=0"},
      {"--post-threads", "=1"},
      {"--memory-fraction", "=0.8"},
      {"--plan-batch-sizes", "=1,2,4,8,16"},
      {"--model", "=ssd"},
      {"--device", "=cpu"},
      {"--precision", "=fp32"},
  };
  const std::vector<std::string> lines = SplitLines(help);
  for (const auto& [flag, shown_default] : flags) {
    SCOPED_TRACE(flag);
    // The option line, and its description on the next line(s).
    size_t at = lines.size();
    for (size_t i = 0; i < lines.size(); ++i) {
      if (std::regex_search(lines[i], std::regex("^\\s+" + flag + "( |$)"))) at = i;
    }
    ASSERT_LT(at, lines.size()) << flag << " not documented:\n" << help;
    const std::string& line = lines[at];
    const std::string description = at + 1 < lines.size() ? lines[at + 1] : "";
    std::string env = "MOGSERVE_";
    for (char c : flag.substr(2)) env += c == '-' ? '_' : static_cast<char>(std::toupper(c));
    EXPECT_TRUE(Contains(line, "(Env:" + env + ")")) << line;
    if (shown_default.empty()) {
      EXPECT_TRUE(Contains(description, "default") || Contains(description, "off"))
          << "no default stated: " << line << "\n"
          << description;
    } else {
      EXPECT_TRUE(Contains(line, shown_default)) << line;
    }
    EXPECT_FALSE(description.empty());
  }
  EXPECT_FALSE(Contains(help, "MOGSERVE_HELP")) << "MOGSERVE_HELP=1 would print the help";
  // Unset by default: no made-up default (it was once shown as -1, outside its own range).
  for (const std::string& line : lines) {
    if (Contains(line, "--max-delay-ms")) {
      EXPECT_FALSE(Contains(line, "=-1")) << line;
    }
  }
}

}  // namespace
}  // namespace mogserve::e2e
