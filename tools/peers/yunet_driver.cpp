// yunet_driver: libfacedetection's YuNet (facedetect_cnn) run over a list of images, as a
// benchmark peer for `mogserve detect`. Not part of mogserve's build: see README.md beside it and
// build_yunet_driver.sh, which builds libfacedetection and then this file.
//
//   yunet_driver [--jpeg-min-long N] [--threshold T] --out FILE IMAGE...
//
// Each picture is decoded the way mogserve's decoder does it: JPEGs through TurboJPEG with DCT
// scaling by the strongest of 1/2, 1/4, 1/8 that keeps the longer side >= N (0: full size),
// PNGs through libpng's simplified API (alpha composited over white, no scaling), both turned
// upright by their EXIF orientation. The pixels go to facedetect_cnn as BGR, with OpenMP's
// default thread count (OMP_NUM_THREADS). One JSON line per image goes to FILE (written to
// FILE.tmp, renamed when complete), coordinates in pixels of the full-size upright picture:
//   {"file":..., "width":W, "height":H, "faces":[{"box":[x1,y1,x2,y2], "score":s,
//    "landmarks":[[x,y] x5]}]}
// At the end stdout gets "-> N img/s": images / wall time from the first file read to the
// rename of FILE. A file that cannot be read or decoded ends the run: message on stderr, no
// FILE, exit status 1 (2 for bad arguments).
#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "facedetectcnn.h"

namespace {

constexpr const char* kUsage =
    "usage: yunet_driver [--jpeg-min-long N] [--threshold T] --out FILE IMAGE...\n"
    "  --jpeg-min-long N  decode JPEGs with DCT scaling (1/2, 1/4 or 1/8) to the smallest size\n"
    "                     whose longer side is still >= N pixels; 0 decodes at full size\n"
    "                     (default 512)\n"
    "  --threshold T      keep faces whose score (0..1) is >= T (default 0.7)\n"
    "  --out FILE         JSON lines, one per image (written to FILE.tmp, then renamed)\n"
    "JPEG and PNG images are accepted.\n";

struct Options {
  int jpeg_min_long = 512;
  double threshold = 0.7;
  std::string out;
  std::vector<std::string> images;
};

// An error about one input file; the message names the file.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A decoded picture, upright, as BGR rows without padding, plus the size of the upright
// picture at full resolution (which differs from width/height when DCT scaling was used).
struct Picture {
  int width = 0;
  int height = 0;
  std::vector<unsigned char> bgr;
  int full_width = 0;
  int full_height = 0;
};

[[noreturn]] void UsageError(const std::string& message) {
  std::fprintf(stderr, "yunet_driver: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

bool ParseInt(const std::string& text, int* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > 1000000) return false;
  *value = static_cast<int>(v);
  return true;
}

bool ParseFraction(const std::string& text, double* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !(v >= 0.0 && v <= 1.0)) return false;
  *value = v;
  return true;
}

Options ParseArgs(int argc, char** argv) {
  Options options;
  bool only_files = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (only_files || arg.empty() || arg[0] != '-' || arg == "-") {
      options.images.push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_files = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    // --name VALUE or --name=VALUE
    std::string name = arg, value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (name == "--jpeg-min-long" || name == "--threshold" || name == "--out") {
      if (i + 1 >= argc) UsageError(name + " needs a value");
      value = argv[++i];
    }
    if (name == "--jpeg-min-long") {
      if (!ParseInt(value, &options.jpeg_min_long))
        UsageError("--jpeg-min-long: expected a whole number of pixels >= 0, got '" + value + "'");
    } else if (name == "--threshold") {
      if (!ParseFraction(value, &options.threshold))
        UsageError("--threshold: expected a number from 0 to 1, got '" + value + "'");
    } else if (name == "--out") {
      if (value.empty()) UsageError("--out: expected a file name");
      options.out = value;
    } else {
      UsageError("unknown option '" + arg + "'");
    }
  }
  if (options.out.empty()) UsageError("--out FILE is required");
  if (options.images.empty()) UsageError("no images given");
  return options;
}

std::vector<unsigned char> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open: " + std::strerror(errno));
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError(path + ": read error");
  if (bytes.empty()) throw InputError(path + ": empty file");
  return bytes;
}

