// The HTTP routes, declared once (HttpServer's table, http_server.cpp): each route's path
// pattern, methods, metrics label, what it needs (API key, a ready model), whether the admin
// port serves it, the error shape it answers in, the content types its body may have, its own
// checks before the body is read, and its handler. RouteTable looks a path up once, in Screen,
// and refuses what no route takes: 404, 405 with Allow, 401, 503 not ready, 415 — in the order
// a client fixes them.
//
// Patterns: literal segments, `{name}` (one non-empty segment, a parameter), `{name...}` (the
// rest of the path, one segment or more). A pattern with parameters also matches its path with
// one trailing '/'.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/http/http_handler.h"
#include "server/http_error.h"

namespace mogserve::server {

// The parameters a pattern took from a path, by name ("" when it has none of that name).
class RouteParams {
 public:
  std::string_view Get(std::string_view name) const;
  void Add(std::string_view name, std::string value) {
    values_.emplace_back(name, std::move(value));
  }

 private:
  std::vector<std::pair<std::string_view, std::string>> values_;
};

struct Route {
  enum class Errors { kMogserve, kOip };  // {"error":{code,message}} or the OIP's {"error": "..."}
  using Screener = std::function<std::optional<http::HttpResponse>(const http::HttpRequest&,
                                                                   const RouteParams&)>;
  using Handler = std::function<void(http::HttpRequest, const http::Responder&)>;
  using WebSocket = std::function<std::unique_ptr<http::WebSocketHandler>(
      const http::HttpRequest&, std::shared_ptr<http::WebSocketPeer>)>;

  std::string_view pattern;  // "/v1/detect", "/v2/models/{model}/infer", "/ui/{file...}"
  std::string_view methods;  // "GET" (HEAD too), "GET,POST"
  std::string_view label;    // the metrics label (a model name stays out); "" = the pattern
  bool api_key = false;      // needs `Authorization: Bearer <key>` when the server has a key
  bool ready = false;        // 503 not_ready until the model is loaded and warm
  bool admin = false;        // also served on --admin-port
  Errors errors = Errors::kMogserve;
  // The body's content types: a refusal (415) for the request's Content-Type, or none.
  std::optional<HttpError> (*content_type)(std::string_view content_type) = nullptr;
  Screener screen;        // the route's own checks from the header (query, caps); may be empty
  Handler handle;         // the whole request
  WebSocket websocket{};  // the upgrade, for a WebSocket route; empty = none
};

// A path's route and the parameters its pattern took.
struct RouteMatch {
  const Route* route = nullptr;
  RouteParams params;
};

class RouteTable {
 public:
  explicit RouteTable(std::vector<Route> routes);

  // The first route whose pattern matches `path`, or nullopt.
  std::optional<RouteMatch> Find(std::string_view path) const;
  const Route& at(int index) const { return routes_[index]; }
  int IndexOf(const Route& route) const { return static_cast<int>(&route - routes_.data()); }
  const std::vector<Route>& routes() const { return routes_; }

  // The checks every request passes from its header, in this order: a route (404), the method
  // (405, with Allow), the API key where needed (401), a ready model where needed (503), the
  // content type (415), the route's own. `authorized`: the request carries the server's key, or
  // the server has none. /v2 paths answer in the OIP's error shape. Sets head.route on a match,
  // refused or not.
  // `admin_port`: only the routes marked admin are served (the rest 404).
  std::optional<http::HttpResponse> Screen(http::HttpRequest& head, bool authorized, bool ready,
                                           bool admin_port = false) const;
  // The route's metrics label; "other" for -1 (folded, so a scanner cannot grow the label set).
  std::string_view Label(int index) const;

 private:
  std::vector<Route> routes_;
};

// A JSON answer (one line).
http::HttpResponse JsonResponse(const nlohmann::json& body, int status = 200);
// A refusal in a route's error shape.
http::HttpResponse RouteError(Route::Errors errors, const HttpError& error);
// 503 not_ready with Retry-After.
http::HttpResponse NotReady(Route::Errors errors = Route::Errors::kMogserve);

}  // namespace mogserve::server
