// Writes the fuzz target's seed corpus into a folder: HTTP requests carrying small crops of the
// real test photos as JPEG and PNG (raw, chunked, multipart, JSON/base64), truncated and
// bit-flipped copies, and bad requests (framing, limits, options).
// Usage: make_seed_corpus PHOTOS_DIR OUT_DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "image/decode.h"
#include "image/encode.h"
#include "image/resize.h"

namespace {

namespace fs = std::filesystem;
int written = 0;

// The split byte (see detect_request_fuzzer.cpp), then the request.
void Write(const fs::path& dir, const std::string& request) {
  std::ofstream f(dir / ("seed_" + std::to_string(written++)), std::ios::binary);
  f.put(static_cast<char>(written * 37 % 256));
  f << request;
}

// POST /v1/detect with `body` and a Content-Length.
std::string Post(const std::string& type, const std::string& body, const std::string& query = "") {
  return "POST /v1/detect" + query + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The same body in two chunks.
std::string PostChunked(const std::string& type, const std::string& body) {
  char sizes[2][32];
  const size_t half = body.size() / 2;
  std::snprintf(sizes[0], sizeof sizes[0], "%zx", half);
  std::snprintf(sizes[1], sizeof sizes[1], "%zx", body.size() - half);
  return "POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Type: " + type +
         "\r\nTransfer-Encoding: chunked\r\n\r\n" + sizes[0] + "\r\n" + body.substr(0, half) +
         "\r\n" + sizes[1] + ";ext=1\r\n" + body.substr(half) + "\r\n0\r\nTrailer: t\r\n\r\n";
}

// POST /v2/models/m/infer: a JSON body, or Triton's binary layout (JSON of `header` bytes, then
// the tensors) when header > 0.
std::string PostInfer(const std::string& body, size_t header = 0) {
  return "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
         (header > 0 ? "Inference-Header-Content-Length: " + std::to_string(header) + "\r\n"
                     : std::string()) +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string Base64(const std::string& in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<uint8_t>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

std::string Multipart(const std::string& image) {
  return "--b\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.jpg\"\r\n\r\n" +
         image + "\r\n--b\r\nContent-Disposition: form-data; name=max_faces\r\n\r\n3\r\n--b--\r\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: make_seed_corpus PHOTOS_DIR OUT_DIR\n";
    return 2;
  }
  const fs::path out = argv[2];
  fs::create_directories(out);
  for (const char* name : {"grace_hopper.jpg", "sample1.jpg", "astronaut.png"}) {
    auto bytes = mogserve::ReadFileBytes((fs::path(argv[1]) / name).string());
    if (!bytes.ok()) {
      std::cerr << bytes.status().ToString() << "\n";
      return 1;
    }
    auto decoded = mogserve::image::Decode(*bytes);
    if (!decoded.ok()) return 1;
    const auto small = mogserve::image::Resize(decoded->image, 40, 30);
    const auto jpeg = mogserve::image::EncodeJpeg(small, 80);
    const auto png = mogserve::image::EncodePng(small);
    if (!jpeg.ok() || !png.ok()) return 1;
    const std::string j(jpeg->begin(), jpeg->end()), p(png->begin(), png->end());
    Write(out, Post("image/jpeg", j, "?max_faces=2&score_threshold=0.3"));
    Write(out, Post("image/png", p, "?priority=stream&timeout_ms=100&format=modelscope"));
    Write(out, Post("application/octet-stream", j));
    Write(out, PostChunked("image/jpeg", j));
    Write(out, Post("multipart/form-data; boundary=b", Multipart(j)));
    Write(out, Post("application/json", "{\"image\":\"" + Base64(p) + "\",\"max_faces\":2}"));
    Write(out, PostInfer("{\"id\":\"1\",\"parameters\":{\"max_faces\":2},\"inputs\":[{\"name\":"
                         "\"IMAGE\",\"datatype\":\"BYTES\",\"shape\":[1],\"data\":[\"" +
                         Base64(j) + "\"]}],\"outputs\":[{\"name\":\"COUNT\"}]}"));
    const std::string element = std::string{static_cast<char>(p.size() & 0xFF),
                                            static_cast<char>((p.size() >> 8) & 0xFF),
                                            static_cast<char>((p.size() >> 16) & 0xFF),
                                            static_cast<char>((p.size() >> 24) & 0xFF)} + p;
    const std::string header = "{\"inputs\":[{\"name\":\"IMAGE\",\"datatype\":\"BYTES\",\"shape\":"
                               "[1,1],\"parameters\":{\"binary_data_size\":" +
                               std::to_string(element.size()) + "}}]}";
    Write(out, PostInfer(header + element, header.size()));
    Write(out, Post("image/jpeg", j.substr(0, j.size() / 2)));  // truncated
    Write(out, Post("image/png", p.substr(0, p.size() - 20)));
    std::string flipped = j;
    flipped[flipped.size() / 3] ^= 0x55;
    Write(out, Post("image/jpeg", flipped));
  }
  Write(out, Post("text/plain", "hello"));
  Write(out, Post("application/json", "{\"images\":[\"aGk=\",5]}"));
  Write(out, Post("application/json", std::string(64, '[')));
  Write(out, Post("multipart/form-data; boundary=b",
                  "--b\r\nContent-Disposition: form-data; name=priority\r\n\r\nsoon\r\n--b--"));
  Write(out, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\n");
  Write(out,
        "POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n");
  Write(out,
        "POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  Write(out, "POST /v1/detect HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
  Write(out, "POST /v1/detect HTTP/1.1\r\nHost: x\r\n\r\n");
  Write(out, "GET /" + std::string(2000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n");
  Write(out, "GET /%zz HTTP/1.0\r\n\r\n");
  std::cout << written << " seeds in " << out.string() << "\n";
  return 0;
}