// ---- EXIF orientation ----------------------------------------------------------------------

// Orientation (1..8) from a TIFF block (optionally preceded by "Exif\0\0"); 1 when the block is
// absent, malformed, or holds a value outside 1..8.
int TiffOrientation(const unsigned char* p, size_t n) {
  if (n >= 6 && std::memcmp(p, "Exif\0\0", 6) == 0) {
    p += 6;
    n -= 6;
  }
  if (n < 8) return 1;
  bool big_endian;
  if (p[0] == 'M' && p[1] == 'M') {
    big_endian = true;
  } else if (p[0] == 'I' && p[1] == 'I') {
    big_endian = false;
  } else {
    return 1;
  }
  auto u16 = [&](size_t at) -> uint32_t {
    return big_endian ? (uint32_t{p[at]} << 8) | p[at + 1] : (uint32_t{p[at + 1]} << 8) | p[at];
  };
  auto u32 = [&](size_t at) -> uint32_t {
    return big_endian ? (u16(at) << 16) | u16(at + 2) : (u16(at + 2) << 16) | u16(at);
  };
  if (u16(2) != 42) return 1;
  const size_t ifd = u32(4);
  if (ifd > n || n - ifd < 2) return 1;
  const size_t entries = u16(ifd);
  for (size_t e = 0; e < entries; ++e) {
    const size_t at = ifd + 2 + 12 * e;
    if (at + 12 > n) break;
    if (u16(at) != 0x0112) continue;
    // Type SHORT (3), count 1: the value sits in the first two bytes of the value field.
    if (u16(at + 2) != 3 || u32(at + 4) != 1) return 1;
    const uint32_t v = u16(at + 8);
    return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
  }
  return 1;
}

// Orientation from the APP1 Exif segment of a JPEG (searched up to the first scan).
int JpegOrientation(const std::vector<unsigned char>& b) {
  size_t i = 2;  // after SOI
  while (i + 4 <= b.size()) {
    if (b[i] != 0xFF) return 1;
    const unsigned char marker = b[i + 1];
    if (marker == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA) return 1;  // EOI or SOS: no Exif before the data
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {  // markers without a length
      i += 2;
      continue;
    }
    const size_t length = (size_t{b[i + 2]} << 8) | b[i + 3];
    if (length < 2 || i + 2 + length > b.size()) return 1;
    if (marker == 0xE1 && length >= 8 && std::memcmp(&b[i + 4], "Exif\0\0", 6) == 0) {
      return TiffOrientation(&b[i + 4], length - 2);
    }
    i += 2 + length;
  }
  return 1;
}

// Orientation from a PNG eXIf chunk (searched up to the first IDAT).
int PngOrientation(const std::vector<unsigned char>& b) {
  size_t i = 8;  // after the signature
  while (i + 12 <= b.size()) {
    const size_t length =
        (size_t{b[i]} << 24) | (size_t{b[i + 1]} << 16) | (size_t{b[i + 2]} << 8) | b[i + 3];
    if (length > b.size() - i - 12) return 1;
    const unsigned char* type = &b[i + 4];
    if (std::memcmp(type, "IDAT", 4) == 0 || std::memcmp(type, "IEND", 4) == 0) return 1;
    if (std::memcmp(type, "eXIf", 4) == 0) return TiffOrientation(&b[i + 8], length);
    i += 12 + length;
  }
  return 1;
}

// Turns a picture upright: orientation 2..8 as defined by EXIF (5..8 swap width and height).
void ApplyOrientation(Picture& pic, int orientation) {
  if (orientation <= 1 || orientation > 8) return;
  const int w = pic.width, h = pic.height;
  const bool swap = orientation >= 5;
  const int ow = swap ? h : w, oh = swap ? w : h;
  std::vector<unsigned char> out(pic.bgr.size());
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      int dx = x, dy = y;
      // clang-format off
      switch (orientation) {
        case 2: dx = w - 1 - x; break;                       // mirrored left-right
        case 3: dx = w - 1 - x; dy = h - 1 - y; break;       // turned 180°
        case 4: dy = h - 1 - y; break;                       // mirrored top-bottom
        case 5: dx = y; dy = x; break;                       // transposed
        case 6: dx = h - 1 - y; dy = x; break;               // needs 90° clockwise
        case 7: dx = h - 1 - y; dy = w - 1 - x; break;       // transversed
        case 8: dx = y; dy = w - 1 - x; break;               // needs 90° counter-clockwise
      }
      // clang-format on
      const unsigned char* s = &pic.bgr[(static_cast<size_t>(y) * w + x) * 3];
      unsigned char* d = &out[(static_cast<size_t>(dy) * ow + dx) * 3];
      d[0] = s[0];
      d[1] = s[1];
      d[2] = s[2];
    }
  }
  pic.bgr.swap(out);
  pic.width = ow;
  pic.height = oh;
  if (swap) std::swap(pic.full_width, pic.full_height);
}

