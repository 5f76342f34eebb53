#include "server/detect_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tuple>

namespace mogserve::server {
namespace {

using ::testing::HasSubstr;
using Query = std::multimap<std::string, std::string>;

struct Field {
  std::string name;
  std::string filename;
  std::string data;
};

// A multipart/form-data body with `boundary`, as browsers and curl -F write it.
std::string Multipart(const std::string& boundary, const std::vector<Field>& fields) {
  std::string body;
  for (const Field& f : fields) {
    body += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + f.name + "\"";
    if (!f.filename.empty()) body += "; filename=\"" + f.filename + "\"";
    body += "\r\nContent-Type: application/octet-stream\r\n\r\n" + f.data + "\r\n";
  }
  return body + "--" + boundary + "--\r\n";
}

ParsedDetectRequest Parse(std::string_view type, std::string_view body, const Query& query = {},
                          RequestLimits limits = {}) {
  return ParseDetectRequest(type, std::string(body), query, limits);
}

TEST(DecodeBase64Test, DecodesPaddedUnpaddedWhitespaceAndDataUrls) {
  EXPECT_EQ(DecodeBase64("aGVsbG8="), ImageBytes("hello"));
  EXPECT_EQ(DecodeBase64("aGVsbG8"), ImageBytes("hello"));
  EXPECT_EQ(DecodeBase64("aGVs\nbG8=\r\n"), ImageBytes("hello"));
  EXPECT_EQ(DecodeBase64("data:image/png;base64,aGk="), ImageBytes("hi"));
  EXPECT_EQ(DecodeBase64("/+A="), ImageBytes(std::string("\xff\xe0", 2)));
  EXPECT_EQ(DecodeBase64("_-A="), ImageBytes(std::string("\xff\xe0", 2)));  // URL-safe alphabet
  EXPECT_EQ(DecodeBase64(""), ImageBytes(""));
  EXPECT_FALSE(DecodeBase64("aGVsbG8*").has_value());
  EXPECT_FALSE(DecodeBase64("aG=Vs").has_value());                // data after padding
  EXPECT_FALSE(DecodeBase64("a").has_value());                    // 6 bits cannot make a byte
  EXPECT_FALSE(DecodeBase64("data:image/png,aGk=").has_value());  // not base64
}

TEST(EncodeBase64Test, PadsAndRoundTripsEveryByte) {
  EXPECT_EQ(EncodeBase64(ImageBytes("hello")), "aGVsbG8=");
  EXPECT_EQ(EncodeBase64(ImageBytes("hi")), "aGk=");
  EXPECT_EQ(EncodeBase64(ImageBytes("abc")), "YWJj");
  EXPECT_EQ(EncodeBase64(ImageBytes(std::string("\xff\xe0", 2))), "/+A=");
  EXPECT_EQ(EncodeBase64(ImageBytes("")), "");
  for (size_t n = 0; n < 7; ++n) {
    std::vector<uint8_t> all(256 + n);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint8_t>(i * 7 + n);
    EXPECT_EQ(DecodeBase64(EncodeBase64(all)), all) << n;
  }
}

TEST(ParseDetectRequestTest, CropSizeMustHaveATemplateRuleAndTheJsonFormat) {
  for (const char* ok : {"112", "224", "128", "256"}) {
    EXPECT_FALSE(Parse("image/jpeg", "J", {{"crop_size", ok}}).error.has_value()) << ok;
  }
  for (const char* bad : {"100", "111", "2000", "x"}) {
    const auto r = Parse("image/jpeg", "J", {{"crop_size", bad}});
    ASSERT_TRUE(r.error.has_value()) << bad;
    EXPECT_EQ(r.error->status, 422) << bad;
    EXPECT_NE(r.error->message.find("crop_size"), std::string::npos) << r.error->message;
  }
  const auto form = Parse("multipart/form-data; boundary=b",
                          "--b\r\nContent-Disposition: form-data; name=\"crop_size\"\r\n\r\n"
                          "120\r\n--b\r\nContent-Disposition: form-data; name=\"image\"\r\n\r\n"
                          "J\r\n--b--\r\n");
  ASSERT_TRUE(form.error.has_value());  // 120: neither a multiple of 112 nor of 128
  EXPECT_NE(form.error->message.find("multiple of 112 or of 128"), std::string::npos)
      << form.error->message;
  const auto modelscope =
      Parse("image/jpeg", "J", {{"crop_size", "112"}, {"format", "modelscope"}});
  ASSERT_TRUE(modelscope.error.has_value());
  EXPECT_NE(modelscope.error->message.find("modelscope"), std::string::npos);
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
  EXPECT_EQ(r.request.images[0].bytes, ImageBytes("JPEGBYTES"));
  EXPECT_FALSE(r.request.many);
  EXPECT_FLOAT_EQ(*r.request.params.score_threshold, 0.25f);
  EXPECT_EQ(*r.request.params.max_faces, 3);
  EXPECT_EQ(r.request.params.priority, "interactive");
  EXPECT_EQ(*r.request.params.timeout_ms, 500);
  EXPECT_TRUE(r.request.params.modelscope_format());
  // Content type parameters and case do not matter; octet-stream and none are sniffed later.
  EXPECT_FALSE(Parse("Image/PNG; charset=binary", "x").error.has_value());
  EXPECT_FALSE(Parse("application/octet-stream", "x").error.has_value());
  EXPECT_FALSE(Parse("", "x").error.has_value());
}

TEST(ParseDetectRequestTest, MultipartWithManyImagesAndFormOptions) {
  // A bad option in a form field is refused like one in the query.
  const auto refused = Parse("multipart/form-data; boundary=b",
                             Multipart("b", {{"image", "a.jpg", "AAA"}, {"priority", "", "now"}}));
  ASSERT_TRUE(refused.error.has_value());
  EXPECT_EQ(refused.error->status, 422);
  EXPECT_THAT(refused.error->message, HasSubstr("priority: 'now'"));

  // A preamble before the first boundary and a quoted boundary parameter are allowed.
  const std::string body = "preamble\r\n" + Multipart("b0undary", {{"image", "a.jpg", "AAA"},
                                                                   {"image", "b.png", "B\r\nB-B"},
                                                                   {"max_faces", "", "9"}});
  const auto r = Parse("multipart/form-data; boundary=\"b0undary\"", body);
  ASSERT_FALSE(r.error.has_value()) << r.error->message;
  ASSERT_EQ(r.request.images.size(), 2u);
  EXPECT_EQ(r.request.images[0].name, "a.jpg");
  EXPECT_EQ(r.request.images[1].bytes, ImageBytes("B\r\nB-B"));
  EXPECT_TRUE(r.request.many);
  EXPECT_EQ(*r.request.params.max_faces, 9);
}

TEST(ParseDetectRequestTest, MalformedMultipartBodiesAreRefusedWithWhatIsWrong) {
  const std::string type = "multipart/form-data; boundary=b";
  const std::string image = Multipart("b", {{"image", "a.jpg", "AAA"}});
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"multipart/form-data", image, "needs a boundary"},
      {type, "no boundary here", "no boundary line"},
      {type, image.substr(0, image.size() - 8), "no closing boundary"},
      {type, "--b\r\nContent-Type: image/jpeg\r\n\r\nAAA\r\n--b--", "no Content-Disposition"},
      {type, "--b\r\n\r\nAAA\r\n--b--", "no Content-Disposition"},
      {type, "--b\r\nContent-Disposition: form-data; name=\"image\r\n\r\nA\r\n--b--",
       "unterminated quoted string"},
      {type, "--b\r\nContent-Disposition: attachment\r\n\r\nA\r\n--b--", "not form-data"},
      {type, "--b\r\nContent-Disposition: form-data; name=image" + std::string(9000, ' '),
       "do not end within 8 KiB"},
  };
  for (const auto& [content_type, body, message] : cases) {
    SCOPED_TRACE(message);
    const auto r = Parse(content_type, body);
    ASSERT_TRUE(r.error.has_value());
    EXPECT_EQ(r.error->status, 400);
    EXPECT_THAT(r.error->message, HasSubstr(message));
  }
}

