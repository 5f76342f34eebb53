// Writes the fuzz target's seed corpus into a folder: small crops of the real test photos as
// JPEG and PNG (raw, multipart, JSON/base64), truncated and bit-flipped copies, and bad requests.
// Usage: make_seed_corpus PHOTOS_DIR OUT_DIR
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

// Content-type byte and query byte as the fuzzer reads them (see detect_request_fuzzer.cpp).
enum : uint8_t { kJpeg = 0, kPng = 1, kOctet = 3, kMultipart = 4, kJson = 5, kText = 6 };

void Write(const fs::path& dir, uint8_t type, uint8_t query, const std::string& body) {
  std::ofstream f(dir / ("seed_" + std::to_string(written++)), std::ios::binary);
  f.put(static_cast<char>(type));
  f.put(static_cast<char>(query));
  f << body;
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

// The fuzz target's stand-in for a parsed multipart body: fields "name\n<data>" joined by
// "\n--\n".
std::string Multipart(const std::string& image) {
  return "image\n" + image + "\n--\nmax_faces\n3";
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
    Write(out, kJpeg, 0, j);
    Write(out, kPng, 1, p);
    Write(out, kOctet, 2, j);
    Write(out, kMultipart, 0, Multipart(j));
    Write(out, kJson, 1, "{\"image\":\"" + Base64(p) + "\",\"max_faces\":2}");
    Write(out, kJpeg, 0, j.substr(0, j.size() / 2));  // truncated
    Write(out, kPng, 0, p.substr(0, p.size() - 20));
    std::string flipped = j;
    flipped[flipped.size() / 3] ^= 0x55;
    Write(out, kJpeg, 0, flipped);
  }
  Write(out, kText, 0, "hello");
  Write(out, kJson, 0, "{\"images\":[\"aGk=\",5]}");
  Write(out, kMultipart, 3, "priority\nsoon\n--\nimage\nx");
  std::cout << written << " seeds in " << out.string() << "\n";
  return 0;
}