// ---- JPEG ------------------------------------------------------------------------------------

// The strongest of 1/2, 1/4, 1/8 whose scaled longer side is still >= min_long (1/1 when none
// is, or when min_long is 0): the same choice as mogserve's JPEG decoder, which uses only these
// factors because libjpeg-turbo's scaled IDCT is fast and exact in size for them.
tjscalingfactor ChooseScale(int width, int height, int min_long) {
  tjscalingfactor chosen = {1, 1};
  if (min_long <= 0) return chosen;
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  if (factors == nullptr) return chosen;
  const int long_side = std::max(width, height);
  for (int i = 0; i < count; ++i) {
    const tjscalingfactor f = factors[i];
    const bool usable = f.num == 1 && (f.denom == 2 || f.denom == 4 || f.denom == 8);
    if (usable && TJSCALED(long_side, f) >= min_long && f.denom > chosen.denom) chosen = f;
  }
  return chosen;
}

Picture DecodeJpeg(const std::string& path, const std::vector<unsigned char>& bytes, int min_long) {
  struct Handle {
    tjhandle h = tjInitDecompress();
    ~Handle() {
      if (h != nullptr) tjDestroy(h);
    }
  } handle;
  if (handle.h == nullptr)
    throw std::runtime_error(std::string("tjInitDecompress: ") + tjGetErrorStr2(nullptr));
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.h, bytes.data(), static_cast<unsigned long>(bytes.size()), &width,
                          &height, &subsamp, &colorspace) != 0) {
    throw InputError(path + ": not a readable JPEG (" + tjGetErrorStr2(handle.h) + ")");
  }
  if (width <= 0 || height <= 0) throw InputError(path + ": JPEG has no pixels");
  const tjscalingfactor scale = ChooseScale(width, height, min_long);
  Picture pic;
  pic.full_width = width;
  pic.full_height = height;
  pic.width = TJSCALED(width, scale);
  pic.height = TJSCALED(height, scale);
  const size_t pixels = static_cast<size_t>(pic.width) * pic.height;
  pic.bgr.resize(pixels * 3);
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  std::vector<unsigned char> cmyk_pixels;
  if (cmyk) cmyk_pixels.resize(pixels * 4);
  unsigned char* dst = cmyk ? cmyk_pixels.data() : pic.bgr.data();
  const int rc = tjDecompress2(handle.h, bytes.data(), static_cast<unsigned long>(bytes.size()),
                               dst, pic.width, 0, pic.height, cmyk ? TJPF_CMYK : TJPF_BGR, 0);
  if (rc != 0) {
    const std::string message = tjGetErrorStr2(handle.h);
    // Warnings (e.g. extraneous bytes) are accepted, except a truncated stream, which
    // libjpeg-turbo would fill with grey.
    const bool truncated = message.find("remature end") != std::string::npos;
    if (tjGetErrorCode(handle.h) != TJERR_WARNING || truncated) {
      throw InputError(path + ": JPEG decoding failed (" + message + ")");
    }
  }
  if (cmyk) {
    // Adobe's inverted CMYK as libjpeg delivers it: 255 = no ink, so channel * K / 255.
    for (size_t i = 0; i < pixels; ++i) {
      const unsigned char* s = &cmyk_pixels[i * 4];
      const unsigned k = s[3];
      unsigned char* d = &pic.bgr[i * 3];
      d[0] = static_cast<unsigned char>((s[2] * k + 127) / 255);  // yellow -> blue
      d[1] = static_cast<unsigned char>((s[1] * k + 127) / 255);
      d[2] = static_cast<unsigned char>((s[0] * k + 127) / 255);  // cyan -> red
    }
  }
  ApplyOrientation(pic, JpegOrientation(bytes));
  return pic;
}

