#include "server/detect_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mogserve::server {
namespace {

using ::testing::HasSubstr;
using Query = std::multimap<std::string, std::string>;

ParsedDetectRequest Parse(std::string_view type, std::string_view body, const Query& query = {},
                          RequestLimits limits = {}, const std::vector<FormPart>& parts = {}) {
  return ParseDetectRequest(type, body, parts, query, limits);
}

TEST(DecodeBase64Test, DecodesPaddedUnpaddedWhitespaceAndDataUrls) {
  EXPECT_EQ(DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(DecodeBase64("aGVsbG8"), "hello");
  EXPECT_EQ(DecodeBase64("aGVs\nbG8=\r\n"), "hello");
  EXPECT_EQ(DecodeBase64("data:image/png;base64,aGk="), "hi");
  EXPECT_EQ(DecodeBase64("/+A="), std::string("\xff\xe0", 2));
  EXPECT_EQ(DecodeBase64("_-A="), std::string("\xff\xe0", 2));  // URL-safe alphabet
  EXPECT_EQ(DecodeBase64(""), "");
  EXPECT_FALSE(DecodeBase64("aGVsbG8*").has_value());
  EXPECT_FALSE(DecodeBase64("aG=Vs").has_value());                // data after padding
  EXPECT_FALSE(DecodeBase64("a").has_value());                    // 6 bits cannot make a byte
  EXPECT_FALSE(DecodeBase64("data:image/png,aGk=").has_value());  // not base64
}

TEST(ParseDetectRequestTest, RawImageBodyWithQueryOptions) {
  const auto r = Parse("image/jpeg", "JPEGBYTES",
                       {{"score_threshold", "0.25"},
                        {"max_faces", "3"},
                        {"priority", "interactive"},
                        {"timeout_ms", "500"},
                        {"format", "modelscope"}});
  ASSERT_FALSE(r.error.has_value()) << r.error->message;
  ASSERT_EQ(r.request.images.size(), 1u);
  EXPECT_EQ(r.request.images[0].bytes, "JPEGBYTES");
  EXPECT_FALSE(r.request.many);
  EXPECT_FLOAT_EQ(*r.request.params.score_threshold, 0.25f);
  EXPECT_EQ(*r.request.params.max_faces, 3);
  EXPECT_EQ(r.request.params.priority, scheduler::Priority::kInteractive);
  EXPECT_EQ(*r.request.params.timeout_ms, 500);
  EXPECT_TRUE(r.request.params.modelscope_format);
  // Content type parameters and case do not matter; octet-stream and none are sniffed later.
  EXPECT_FALSE(Parse("Image/PNG; charset=binary", "x").error.has_value());
  EXPECT_FALSE(Parse("application/octet-stream", "x").error.has_value());
  EXPECT_FALSE(Parse("", "x").error.has_value());
}

TEST(ParseDetectRequestTest, MultipartWithManyImagesAndFormOptions) {
  // A bad option in a form field is refused like one in the query.
  const std::vector<FormPart> bad = {{"image", "a.jpg", "AAA"}, {"priority", "", "now"}};
  const auto refused = Parse("multipart/form-data; boundary=b", "", {}, {}, bad);
  ASSERT_TRUE(refused.error.has_value());
  EXPECT_EQ(refused.error->status, 422);
  EXPECT_THAT(refused.error->message, HasSubstr("priority: 'now'"));

  const std::vector<FormPart> parts = {
      {"image", "a.jpg", "AAA"}, {"image", "b.png", "BBB"}, {"max_faces", "", "9"}};
  const auto r = Parse("multipart/form-data; boundary=\"b0undary\"", "", {}, {}, parts);
  ASSERT_FALSE(r.error.has_value()) << r.error->message;
  ASSERT_EQ(r.request.images.size(), 2u);
  EXPECT_EQ(r.request.images[0].name, "a.jpg");
  EXPECT_EQ(r.request.images[1].bytes, "BBB");
  EXPECT_TRUE(r.request.many);
  EXPECT_EQ(*r.request.params.max_faces, 9);
}

TEST(ParseDetectRequestTest, JsonWithOneOrManyBase64Images) {
  auto r =
      Parse("application/json", R"({"image":"aGVsbG8=","score_threshold":0.6,"priority":"bulk"})");
  ASSERT_FALSE(r.error.has_value()) << r.error->message;
  ASSERT_EQ(r.request.images.size(), 1u);
  EXPECT_EQ(r.request.images[0].bytes, "hello");
  EXPECT_FLOAT_EQ(*r.request.params.score_threshold, 0.6f);
  EXPECT_EQ(r.request.params.priority, scheduler::Priority::kBulk);
  EXPECT_FALSE(r.request.many);

  r = Parse("application/json", R"({"images":["aGk=","aGV5"]})");
  ASSERT_FALSE(r.error.has_value()) << r.error->message;
  ASSERT_EQ(r.request.images.size(), 2u);
  EXPECT_EQ(r.request.images[1].bytes, "hey");
  EXPECT_TRUE(r.request.many);
}

struct ErrorCase {
  std::string type;
  std::string body;
  Query query;
  int status;
  std::string code;
  std::string message;
};

TEST(ParseDetectRequestTest, EveryBadRequestGetsItsStatusAndASpecificMessage) {
  const std::vector<ErrorCase> cases = {
      {"text/plain", "x", {}, 415, "unsupported_media_type", "'text/plain' is not accepted"},
      {"application/x-www-form-urlencoded",
       "x",
       {},
       415,
       "unsupported_media_type",
       "curl --data-binary"},
      {"image/jpeg", "", {}, 400, "invalid_image", "the image is empty"},
      {"application/json", "{not json", {}, 400, "bad_request", "not valid JSON"},
      {"application/json", "[1]", {}, 400, "bad_request", "must be an object"},
      {"application/json", R"({"image":5})", {}, 400, "bad_request", "image must be a base64"},
      {"application/json",
       R"({"image":"@@@"})",
       {},
       400,
       "invalid_image",
       "image is not valid base64"},
      {"application/json",
       R"({"images":"aGk="})",
       {},
       400,
       "bad_request",
       "images must be an array"},
      {"application/json", R"({"score_threshold":0.5})", {}, 400, "no_image", "carries no image"},
      {"application/json",
       R"({"image":"aGk=","colour":"red"})",
       {},
       422,
       "invalid_parameter",
       "unknown parameter 'colour'; allowed: score_threshold"},
      {"multipart/form-data; boundary=b", "", {}, 400, "no_image", "carries no image"},
      {"image/png",
       "x",
       {{"score_threshold", "1.5"}},
       422,
       "invalid_parameter",
       "score_threshold: '1.5' is not allowed; a number from 0 to 1"},
      {"image/png", "x", {{"score_threshold", "nan"}}, 422, "invalid_parameter", "score_threshold"},
      {"image/png",
       "x",
       {{"max_faces", "0"}},
       422,
       "invalid_parameter",
       "max_faces: '0' is not allowed; an integer from 1 to 10000"},
      {"image/png", "x", {{"max_faces", "3.5"}}, 422, "invalid_parameter", "max_faces"},
      {"image/png",
       "x",
       {{"priority", "urgent"}},
       422,
       "invalid_parameter",
       "one of interactive, api, bulk, stream"},
      {"image/png", "x", {{"timeout_ms", "-1"}}, 422, "invalid_parameter", "timeout_ms"},
      {"image/png",
       "x",
       {{"format", "xml"}},
       422,
       "invalid_parameter",
       "json (default) or modelscope"},
      {"image/png",
       "x",
       {{"scoreThreshold", "0.5"}},
       422,
       "invalid_parameter",
       "unknown parameter 'scoreThreshold'"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.type + " | " + c.body);
    const auto r = Parse(c.type, c.body, c.query);
    ASSERT_TRUE(r.error.has_value());
    EXPECT_EQ(r.error->status, c.status);
    EXPECT_EQ(r.error->code, c.code);
    EXPECT_THAT(r.error->message, HasSubstr(c.message));
  }
}

TEST(ParseDetectRequestTest, LimitsOnImagesAndBodyBytes) {
  RequestLimits limits;
  limits.max_images = 2;
  limits.max_body_bytes = 1000;
  const std::vector<FormPart> three = {{"image", "", "1"}, {"image", "", "2"}, {"image", "", "3"}};
  auto r = Parse("multipart/form-data; boundary=b", "", {}, limits, three);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->status, 413);
  EXPECT_THAT(r.error->message, HasSubstr("more than 2 images"));
  r = Parse("image/jpeg", std::string(1001, 'x'), {}, limits);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->status, 413);
  EXPECT_THAT(r.error->message, HasSubstr("at most 1000"));
}

}  // namespace
}  // namespace mogserve::server