TEST(ParseDetectRequestTest, JsonNestingIsBoundedWhileParsing) {
  // 100 000 levels used to overflow the stack when the option value was written back.
  const std::string deep = "{\"image\":\"aGk=\",\"max_faces\":" + std::string(100'000, '[') +
                           std::string(100'000, ']') + "}";
  auto r = Parse("application/json", deep);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->status, 400);
  EXPECT_EQ(r.error->code, "json_too_deep");
  EXPECT_THAT(r.error->message, HasSubstr("deeper than 8 levels"));
  // Unbalanced deep nesting too (the parser stops at the limit, not at the end).
  r = Parse("application/json", std::string(1'000'000, '['));
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->code, "json_too_deep");
  // Nesting within the limit still reaches the option check.
  r = Parse("application/json", R"({"image":"aGk=","max_faces":[[1]]})");
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->status, 422);
  EXPECT_THAT(r.error->message, HasSubstr("max_faces: '[[1]]'"));
}

TEST(ParseDetectRequestTest, ContentTypeIsCheckedFromTheHeaderAlone) {
  EXPECT_FALSE(CheckDetectContentType("image/jpeg").has_value());
  EXPECT_FALSE(CheckDetectContentType("multipart/form-data; boundary=x").has_value());
  EXPECT_FALSE(CheckDetectContentType("").has_value());
  const auto form = CheckDetectContentType("application/x-www-form-urlencoded");
  ASSERT_TRUE(form.has_value());
  EXPECT_EQ(form->status, 415);
  EXPECT_THAT(form->message, HasSubstr("-H 'Content-Type: image/jpeg'"));
  EXPECT_EQ(CheckDetectContentType("text/html")->status, 415);
}