// ---- PNG -------------------------------------------------------------------------------------

Picture DecodePng(const std::string& path, const std::vector<unsigned char>& bytes) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  struct Guard {
    png_image* p;
    ~Guard() { png_image_free(p); }
  } guard{&png};
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size())) {
    throw InputError(path + ": not a readable PNG (" + png.message + ")");
  }
  if (png.width == 0 || png.height == 0 || png.width > 65535 || png.height > 65535) {
    throw InputError(path + ": PNG size " + std::to_string(png.width) + "x" +
                     std::to_string(png.height) + " is not supported");
  }
  const bool alpha = (png.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  png.format = alpha ? PNG_FORMAT_BGRA : PNG_FORMAT_BGR;
  // 16-bit samples without gAMA are sRGB in practice, like 8-bit ones (as mogserve reads them).
  png.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  Picture pic;
  pic.width = pic.full_width = static_cast<int>(png.width);
  pic.height = pic.full_height = static_cast<int>(png.height);
  const size_t pixels = static_cast<size_t>(pic.width) * pic.height;
  std::vector<unsigned char> decoded(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, decoded.data(), 0, nullptr)) {
    throw InputError(path + ": PNG decoding failed (" + png.message + ")");
  }
  if (alpha) {
    // Straight alpha over a white background, rounded.
    pic.bgr.resize(pixels * 3);
    for (size_t i = 0; i < pixels; ++i) {
      const unsigned a = decoded[i * 4 + 3];
      for (int c = 0; c < 3; ++c) {
        pic.bgr[i * 3 + c] =
            static_cast<unsigned char>((decoded[i * 4 + c] * a + 255 * (255 - a) + 127) / 255);
      }
    }
  } else {
    pic.bgr.swap(decoded);
  }
  ApplyOrientation(pic, PngOrientation(bytes));
  return pic;
}

Picture Decode(const std::string& path, const std::vector<unsigned char>& bytes, int min_long) {
  static const unsigned char kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    return DecodeJpeg(path, bytes, min_long);
  }
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPngSignature, 8) == 0) {
    return DecodePng(path, bytes);
  }
  throw InputError(path + ": not a JPEG or PNG file (other formats are not supported)");
}

// ---- output ----------------------------------------------------------------------------------

void AppendJsonString(std::string& out, const std::string& s) {
  out += '"';
  for (const unsigned char c : s) {
    // clang-format off
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
    // clang-format on
  }
  out += '"';
}

// A number with at most `decimals` decimals, without trailing zeros (JSON-valid: no NaN/inf).
void AppendNumber(std::string& out, double v, int decimals) {
  if (!std::isfinite(v)) v = 0.0;
  const double scale = std::pow(10.0, decimals);
  v = std::round(v * scale) / scale;
  if (v == 0.0) v = 0.0;  // no "-0"
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  std::string text = buf;
  if (text.find('.') != std::string::npos) {
    while (!text.empty() && text.back() == '0') text.pop_back();
    if (!text.empty() && text.back() == '.') text.pop_back();
  }
  out += text;
}

struct Face {
  double score;      // 0..1
  double box[4];     // x1, y1, x2, y2 in full-size pixels
  double marks[10];  // x, y of 5 landmarks in full-size pixels
};

