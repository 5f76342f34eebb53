#include "bench/serve_bench.h"

#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench/engine_bench.h"
#include "common/subprocess.h"

namespace mogserve::bench {
namespace {

using Clock = std::chrono::steady_clock;

// A `mogserve serve --port 0` child: started, its URL read from its log, stopped with SIGTERM.
class SpawnedServer {
 public:
  ~SpawnedServer() { Stop(); }

  Status Start(const std::vector<std::string>& argv) {
    SubprocessOptions options;
    options.out = Redirect::Pipe();
    options.err = Redirect::ToStdout();
    MOGSERVE_RETURN_IF_ERROR(child_.Start(argv, options));
    out_ = fdopen(child_.TakeStdout(), "r");
    // The log says "listening on http://HOST:PORT/" once the socket is bound.
    char line[4096];
    while (fgets(line, sizeof(line), out_) != nullptr) {
      std::fputs(line, stderr);
      const char* at = std::strstr(line, "listening on ");
      if (at != nullptr) {
        url_ = std::string(at + 13);
        url_ = url_.substr(0, url_.find(' '));
        if (!url_.empty() && url_.back() == '/') url_.pop_back();
        break;
      }
    }
    if (url_.empty()) return Internal("the server exited before listening");
    // Keep draining its log so it never blocks on a full pipe.
    drain_ = std::thread([this] {
      char buf[4096];
      while (fgets(buf, sizeof(buf), out_) != nullptr) {
      }
    });
    return Status::Ok();
  }

  void Stop() {
    if (child_.pid() <= 0) return;
    child_.Signal(SIGTERM);
    child_.Wait();
    if (drain_.joinable()) drain_.join();
    if (out_ != nullptr) fclose(out_);
    out_ = nullptr;
  }

  const std::string& url() const { return url_; }

 private:
  Subprocess child_;
  FILE* out_ = nullptr;
  std::string url_;
  std::thread drain_;
};

// One request's body and headers for POST `path`, made once per photo.
struct PreparedRequest {
  std::string body;
  httplib::Headers headers;
};

// The OIP binary tensor extension (Triton's layout): the JSON header, then IMAGE's one BYTES
// element as <uint32 LE length><bytes>; every output asked back binary.
PreparedRequest OipBinaryRequest(const std::string& image) {
  std::string raw(4, '\0');
  const auto n = static_cast<uint32_t>(image.size());
  for (int b = 0; b < 4; ++b) raw[b] = static_cast<char>((n >> (8 * b)) & 0xff);
  raw += image;
  nlohmann::json header = {
      {"inputs",
       {{{"name", "IMAGE"},
         {"datatype", "BYTES"},
         {"shape", {1}},
         {"parameters", {{"binary_data_size", raw.size()}}}}}},
      {"parameters", {{"binary_data_output", true}}}};
  std::string json = header.dump();
  return {json + raw, {{"Inference-Header-Content-Length", std::to_string(json.size())}}};
}

// One httplib client per thread (a client is one keep-alive connection).
class HttpTarget {
 public:
  HttpTarget(std::string url, std::string api_key, std::string path,
             std::vector<PreparedRequest> requests)
      : url_(std::move(url)),
        api_key_(std::move(api_key)),
        path_(std::move(path)),
        requests_(std::move(requests)) {}

  bool Send(uint64_t i) {
    thread_local std::unique_ptr<httplib::Client> client;
    thread_local const HttpTarget* owner = nullptr;
    if (!client || owner != this) {
      client = std::make_unique<httplib::Client>(url_);
      client->set_read_timeout(300, 0);
      client->set_keep_alive(true);
      client->set_tcp_nodelay(true);  // as a latency-minded client would
      if (!api_key_.empty()) client->set_bearer_token_auth(api_key_);
      owner = this;
    }
    const PreparedRequest& r = requests_[i % requests_.size()];
    auto res = client->Post(path_, r.headers, r.body, "application/octet-stream");
    return res && res->status == 200;
  }

