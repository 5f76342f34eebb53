#include "server/http_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "scheduler/outcome.h"
#include "server/result_json.h"
#include "server/web_ui.h"

namespace mogserve::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kJson = "application/json";

// Start of the request this HTTP worker thread is handling (set before routing), for the
// access log's duration.
thread_local Clock::time_point request_start;

void SendError(httplib::Response& res, int status, const std::string& code,
               const std::string& message) {
  res.status = status;
  res.set_content(ToJsonLine(ErrorToJson(code, message)), kJson);
}

void SendError(httplib::Response& res, const HttpError& e) {
  SendError(res, e.status, e.code, e.message);
}

// How a pipeline outcome answers over HTTP: status and error code (done: 200, no code).
std::pair<int, std::string> HttpStatusOf(const pipeline::RequestResult& r) {
  using scheduler::Outcome;
  switch (r.outcome) {
    case Outcome::kDone:
      return {200, ""};
    case Outcome::kRejectedQueueFull:
      return {503, "queue_full"};
    case Outcome::kRejectedDeadline:
      return {504, "deadline_exceeded"};
    case Outcome::kRejectedBadInput:
      switch (r.status.code()) {
        case StatusCode::kUnsupported:
          return {415, "unsupported_image_format"};
        case StatusCode::kResourceExhausted:
          return {413, "image_too_large"};
        default:
          return {400, "invalid_image"};
      }
    case Outcome::kFailed:
      return {500, "inference_failed"};
    case Outcome::kCancelled:
      return {503, "cancelled"};
    case Outcome::kSuperseded:
      return {409, "superseded"};
  }
  return {500, "internal"};
}

// Waits for the results of one HTTP request's images.
class ResultLatch {
 public:
  explicit ResultLatch(size_t n) : results_(n), pending_(n) {}
  pipeline::ResultCallback Slot(size_t i) {
    return [this, i](pipeline::RequestResult r) {
      std::lock_guard<std::mutex> lock(mu_);
      results_[i] = std::move(r);
      if (--pending_ == 0) cv_.notify_all();
    };
  }
  std::vector<pipeline::RequestResult>& Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return pending_ == 0; });
    return results_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<pipeline::RequestResult> results_;
  size_t pending_;
};

// Compares in time independent of where the strings differ (API keys).
bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// The route label for metrics: known paths as they are, the rest folded into one value so a
// scanner cannot grow the label set without bound.
std::string RouteLabel(const std::string& path) {
  for (const char* known :
       {"/v1/detect", "/healthz", "/readyz", "/metrics", "/v1/models", "/v1/stats", "/"}) {
    if (path == known) return path;
  }
  return "other";
}

// cpp-httplib's Server::stop() closes the listening socket and also makes every worker drop
// its connection unread: connections accepted but still waiting for a free worker, and the next
// request on a keep-alive connection, would be reset instead of answered. So Stop() shuts the
// listening socket down itself: accept() fails, the accept loop ends, and the workers still
// serve every connection already accepted before Serve returns. The socket is the one given to
// the socket-options hook (cpp-httplib calls it only for the listening socket).
class DrainingServer : public httplib::Server {
 public:
  DrainingServer() {
    set_socket_options([this](socket_t sock) {
      httplib::default_socket_options(sock);
      listen_fd_.store(sock);
    });
  }
  // cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when the shared
  // library was built): a burst of more clients overflows it, and with SYN cookies the kernel
  // then resets connections whose requests were already sent. Listening again on the bound
  // socket raises the backlog (Linux caps it at net.core.somaxconn).
  bool RaiseBacklog() {
    const int fd = listen_fd_.load();
    return fd >= 0 && ::listen(fd, SOMAXCONN) == 0;
  }
  // Stops accepting connections; the ones accepted are still served. False when nothing is
  // bound (then cpp-httplib's own stop() must do).
  bool StopListening() {
    const int fd = listen_fd_.load();
    return fd >= 0 && ::shutdown(fd, SHUT_RDWR) == 0;
  }

 private:
  std::atomic<int> listen_fd_{-1};
};

}  // namespace

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)), http_(std::make_unique<DrainingServer>()) {
  const int workers = std::max(1, options_.max_connections);
  http_->new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  http_->set_payload_max_length(static_cast<size_t>(options_.limits.max_body_bytes));
  http_->set_read_timeout(options_.read_timeout_s, 0);
  http_->set_keep_alive_max_count(100);
  // Replies are written in pieces (headers, body); without TCP_NODELAY, Nagle's algorithm holds
  // the last piece until the client's delayed ACK (~40 ms on Linux loopback) — measured as a
  // 55 ms per-request overhead at concurrency 1 before this line.
  http_->set_tcp_nodelay(true);
  InstallRoutes();
}

