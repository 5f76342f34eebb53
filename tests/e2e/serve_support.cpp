#include "serve_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "image/decode.h"

namespace mogserve::e2e {
namespace {

using nlohmann::json;

struct Box {
  double x1, y1, x2, y2;
};

double Iou(const Box& a, const Box& b) {
  const double w = std::max(0.0, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const double h = std::max(0.0, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const double inter = w * h;
  const double uni = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

struct PhotoTruth {
  std::string bytes;
  int width = 0;
  int height = 0;
  std::vector<Box> faces;
};

// tests/data/ground_truth.json and each photo's bytes and size, loaded once.
const std::map<std::string, PhotoTruth>& Photos() {
  static const std::map<std::string, PhotoTruth> photos = [] {
    std::map<std::string, PhotoTruth> out;
    const json gt = json::parse(ReadText(TestDataDir() / "ground_truth.json"));
    for (const auto& [name, boxes] : gt.items()) {
      if (name.front() == '_') continue;
      PhotoTruth& p = out[name];
      const std::vector<uint8_t> bytes = ReadBytes(PhotoPath(name));
      p.bytes.assign(bytes.begin(), bytes.end());
      auto decoded = image::Decode(bytes);
      if (decoded.ok()) {
        p.width = decoded->width;
        p.height = decoded->height;
      }
      for (const json& b : boxes) {
        p.faces.push_back({b.at(0).get<double>(), b.at(1).get<double>(), b.at(2).get<double>(),
                           b.at(3).get<double>()});
      }
    }
    return out;
  }();
  return photos;
}

const PhotoTruth& Photo(const std::string& name) {
  static const PhotoTruth none;
  const auto it = Photos().find(name);
  return it == Photos().end() ? none : it->second;
}

}  // namespace

std::unique_ptr<ServeProcess> StartSharedServer(const std::vector<std::string>& args) {
  auto server = std::make_unique<ServeProcess>();
  if (!server->Start(args) || !server->WaitReady()) return nullptr;
  return server;
}

void StopSharedServer(std::unique_ptr<ServeProcess>& server) {
  if (server == nullptr) return;
  const ProcessResult r = server->Stop();
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  server.reset();
}

bool ServeProcess::Start(const std::vector<std::string>& args, const ProcessOptions& options,
                         bool add_port_flag) {
  std::vector<std::string> full = {"serve", "--model-dir", TestModelDir()};
  if (add_port_flag) full.insert(full.end(), {"--port", "0"});
  full.insert(full.end(), args.begin(), args.end());
  if (!child_.Start(MogserveBinary(), full, options)) {
    ADD_FAILURE() << "cannot start mogserve serve: " << child_.spawn_error();
    return false;
  }
  static const std::regex listening(R"(listening on http://[^ /]+:([0-9]+)/)");
  const auto line = child_.WaitForLine(
      [](const std::string& l) { return std::regex_search(l, listening); }, kServerStartTimeout);
  std::smatch m;
  if (!line || !std::regex_search(*line, m, listening)) {
    ADD_FAILURE() << "mogserve serve did not print 'listening on':\n" << Log();
    return false;
  }
  port_ = std::stoi(m[1].str());
  return true;
}

bool ServeProcess::WaitReady(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto client = NewClient();
  while (std::chrono::steady_clock::now() < deadline) {
    auto res = client->Get("/readyz");
    if (res && res->status == 200) return true;
    if (!child_.Running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition
  }
  ADD_FAILURE() << "the server did not become ready:\n" << Log();
  return false;
}

ProcessResult ServeProcess::Stop(std::chrono::milliseconds timeout) {
  child_.Signal(SIGTERM);
  return child_.Wait(timeout);
}

std::unique_ptr<httplib::Client> ServeProcess::NewClient() const {
  auto client = std::make_unique<httplib::Client>("127.0.0.1", port_);
  client->set_connection_timeout(kClientTimeoutS, 0);
  client->set_read_timeout(kClientTimeoutS, 0);
  client->set_write_timeout(kClientTimeoutS, 0);
  return client;
}

std::string ServeProcess::Log(size_t max_lines) const {
  const std::vector<std::string> lines = child_.Lines();
  std::string out;
  for (size_t i = lines.size() > max_lines ? lines.size() - max_lines : 0; i < lines.size(); ++i) {
    out += lines[i] + "\n";
  }
  return out;
}

const std::string& PhotoBytes(const std::string& name) {
  const PhotoTruth& p = Photo(name);
  EXPECT_FALSE(p.bytes.empty()) << "no photo " << name;
  return p.bytes;
}

size_t TrueFaceCount(const std::string& photo) {
  return Photo(photo).faces.size();
}

std::string CheckFaces(const json& result, const std::string& photo) {
  const PhotoTruth& truth = Photo(photo);
  if (truth.bytes.empty()) return "no ground truth for " + photo;
  if (!result.is_object() || !result.contains("faces") || !result["faces"].is_array()) {
    return photo + ": not a detection result: " + result.dump();
  }
  if (result.value("width", -1) != truth.width || result.value("height", -1) != truth.height) {
    return photo + ": size " + std::to_string(result.value("width", -1)) + "x" +
           std::to_string(result.value("height", -1)) + ", expected " +
           std::to_string(truth.width) + "x" + std::to_string(truth.height);
  }
  const json& faces = result["faces"];
  if (faces.size() != truth.faces.size()) {
    return photo + ": " + std::to_string(faces.size()) + " faces, expected " +
           std::to_string(truth.faces.size()) + ": " + result.dump();
  }
  for (const Box& t : truth.faces) {
    double best = 0;
    for (const json& f : faces) {
      const json& b = f.at("box");
      best = std::max(best, Iou(t, {b.at(0).get<double>(), b.at(1).get<double>(),
                                    b.at(2).get<double>(), b.at(3).get<double>()}));
    }
    if (best < 0.5) {
      std::ostringstream s;
      s << photo << ": true face [" << t.x1 << "," << t.y1 << "," << t.x2 << "," << t.y2
        << "] not found (best IoU " << best << "): " << result.dump();
      return s.str();
    }
  }
  return "";
}

std::string CheckError(const std::string& body, const std::string& code,
                       const std::vector<std::string>& message_parts) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object() ||
      !j["error"].contains("code") || !j["error"].contains("message")) {
    return "not {\"error\":{\"code\",\"message\"}}: " + body;
  }
  if (j["error"]["code"] != code) return "code is not '" + code + "': " + body;
  const std::string message = j["error"]["message"].get<std::string>();
  for (const std::string& part : message_parts) {
    if (message.find(part) == std::string::npos) {
      return "message does not say '" + part + "': " + body;
    }
  }
  return "";
}

std::map<std::string, double> ParseMetrics(const std::string& text) {
  std::map<std::string, double> out;
  for (const std::string& line : SplitLines(text)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

double MetricValue(const std::map<std::string, double>& metrics, const std::string& sample) {
  const auto it = metrics.find(sample);
  return it == metrics.end() ? 0.0 : it->second;
}

std::string Base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out.push_back(kAlphabet[(v >> shift) & 63]);
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

}  // namespace mogserve::e2e
