#include "server/routes.h"

#include "json/result_json.h"
#include "server/oip.h"

namespace mogserve::server {
namespace {

using http::HttpRequest;
using http::HttpResponse;

// The path's segments after the leading '/': "/v2/models/m" → {"v2", "models", "m"}.
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (true) {
    const size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) return out;
    path.remove_prefix(slash + 1);
  }
}

bool Matches(std::string_view pattern, std::string_view path, RouteParams* params) {
  if (pattern.find('{') == std::string_view::npos) return pattern == path;
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const std::vector<std::string_view> want = Segments(pattern);
  const std::vector<std::string_view> got = Segments(path);
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string_view w = want[i];
    const bool param = w.size() > 2 && w.front() == '{' && w.back() == '}';
    if (param && w.ends_with("...}")) {  // the rest of the path, not empty
      if (i >= got.size() || got[i].empty()) return false;
      const size_t start = got[i].data() - path.data();
      params->Add(w.substr(1, w.size() - 5), std::string(path.substr(start)));
      return true;
    }
    if (i >= got.size()) return false;
    if (!param) {
      if (w != got[i]) return false;
    } else if (got[i].empty()) {
      return false;
    } else {
      params->Add(w.substr(1, w.size() - 2), std::string(got[i]));
    }
  }
  return want.size() == got.size();
}

// Calls `f` with each of a route's methods ("GET,POST" → "GET", "POST").
template <typename F>
void ForEachMethod(std::string_view methods, F f) {
  while (!methods.empty()) {
    const size_t comma = methods.find(',');
    f(methods.substr(0, comma));
    methods = comma == std::string_view::npos ? "" : methods.substr(comma + 1);
  }
}

bool MethodAllowed(const Route& route, std::string_view method) {
  bool allowed = false;
  ForEachMethod(route.methods, [&](std::string_view m) {
    allowed = allowed || method == m || (method == "HEAD" && m == "GET");
  });
  return allowed;
}

// The Allow header of a route: its methods, and HEAD with GET.
std::string AllowedMethods(const Route& route) {
  std::string allow;
  ForEachMethod(route.methods, [&](std::string_view m) {
    allow += (allow.empty() ? "" : ", ") + std::string(m) + (m == "GET" ? ", HEAD" : "");
  });
  return allow;
}

bool IsOipPath(std::string_view path) {
  return path == "/v2" || path.rfind("/v2/", 0) == 0;
}

}  // namespace

std::string_view RouteParams::Get(std::string_view name) const {
  for (const auto& [n, v] : values_) {
    if (n == name) return v;
  }
  return {};
}

RouteTable::RouteTable(std::vector<Route> routes) : routes_(std::move(routes)) {}

std::optional<RouteMatch> RouteTable::Find(std::string_view path) const {
  for (const Route& route : routes_) {
    RouteMatch match{&route, {}};
    if (Matches(route.pattern, path, &match.params)) return match;
  }
  return std::nullopt;
}

HttpResponse JsonResponse(const nlohmann::json& body, int status) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = ToJsonLine(body);
  return r;
}

HttpResponse RouteError(Route::Errors errors, const HttpError& error) {
  return errors == Route::Errors::kOip ? oip::ErrorResponse(error)
                                       : http::JsonError(error.status, error.code, error.message);
}

HttpResponse NotReady(Route::Errors errors) {
  if (errors == Route::Errors::kOip) {
    return oip::ErrorResponse({503, "not_ready", "the model is still loading"});
  }
  HttpResponse r = http::JsonError(503, "not_ready", "the model is still loading and warming up");
  r.SetHeader("Retry-After", "1");
  return r;
}

std::string_view RouteTable::Label(int index) const {
  if (index < 0) return "other";
  const Route& route = routes_[index];
  return route.label.empty() ? route.pattern : route.label;
}

std::optional<HttpResponse> RouteTable::Screen(HttpRequest& head, bool authorized, bool ready,
                                               bool admin_port) const {
  const std::optional<RouteMatch> match = Find(head.path);
  if (admin_port && !(match && match->route->admin)) {
    std::string served;
    for (const Route& r : routes_) {
      if (r.admin) served += (served.empty() ? "" : ", ") + std::string(r.pattern);
    }
    return http::JsonError(404, "not_found", "the admin port serves " + served + " only");
  }
  if (!match) {
    return RouteError(IsOipPath(head.path) ? Route::Errors::kOip : Route::Errors::kMogserve,
                      {404, "not_found", "no route " + head.method + " " + head.path});
  }
  const Route& route = *match->route;
  head.route = IndexOf(route);  // refusals too: the metrics label needs no second lookup
  auto refuse = [&](int status, const char* code, std::string message) {
    return RouteError(route.errors, {status, code, std::move(message)});
  };
  if (!MethodAllowed(route, head.method)) {
    const std::string allow = AllowedMethods(route);
    HttpResponse r = refuse(405, "method_not_allowed",
                            head.path + " answers " +
                                (route.methods == "GET" ? "GET and HEAD" : allow) + ", not " +
                                head.method);
    r.SetHeader("Allow", allow);
    return r;
  }
  if (route.api_key && !authorized) {
    HttpResponse r =
        refuse(401, "unauthorized",
               head.HasHeader("Authorization")
                   ? "the API key is not valid (send 'Authorization: Bearer <key>')"
                   : "this server needs an API key: send 'Authorization: Bearer <key>'");
    r.SetHeader("WWW-Authenticate", "Bearer");
    return r;
  }
  if (route.ready && !ready) return NotReady(route.errors);
  if (route.content_type != nullptr) {
    if (auto e = route.content_type(head.Header("Content-Type"))) {
      return RouteError(route.errors, *e);
    }
  }
  if (route.screen) return route.screen(head, match->params);
  return std::nullopt;
}

}  // namespace mogserve::server