TEST(ParseDetectRequestTest, JsonWithOneOrManyBase64Images) {
  auto r =
      Parse("application/json", R"({"image":"aGVsbG8=","score_threshold":0.6,"priority":"bulk"})");
  ASSERT_FALSE(r.error.has_value()) << r.error->message;
  ASSERT_EQ(r.request.images.size(), 1u);
  EXPECT_EQ(r.request.images[0].bytes, ImageBytes("hello"));
  EXPECT_FLOAT_EQ(*r.request.params.score_threshold, 0.6f);
  EXPECT_EQ(r.request.params.priority, "bulk");
  EXPECT_FALSE(r.request.many);

  r = Parse("application/json", R"({"images":["aGk=","aGV5"]})");
  ASSERT_FALSE(r.error.has_value()) << r.error->message;
  ASSERT_EQ(r.request.images.size(), 2u);
  EXPECT_EQ(r.request.images[1].bytes, ImageBytes("hey"));
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
      {"multipart/form-data; boundary=b", "--b--", {}, 400, "no_image", "carries no image"},
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

TEST(ParseDetectRequestTest, LimitsOnImagesAndParts) {
  RequestLimits limits;
  limits.max_images = 2;
  limits.max_form_parts = 4;
  auto r = Parse("multipart/form-data; boundary=b",
                 Multipart("b", {{"image", "", "1"}, {"image", "", "2"}, {"image", "", "3"}}), {},
                 limits);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->status, 413);
  EXPECT_THAT(r.error->message, HasSubstr("more than 2 images"));
  r = Parse("multipart/form-data; boundary=b",
            Multipart("b", std::vector<Field>(5, {"x", "", "1"})), {}, limits);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->status, 413);
  EXPECT_EQ(r.error->code, "too_many_parts");
  EXPECT_THAT(r.error->message, HasSubstr("more than 4 parts"));
}

}  // namespace
}  // namespace mogserve::server
