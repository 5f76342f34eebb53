// The route table (server/routes.h): patterns and their parameters, and the order in which a
// request's header is refused — route, method, key, readiness, content type, the route's own.
#include "server/routes.h"

#include <gtest/gtest.h>

namespace mogserve::server {
namespace {

using http::HttpRequest;
using http::HttpResponse;

std::optional<HttpError> JpegOnly(std::string_view content_type) {
  if (content_type == "image/jpeg") return std::nullopt;
  return HttpError{415, "unsupported_media_type", "send image/jpeg"};
}

RouteTable Table(std::vector<std::string>* handled) {
  auto handler = [handled](std::string name) {
    return [handled, name](HttpRequest, const http::Responder&) { handled->push_back(name); };
  };
  auto refuse_x = [](const HttpRequest& head, const RouteParams&) -> std::optional<HttpResponse> {
    if (head.query.count("x")) return http::JsonError(422, "invalid_parameter", "x");
    return std::nullopt;
  };
  using E = Route::Errors;
  return RouteTable({
      {"/v1/detect", "POST", "", true, true, false, E::kMogserve, JpegOnly, refuse_x,
       handler("detect")},
      {"/healthz", "GET", "", false, false, true, E::kMogserve, nullptr, {}, handler("healthz")},
      {"/v1/items", "GET,POST", "", true, false, false, E::kMogserve, nullptr, {}, {}},
      {"/v1/items/{id...}", "GET,DELETE", "/v1/items/", true, false, false, E::kMogserve, nullptr,
       {}, {}},
      {"/v2/models/{model}/versions/{version}/infer", "POST", "/v2/infer", true, true, false,
       E::kOip, nullptr, {}, {}},
  });
}

HttpRequest Head(std::string method, std::string path, std::string content_type = "") {
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  if (!content_type.empty()) r.headers.emplace_back("Content-Type", content_type);
  return r;
}

int StatusOf(const std::optional<HttpResponse>& r) {
  return r ? r->status : 0;
}

TEST(RouteTableTest, PatternsTakeTheirParameters) {
  std::vector<std::string> handled;
  const RouteTable t = Table(&handled);
  auto m = t.Find("/v2/models/mogface/versions/1/infer");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->params.Get("model"), "mogface");
  EXPECT_EQ(m->params.Get("version"), "1");
  EXPECT_TRUE(t.Find("/v2/models/mogface/versions/1/infer/").has_value());  // one trailing '/'
  EXPECT_FALSE(t.Find("/v2/models//versions/1/infer").has_value());  // empty parameter
  EXPECT_FALSE(t.Find("/v2/models/m/versions/1").has_value());
  auto rest = t.Find("/v1/items/abc/restart");
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(rest->params.Get("id"), "abc/restart");
  EXPECT_EQ(t.Find("/v1/items")->route->pattern, "/v1/items");  // exact before the pattern
  EXPECT_FALSE(t.Find("/v1/items/").has_value());  // the rest may not be empty
  EXPECT_FALSE(t.Find("/healthz/").has_value());   // literal paths are exact
  EXPECT_EQ(t.Label(t.IndexOf(*rest->route)), "/v1/items/");
  EXPECT_EQ(t.Label(t.IndexOf(*t.Find("/healthz")->route)), "/healthz");
  EXPECT_EQ(t.Label(-1), "other");
}

TEST(RouteTableTest, RefusesInTheOrderAClientFixesThings) {
  std::vector<std::string> handled;
  const RouteTable t = Table(&handled);
  auto screen = [&](HttpRequest head, bool authorized, bool ready) {
    return t.Screen(head, authorized, ready);
  };
  EXPECT_EQ(StatusOf(screen(Head("GET", "/nope"), false, false)), 404);
  const auto wrong_method = screen(Head("GET", "/v1/detect"), false, false);
  EXPECT_EQ(StatusOf(wrong_method), 405);
  EXPECT_NE(wrong_method->body.find("answers POST, not GET"), std::string::npos);
  EXPECT_EQ(screen(Head("PUT", "/v1/items"), true, true)->headers.at(0).second,
            "GET, HEAD, POST");  // Allow
  HttpRequest refused = Head("GET", "/v1/detect");
  EXPECT_EQ(StatusOf(t.Screen(refused, false, false)), 405);
  EXPECT_EQ(t.Label(refused.route), "/v1/detect");  // a refusal keeps its route's label
  EXPECT_EQ(StatusOf(screen(Head("POST", "/v1/detect"), false, false)), 401);
  EXPECT_EQ(StatusOf(screen(Head("POST", "/v1/detect"), true, false)), 503);
  EXPECT_EQ(StatusOf(screen(Head("POST", "/v1/detect", "text/plain"), true, true)), 415);
  HttpRequest with_x = Head("POST", "/v1/detect", "image/jpeg");
  with_x.query.emplace("x", "1");
  EXPECT_EQ(StatusOf(screen(std::move(with_x), true, true)), 422);
  HttpRequest ok = Head("POST", "/v1/detect", "image/jpeg");
  EXPECT_EQ(StatusOf(t.Screen(ok, true, true)), 0);
  EXPECT_EQ(ok.route, t.IndexOf(*t.Find("/v1/detect")->route));  // found once, kept
  EXPECT_EQ(StatusOf(screen(Head("HEAD", "/healthz"), false, false)), 0);  // GET answers HEAD
  // /v2 answers in the Open Inference Protocol's shape: {"error": "<message>"}.
  const auto v2 = screen(Head("POST", "/v2/models/m/versions/1/infer"), true, false);
  EXPECT_EQ(StatusOf(v2), 503);
  EXPECT_EQ(v2->body.find("\"code\""), std::string::npos) << v2->body;
  EXPECT_TRUE(handled.empty());  // screening runs no handler
}

TEST(RouteTableTest, TheAdminPortServesOnlyItsRoutes) {
  std::vector<std::string> handled;
  const RouteTable t = Table(&handled);
  HttpRequest probe = Head("GET", "/healthz");
  EXPECT_EQ(StatusOf(t.Screen(probe, true, true, /*admin_port=*/true)), 0);
  HttpRequest detect = Head("POST", "/v1/detect", "image/jpeg");
  const auto refused = t.Screen(detect, true, true, /*admin_port=*/true);
  EXPECT_EQ(StatusOf(refused), 404);
  EXPECT_NE(refused->body.find("serves /healthz only"), std::string::npos) << refused->body;
}

}  // namespace
}  // namespace mogserve::server