HttpServer::~HttpServer() = default;

StatusOr<int> HttpServer::Bind() {
  int port = options_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(options_.host);
    if (port <= 0) return FailedPrecondition("cannot bind " + options_.host + " to any port");
  } else if (!http_->bind_to_port(options_.host, options_.port)) {
    return FailedPrecondition(
        "cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
        " (in use, or not an address of this machine); choose another --port or "
        "--host");
  }
  if (!static_cast<DrainingServer&>(*http_).RaiseBacklog()) {
    spdlog::warn("cannot raise the listen backlog: bursts of connections may be reset");
  }
  return port;
}

void HttpServer::Serve() {
  if (!stopped_) http_->listen_after_bind();
}

void HttpServer::Stop() {
  if (stopped_.exchange(true)) return;
  // Not http_->stop(): see DrainingServer. The accept loop then closes the socket itself.
  if (!static_cast<DrainingServer&>(*http_).StopListening()) http_->stop();
}

void HttpServer::SetPipeline(pipeline::Pipeline* pipeline, std::vector<engine::Engine*> engines,
                             ModelDescription model) {
  engines_ = std::move(engines);
  model_ = std::move(model);
  pipeline_.store(pipeline);
}

void HttpServer::InstallRoutes() {
  httplib::Server& http = *http_;

  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    request_start = Clock::now();
    // While draining, close each connection after its answer (no new request on keep-alive).
    if (stopped_) res.set_header("Connection", "close");
    if (!options_.cors_origin.empty()) {
      res.set_header("Access-Control-Allow-Origin", options_.cors_origin);
      res.set_header("Vary", "Origin");
      if (req.method == "OPTIONS") {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
        res.set_header("Access-Control-Max-Age", "600");
        res.status = 204;
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (!options_.api_key.empty() && req.path.rfind("/v1/", 0) == 0) {
      const std::string auth = req.get_header_value("Authorization");
      const std::string prefix = "Bearer ";
      const bool ok = auth.rfind(prefix, 0) == 0 &&
                      ConstantTimeEquals(auth.substr(prefix.size()), options_.api_key);
      if (!ok) {
        res.set_header("WWW-Authenticate", "Bearer");
        SendError(res, 401, "unauthorized",
                  auth.empty() ? "this server needs an API key: send 'Authorization: Bearer <key>'"
                               : "the API key is not valid");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // Counted just before the response is written (the logger runs after): a client that scrapes
  // /metrics once it has its answer sees that answer counted.
  http.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    metrics_.OnHttpResponse(RouteLabel(req.path), res.status);
  });

  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    if (options_.access_log == ServerOptions::AccessLog::kOff) return;
    const double ms =
        std::chrono::duration<double, std::milli>(Clock::now() - request_start).count();
    if (options_.access_log == ServerOptions::AccessLog::kJson) {
      spdlog::info(ToJsonLine({{"remote", req.remote_addr},
                               {"method", req.method},
                               {"path", req.path},
                               {"status", res.status},
                               {"bytes", res.body.size()},
                               {"ms", std::round(ms * 100) / 100}}));
    } else {
      spdlog::info("{} \"{} {}\" {} {}B {:.1f}ms", req.remote_addr, req.method, req.path,
                   res.status, res.body.size(), ms);
    }
  });

  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a handler already wrote its own error
    switch (res.status) {
      case 404:
        SendError(res, 404, "not_found", "no route " + req.method + " " + req.path);
        break;
      case 413:
        SendError(res, 413, "payload_too_large", "the request body is over the server's limit");
        break;
      case 400:
        SendError(res, 400, "bad_request",
                  "the request could not be read (malformed HTTP or "
                  "multipart body)");
        break;
      default:
        SendError(res, res.status, "error", "HTTP status " + std::to_string(res.status));
    }
  });

  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
        std::string what = "unknown";
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          what = ex.what();
        } catch (...) {
        }
        SendError(res, 500, "internal", "internal error: " + what);
      });

  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"status\":\"ok\"}", kJson);
  });

  http.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (stopped_) {
      res.status = 503;
      res.set_content("{\"ready\":false,\"reason\":\"shutting down\"}", kJson);
    } else if (ready()) {
      res.set_content("{\"ready\":true}", kJson);
    } else {
      res.status = 503;
      res.set_header("Retry-After", "1");
      res.set_content("{\"ready\":false,\"reason\":\"loading and warming up the model\"}", kJson);
    }
  });

  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.Render(pipeline_.load(), engines_),
                    "text/plain; version=0.0.4; charset=utf-8");
  });

  http.Get("/v1/stats", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(ToJsonLine(metrics_.Stats(pipeline_.load(), engines_)), kJson);
  });

  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready()) {
      res.set_content("{\"models\":[]}", kJson);
      return;
    }
    const engine::EngineInfo& i = model_.info;
    nlohmann::json m = {{"name", i.model},
                        {"variant", i.variant},
                        {"weights", i.weights},
                        {"device", i.device},
                        {"precision", i.precision},
                        {"threads", i.threads},
                        {"instances", model_.instances},
                        {"input_policy", model_.input_policy},
                        {"scheduler", model_.scheduler},
                        {"buffer_plan", model_.buffer_plan},
                        {"defaults",
                         {{"score_threshold", model_.defaults.score_threshold},
                          {"max_faces", model_.defaults.max_faces},
                          {"nms_iou", model_.defaults.nms_iou},
                          {"top_k", model_.defaults.top_k}}}};
    res.set_content(ToJsonLine({{"models", {m}}}), kJson);
  });

  http.Post("/v1/detect", [this](const httplib::Request& req, httplib::Response& res) {
    pipeline::Pipeline* pipeline = pipeline_.load();
    if (pipeline == nullptr) {
      res.set_header("Retry-After", "1");
      SendError(res, 503, "not_ready", "the model is still loading and warming up");
      return;
    }
    std::vector<FormPart> parts;
    for (const auto& [name, file] : req.files) {
      parts.push_back({name, file.filename, file.content});
    }
    std::multimap<std::string, std::string> query(req.params.begin(), req.params.end());
    const ParsedDetectRequest parsed = ParseDetectRequest(req.get_header_value("Content-Type"),
                                                          req.body, parts, query, options_.limits);
    if (parsed.error) {
      SendError(res, *parsed.error);
      return;
    }
    const DetectParams& p = parsed.request.params;
    DetectOptions detect = model_.defaults;
    if (p.score_threshold) detect.score_threshold = *p.score_threshold;
    if (p.max_faces) detect.max_faces = *p.max_faces;

    const std::vector<ImagePart>& images = parsed.request.images;
    ResultLatch latch(images.size());
    for (size_t i = 0; i < images.size(); ++i) {
      pipeline::SubmitRequest submit;
      submit.image.bytes.assign(images[i].bytes.begin(), images[i].bytes.end());
      submit.priority = p.priority;
      submit.client = options_.api_key.empty() ? req.remote_addr : "key";
      if (p.timeout_ms) submit.timeout = std::chrono::milliseconds(*p.timeout_ms);
      submit.detect = detect;
      pipeline->Submit(std::move(submit), latch.Slot(i));
    }
    std::vector<pipeline::RequestResult>& results = latch.Wait();

    auto body_of = [&](const pipeline::RequestResult& r) {
      if (r.outcome != scheduler::Outcome::kDone) {
        return ErrorToJson(HttpStatusOf(r).second, r.status.message());
      }
      return p.modelscope_format ? ResultToModelScopeJson(r.result)
                                 : ResultToJson(r.result, /*include_timing=*/true);
    };
    if (!parsed.request.many) {
      const auto [status, code] = HttpStatusOf(results[0]);
      res.status = status;
      if (status == 503) res.set_header("Retry-After", "1");
      res.set_content(ToJsonLine(body_of(results[0])), kJson);
      return;
    }
    // Several images: 200 with one entry per image, in order; each failed one carries its own
    // error (and "status", the code it would have had alone).
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < results.size(); ++i) {
      nlohmann::json entry = body_of(results[i]);
      entry["name"] = images[i].name;
      entry["status"] = HttpStatusOf(results[i]).first;
      list.push_back(std::move(entry));
    }
    res.set_content(ToJsonLine({{"results", list}}), kJson);
  });

  InstallWebUi(http);  // GET / and /ui/...: the web UI, embedded at build time
}

}  // namespace mogserve::server