 private:
  std::string url_;
  std::string api_key_;
  std::string path_;
  std::vector<PreparedRequest> requests_;
};

// What HttpTarget sends for `o.protocol`: (path, one request per photo).
StatusOr<std::pair<std::string, std::vector<PreparedRequest>>> RequestsFor(
    const ServeBenchOptions& o, const std::string& models_json) {
  std::vector<PreparedRequest> requests;
  if (o.protocol == "v1") {
    for (const std::string& image : o.images) requests.push_back({image, {}});
    return std::make_pair(std::string("/v1/detect"), std::move(requests));
  }
  if (o.protocol != "v2") {
    return InvalidArgument("--protocol: '" + o.protocol + "' is not one of v1, v2");
  }
  std::string name = o.model_name;
  if (name.empty()) {
    const auto models = nlohmann::json::parse(models_json, nullptr, false);
    if (models.is_object() && models.contains("models") && models["models"].is_array() &&
        !models["models"].empty() && models["models"][0].value("name", "") != "") {
      name = models["models"][0]["name"].get<std::string>();
    } else {
      return InvalidArgument("--protocol v2: /v1/models named no model; give --model-name");
    }
  }
  for (const std::string& image : o.images) requests.push_back(OipBinaryRequest(image));
  return std::make_pair("/v2/models/" + name + "/infer", std::move(requests));
}

Status WaitReady(const std::string& url, double seconds) {
  httplib::Client client(url);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds));
  while (Clock::now() < deadline) {
    auto res = client.Get("/readyz");
    if (res && res->status == 200) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Internal("the server at " + url + " did not become ready in time");
}

void Progress(const ServeBenchRow& r) {
  std::fprintf(
      stderr,
      "  %-10s %-6s c=%-3d offered %7.1f/s: %7.2f img/s, p50 %8.1f ms, p99 %8.1f ms, failed %lld\n",
      r.target.c_str(), r.mode.c_str(), r.concurrency, r.offered_per_s, r.result.throughput_per_s,
      r.result.latency.median_ms, r.result.latency.p99_ms, static_cast<long long>(r.result.failed));
}

// Closed loop at every concurrency, then open loop at fractions of the best throughput.
std::vector<ServeBenchRow> Measure(const std::string& target, const ServeBenchOptions& o,
                                   const SendFunction& send) {
  std::vector<ServeBenchRow> rows;
  double best = 0;
  for (int c : o.concurrency) {
    ServeBenchRow r{target, "closed", c, 0, RunClosedLoop(c, o.seconds, o.warmup_seconds, send)};
    best = std::max(best, r.result.throughput_per_s);
    Progress(r);
    rows.push_back(r);
  }
  for (double f : o.load_fractions) {
    if (best <= 0) break;
    const int max_in_flight =
        std::max(4, *std::max_element(o.concurrency.begin(), o.concurrency.end()));
    ServeBenchRow r{target, "open", 0, f * best,
                    RunOpenLoop(f * best, o.seconds, max_in_flight, send)};
    Progress(r);
    rows.push_back(r);
  }
  return rows;
}

double Best(const std::vector<ServeBenchRow>& rows, const std::string& target) {
  double best = 0;
  for (const ServeBenchRow& r : rows) {
    if (r.target == target && r.mode == "closed") best = std::max(best, r.result.throughput_per_s);
  }
  return best;
}

double MedianAtC1(const std::vector<ServeBenchRow>& rows, const std::string& target) {
  for (const ServeBenchRow& r : rows) {
    if (r.target == target && r.mode == "closed" && r.concurrency == 1) {
      return r.result.latency.median_ms;
    }
  }
  return 0;
}

}  // namespace