// Runs YuNet on one picture; faces with score >= threshold, mapped to full-size pixels.
std::vector<Face> Detect(Picture& pic, double threshold, std::vector<unsigned char>& result) {
  int* count = facedetect_cnn(result.data(), pic.bgr.data(), pic.width, pic.height, pic.width * 3);
  std::vector<Face> faces;
  if (count == nullptr) throw std::runtime_error("facedetect_cnn returned no result");
  const double sx = static_cast<double>(pic.full_width) / pic.width;
  const double sy = static_cast<double>(pic.full_height) / pic.height;
  const int n = std::min(*count, FACEDETECTION_RESULT_MAX_FACES);
  for (int i = 0; i < n; ++i) {
    // Per face, FACEDETECTION_RESULT_STRIDE_SHORTS shorts after the int count: confidence as a
    // whole percentage (score * 100, truncated), x, y, w, h, then 5 (x, y) landmarks.
    const short* p = reinterpret_cast<const short*>(result.data() + sizeof(int)) +
                     static_cast<size_t>(FACEDETECTION_RESULT_STRIDE_SHORTS) * i;
    const int percent = p[0];
    if (percent < threshold * 100.0 - 1e-9) continue;
    Face f;
    f.score = percent / 100.0;
    const double x = p[1], y = p[2], w = p[3], h = p[4];
    f.box[0] = std::clamp(x * sx, 0.0, static_cast<double>(pic.full_width));
    f.box[1] = std::clamp(y * sy, 0.0, static_cast<double>(pic.full_height));
    f.box[2] = std::clamp((x + w) * sx, 0.0, static_cast<double>(pic.full_width));
    f.box[3] = std::clamp((y + h) * sy, 0.0, static_cast<double>(pic.full_height));
    for (int k = 0; k < 5; ++k) {
      f.marks[2 * k] = p[5 + 2 * k] * sx;
      f.marks[2 * k + 1] = p[6 + 2 * k] * sy;
    }
    faces.push_back(f);
  }
  return faces;
}

std::string JsonLine(const std::string& file, const Picture& pic, const std::vector<Face>& faces) {
  std::string line = "{\"file\":";
  AppendJsonString(line, file);
  line += ",\"width\":" + std::to_string(pic.full_width);
  line += ",\"height\":" + std::to_string(pic.full_height);
  line += ",\"faces\":[";
  for (size_t i = 0; i < faces.size(); ++i) {
    const Face& f = faces[i];
    if (i > 0) line += ',';
    line += "{\"box\":[";
    for (int k = 0; k < 4; ++k) {
      if (k > 0) line += ',';
      AppendNumber(line, f.box[k], 2);
    }
    line += "],\"score\":";
    AppendNumber(line, f.score, 4);
    line += ",\"landmarks\":[";
    for (int k = 0; k < 5; ++k) {
      if (k > 0) line += ',';
      line += '[';
      AppendNumber(line, f.marks[2 * k], 2);
      line += ',';
      AppendNumber(line, f.marks[2 * k + 1], 2);
      line += ']';
    }
    line += "]}";
  }
  line += "]}\n";
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = ParseArgs(argc, argv);
  const std::string tmp = options.out + ".tmp";
  FILE* out = nullptr;
  try {
    std::vector<unsigned char> result(FACEDETECTION_RESULT_BUFFER_SIZE);
    size_t total_faces = 0;
    const auto start = std::chrono::steady_clock::now();
    out = std::fopen(tmp.c_str(), "wb");
    if (out == nullptr)
      throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
    for (const std::string& path : options.images) {
      Picture pic = Decode(path, ReadFile(path), options.jpeg_min_long);
      const std::vector<Face> faces = Detect(pic, options.threshold, result);
      total_faces += faces.size();
      const std::string line = JsonLine(path, pic, faces);
      if (std::fwrite(line.data(), 1, line.size(), out) != line.size()) {
        throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
      }
    }
    const bool write_failed = std::fflush(out) != 0 || std::ferror(out);
    const bool close_failed = std::fclose(out) != 0;
    out = nullptr;
    if (write_failed || close_failed) throw std::runtime_error("cannot write " + tmp);
    if (std::rename(tmp.c_str(), options.out.c_str()) != 0) {
      throw std::runtime_error("cannot rename " + tmp + " to " + options.out + ": " +
                               std::strerror(errno));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const size_t n = options.images.size();
#if defined(_OPENMP)
    const int threads = omp_get_max_threads();
#else
    const int threads = 1;
#endif
    std::printf("%zu images, %zu faces (score >= %g), %.3f s, %d OpenMP thread(s)\n", n,
                total_faces, options.threshold, seconds, threads);
    std::printf("-> %.2f img/s\n", seconds > 0 ? n / seconds : 0.0);
    return 0;
  } catch (const std::exception& e) {
    if (out != nullptr) std::fclose(out);
    std::remove(tmp.c_str());
    std::fprintf(stderr, "yunet_driver: %s\n", e.what());
    return 1;
  }
}