StatusOr<ServeBenchReport> RunServeBench(const ServeBenchOptions& o) {
  if (o.images.empty()) return InvalidArgument("no images to send");
  if (o.concurrency.empty()) return InvalidArgument("no concurrency levels");
  ServeBenchReport report;
  report.machine = DescribeMachine();
  {
    SpawnedServer spawned;
    std::string url = o.url;
    if (url.empty()) {
      MOGSERVE_RETURN_IF_ERROR(spawned.Start(o.server_command));
      url = spawned.url();
    }
    MOGSERVE_RETURN_IF_ERROR(WaitReady(url, 600));
    httplib::Client client(url);
    if (!o.api_key.empty()) client.set_bearer_token_auth(o.api_key);
    if (auto models = client.Get("/v1/models"); models && models->status == 200) {
      report.server = models->body;
    }
    MOGSERVE_ASSIGN_OR_RETURN(auto requests, RequestsFor(o, report.server));
    std::fprintf(stderr, "HTTP against %s%s\n", url.c_str(), requests.first.c_str());
    HttpTarget http(url, o.api_key, std::move(requests.first), std::move(requests.second));
    auto rows = Measure("http", o, [&](uint64_t i) { return http.Send(i); });
    report.rows.insert(report.rows.end(), rows.begin(), rows.end());
  }  // the spawned server stops here
  if (o.in_process) {
    MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<DetectTarget> target, o.in_process());
    std::fprintf(stderr, "in-process: %s\n", target->Describe().c_str());
    auto rows = Measure("in-process", o,
                        [&](uint64_t i) { return target->Detect(o.images[i % o.images.size()]); });
    report.rows.insert(report.rows.end(), rows.begin(), rows.end());
  }
  report.http_saturation_per_s = Best(report.rows, "http");
  report.in_process_saturation_per_s = Best(report.rows, "in-process");
  if (report.in_process_saturation_per_s > 0) {
    report.saturation_ratio = report.http_saturation_per_s / report.in_process_saturation_per_s;
    report.http_overhead_ms_at_c1 =
        MedianAtC1(report.rows, "http") - MedianAtC1(report.rows, "in-process");
  }
  return report;
}

std::vector<ResultTable> ServeBenchTables(const ServeBenchReport& r) {
  ResultTable t;
  t.AddField({"machine", "Machine", r.machine})
      .AddField({"server", "Server", r.server})
      .AddField({"http_saturation_per_s", "HTTP saturation, img/s", r.http_saturation_per_s, 2})
      .AddField({"in_process_saturation_per_s", "In-process saturation, img/s",
                 r.in_process_saturation_per_s, 2})
      .AddField({"saturation_ratio", "Ratio", r.saturation_ratio, 3})
      .AddField({"http_overhead_ms_at_c1", "HTTP overhead at concurrency 1, ms (median)",
                 r.http_overhead_ms_at_c1, 2});
  const unsigned data = kInJson | kInCsv;
  t.AddColumn({"target"})
      .AddColumn({"mode", "", 0, 1, "", false, data})
      .AddColumn({"load", "load", 0, 1, "", false, kInMarkdown})
      .AddColumn({"concurrency", "", 0, 1, "", false, data})
      .AddColumn({"offered_per_s", "offered img/s", 2, 1, "", true})
      .AddColumn({"seconds", "", 2, 1, "", false, data})
      .AddColumn({"sent", "", 0, 1, "", false, data})
      .AddColumn({"ok", "", 0, 1, "", false, data})
      .AddColumn({"throughput_per_s", "img/s", 2})
      .AddColumn({"latency_ms.mean", "", 1, 1, "", false, data})
      .AddColumn({"latency_ms.p50", "p50 ms"})
      .AddColumn({"latency_ms.p95", "p95 ms"})
      .AddColumn({"latency_ms.p99", "p99 ms"})
      .AddColumn({"latency_ms.max", "", 1, 1, "", false, data})
      .AddColumn({"latency_ms.stddev", "", 1, 1, "", false, data})
      .AddColumn({"failed"})
      .AddColumn({"clients_served", "", 0, 1, "", false, data})
      .AddColumn({"served", "clients served", 0, 1, "", false, kInMarkdown});
  for (const ServeBenchRow& row : r.rows) {
    const bool closed = row.mode == "closed";
    const LatencyStats& l = row.result.latency;
    t.AddRow({row.target, row.mode,
              closed ? "closed, c=" + std::to_string(row.concurrency) : "open (Poisson)",
              int64_t{row.concurrency}, row.offered_per_s, row.result.seconds,
              int64_t{row.result.sent}, int64_t{row.result.ok}, row.result.throughput_per_s,
              l.mean_ms, l.median_ms, l.p95_ms, l.p99_ms, l.max_ms, l.stddev_ms,
              int64_t{row.result.failed}, int64_t{row.result.clients_served},
              closed ? Cell{std::to_string(row.result.clients_served) + "/" +
                            std::to_string(row.concurrency)}
                     : Cell{}});
  }
  return {t};
}

}  // namespace mogserve::bench
