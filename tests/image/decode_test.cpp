#include "image/decode.h"

#include <gtest/gtest.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "image/encode.h"
#include "test_images.h"

namespace mogserve::image {
namespace {

using testutil::BuildPng;
using testutil::Color;
using testutil::MakeGradient;
using testutil::MaxAbsDiff;

std::vector<uint8_t> Bytes(std::string_view s) {
  return {s.begin(), s.end()};
}

DecodedImage DecodeOk(const std::vector<uint8_t>& bytes, const DecodeOptions& options = {}) {
  StatusOr<DecodedImage> decoded = Decode(bytes, options);
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  if (!decoded.ok()) return {};
  EXPECT_FALSE(decoded->image.empty());
  return std::move(decoded).value();
}

// Rows of an 8-bit-per-sample PNG from a function giving the samples of pixel (x, y).
template <typename Fn>
std::vector<std::vector<uint8_t>> PngRows(int width, int height, Fn samples) {
  std::vector<std::vector<uint8_t>> rows(height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (uint8_t v : samples(x, y)) rows[y].push_back(v);
    }
  }
  return rows;
}

uint8_t OverWhite(uint8_t c, uint8_t a) {
  return static_cast<uint8_t>((c * a + 255 * (255 - a) + 127) / 255);
}

// ---- format detection and bad input -------------------------------------------------------

// A header claiming 60000x60000 must be refused by the pixel check on the header's size, before
// any decoding: the bytes hold far fewer pixels than claimed, so any other outcome (an
// allocation failure, a "truncated" or "corrupt" error) means the check came too late.
void ExpectRefusedFromHeader(const std::vector<uint8_t>& bytes) {
  StatusOr<DecodedImage> decoded = Decode(bytes);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(decoded.status().message(),
            "image is 60000x60000 = 3600000000 pixels, limit is 50000000");
}

TEST(DetectFormatTest, RecognisesMagicNumbers) {
  using namespace std::string_view_literals;
  EXPECT_EQ(DetectFormat(Bytes("\xFF\xD8\xFF\xE0"sv)), ImageFormat::kJpeg);
  EXPECT_EQ(DetectFormat(Bytes("\x89PNG\r\n\x1A\n"sv)), ImageFormat::kPng);
  EXPECT_EQ(DetectFormat(Bytes("RIFF\x10\0\0\0WEBPVP8L"sv)), ImageFormat::kWebp);
  EXPECT_EQ(DetectFormat(Bytes("RIFF\x10\0\0\0WAVEfmt "sv)), ImageFormat::kUnknown);
  EXPECT_EQ(DetectFormat(Bytes(""sv)), ImageFormat::kUnknown);
  EXPECT_EQ(DetectFormat(Bytes("\xFF"sv)), ImageFormat::kUnknown);
  EXPECT_STREQ(ImageFormatName(ImageFormat::kWebp), "WebP");
}

TEST(DecodeTest, EmptyInputIsInvalidData) {
  StatusOr<DecodedImage> decoded = Decode(std::vector<uint8_t>{});
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidData);
  EXPECT_EQ(decoded.status().message(), "empty input (0 bytes)");
}

TEST(DecodeTest, RandomBytesAreUnsupported) {
  std::mt19937 rng(42);
  std::vector<uint8_t> bytes(1000);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  bytes[0] = 0x00;  // make sure no real magic number appears by chance
  StatusOr<DecodedImage> decoded = Decode(bytes);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(decoded.status().message(), "unrecognised image format; supported: JPEG, PNG, WebP");
}

TEST(DecodeTest, KnownUnsupportedFormatsAreNamed) {
  const std::pair<std::string, std::string> cases[] = {
      {std::string("GIF89a\x01\0\x01\0\0\0\0", 13), "GIF"},
      {std::string("BM\x3A\0\0\0\0\0\0\0\x36\0\0\0\x28\0", 16), "BMP"},
      {std::string("II*\0\x08\0\0\0", 8), "TIFF"},
      {std::string("MM\0*\0\0\0\x08", 8), "TIFF"},
      {std::string("\0\0\0\x18"
                   "ftypheic\0\0\0\0mif1heic",
                   24),
       "HEIC"},
      {std::string("\0\0\0\x1C"
                   "ftypavif\0\0\0\0avifmif1",
                   24),
       "AVIF"},
  };
  for (const auto& [bytes, name] : cases) {
    StatusOr<DecodedImage> decoded = Decode(Bytes(bytes));
    ASSERT_FALSE(decoded.ok()) << name;
    EXPECT_EQ(decoded.status().code(), StatusCode::kUnsupported) << name;
    EXPECT_NE(decoded.status().message().find(name), std::string::npos)
        << decoded.status().message();
  }
}

TEST(DecodeTest, MagicOnlyIsInvalidDataNamingTheFormat) {
  for (const std::string& magic : {std::string("\xFF\xD8\xFF"), std::string("\x89PNG\r\n\x1A\n"),
                                   std::string("RIFF\0\0\0\0WEBP", 12)}) {
    StatusOr<DecodedImage> decoded = Decode(Bytes(magic));
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidData) << decoded.status().ToString();
  }
}

// ---- JPEG -----------------------------------------------------------------------------------

TEST(JpegDecodeTest, RoundTripsWithinTolerance) {
  const Image original = MakeGradient(64, 48);
  StatusOr<std::vector<uint8_t>> jpeg = EncodeJpeg(original, 95);
  ASSERT_TRUE(jpeg.ok());
  const DecodedImage decoded = DecodeOk(*jpeg);
  EXPECT_EQ(decoded.format, ImageFormat::kJpeg);
  EXPECT_EQ(decoded.width, 64);
  EXPECT_EQ(decoded.height, 48);
  EXPECT_EQ(decoded.exif_orientation, 1);
  const int diff = MaxAbsDiff(decoded.image, original);
  EXPECT_GE(diff, 0);
  EXPECT_LE(diff, 12);
}

TEST(JpegDecodeTest, GreyscaleBecomesRgb) {
  std::vector<uint8_t> grey(32 * 16);
  for (size_t i = 0; i < grey.size(); ++i) grey[i] = static_cast<uint8_t>((i % 32) * 8);
  const auto jpeg = testutil::TjEncode(grey.data(), 32, 16, TJPF_GRAY, TJSAMP_GRAY, 100, 0);
  const DecodedImage decoded = DecodeOk(jpeg);
  ASSERT_EQ(decoded.image.width, 32);
  for (int x = 0; x < 32; ++x) {
    const uint8_t* p = decoded.image.pixel(x, 5);
    EXPECT_EQ(p[0], p[1]);
    EXPECT_EQ(p[1], p[2]);
    EXPECT_NEAR(p[0], x * 8, 3);
  }
}

TEST(JpegDecodeTest, CmykIsConvertedToRgb) {
  // Inverted (Adobe) CMYK as libjpeg-turbo writes it: left half red, right half mid grey.
  std::vector<uint8_t> cmyk;
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 32; ++x) {
      if (x < 16) {
        cmyk.insert(cmyk.end(), {255, 0, 0, 255});
      } else {
        cmyk.insert(cmyk.end(), {255, 255, 255, 128});
      }
    }
  }
  const auto jpeg = testutil::TjEncode(cmyk.data(), 32, 16, TJPF_CMYK, TJSAMP_444, 100, 0);
  const DecodedImage decoded = DecodeOk(jpeg);
  EXPECT_TRUE(testutil::PixelNear(decoded.image, 4, 8, testutil::kRed, 6));
  EXPECT_TRUE(testutil::PixelNear(decoded.image, 28, 8, Color{128, 128, 128}, 6));
}

struct ScaleCase {
  int width, height, min_long_side_px;
  int expected_width, expected_height;
};

TEST(JpegDecodeTest, DctScalingPicksTheStrongestAllowedFactor) {
  const ScaleCase cases[] = {
      {1920, 1280, 512, 960, 640},   // 1/4 would give 480 < 512
      {4000, 3000, 512, 1000, 750},  // 1/8 would give 500 < 512
      {1280, 1920, 512, 640, 960},   // portrait: the longer side is the height
      {1920, 1280, 240, 240, 160},   // 1/8 is exactly enough
      {1920, 1280, 0, 1920, 1280},   // scaling off
      {1000, 800, 512, 1000, 800},   // even 1/2 is too small
      {1001, 601, 100, 126, 76},     // odd sizes round up, as libjpeg-turbo does
  };
  for (const ScaleCase& c : cases) {
    const auto jpeg = EncodeJpeg(Image(c.width, c.height), 75);
    ASSERT_TRUE(jpeg.ok());
    DecodeOptions options;
    options.min_long_side_px = c.min_long_side_px;
    const DecodedImage decoded = DecodeOk(*jpeg, options);
    EXPECT_EQ(decoded.image.width, c.expected_width) << c.width << " " << c.min_long_side_px;
    EXPECT_EQ(decoded.image.height, c.expected_height) << c.width << " " << c.min_long_side_px;
    EXPECT_EQ(decoded.width, c.width);
    EXPECT_EQ(decoded.height, c.height);
  }
}

TEST(JpegDecodeTest, TruncatedIsInvalidData) {
  const auto jpeg = EncodeJpeg(MakeGradient(128, 96), 90);
  ASSERT_TRUE(jpeg.ok());
  const Image gradient = MakeGradient(128, 96);
  const auto progressive = testutil::TjEncode(gradient.data.data(), 128, 96, TJPF_RGB, TJSAMP_420,
                                              90, TJFLAG_PROGRESSIVE);
  for (const auto& file : {*jpeg, progressive}) {
    for (size_t cut : {file.size() / 4, file.size() / 2, file.size() * 3 / 4, file.size() - 10}) {
      const std::vector<uint8_t> part(file.begin(), file.begin() + cut);
      StatusOr<DecodedImage> decoded = Decode(part);
      ASSERT_FALSE(decoded.ok()) << cut;
      EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidData);
      EXPECT_NE(decoded.status().message().find("truncated"), std::string::npos)
          << decoded.status().message();
    }
  }
  StatusOr<DecodedImage> decoded = Decode(progressive);
  ASSERT_TRUE(decoded.ok());
  EXPECT_LE(MaxAbsDiff(decoded->image, gradient), 12);
  // Cut inside the headers: the header parser fails instead.
  const std::vector<uint8_t> head(jpeg->begin(), jpeg->begin() + 40);
  decoded = Decode(head);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidData);
  EXPECT_NE(decoded.status().message().find("JPEG"), std::string::npos);
}

TEST(JpegDecodeTest, HugeHeaderIsRefusedBeforeAllocating) {
  auto jpeg = EncodeJpeg(Image(16, 16), 75);
  ASSERT_TRUE(jpeg.ok());
  testutil::PatchJpegSize(*jpeg, 60000, 60000);
  ExpectRefusedFromHeader(*jpeg);
}

TEST(JpegDecodeTest, MaxPixelsIsConfigurable) {
  const auto jpeg = EncodeJpeg(Image(100, 100), 75);
  ASSERT_TRUE(jpeg.ok());
  DecodeOptions options;
  options.max_pixels = 10000;
  EXPECT_TRUE(Decode(*jpeg, options).ok());
  options.max_pixels = 9999;
  EXPECT_EQ(Decode(*jpeg, options).status().code(), StatusCode::kResourceExhausted);
}

// ---- PNG ------------------------------------------------------------------------------------

TEST(PngDecodeTest, RoundTripsExactly) {
  const Image original = MakeGradient(37, 23);
  const auto png = EncodePng(original);
  ASSERT_TRUE(png.ok());
  const DecodedImage decoded = DecodeOk(*png);
  EXPECT_EQ(decoded.format, ImageFormat::kPng);
  EXPECT_EQ(MaxAbsDiff(decoded.image, original), 0);
}

TEST(PngDecodeTest, Rgb8) {
  const auto rows = PngRows(5, 4, [](int x, int y) {
    return std::vector<uint8_t>{uint8_t(x * 50), uint8_t(y * 60), uint8_t(x + y)};
  });
  const DecodedImage d = DecodeOk(BuildPng(5, 4, 8, 2, rows));
  ASSERT_EQ(d.image.width, 5);
  ASSERT_EQ(d.image.height, 4);
  EXPECT_TRUE(testutil::PixelNear(d.image, 3, 2, Color{150, 120, 5}, 0));
}

TEST(PngDecodeTest, Rgb16IsReducedTo8BitsWithoutGammaChange) {
  const auto rows = PngRows(4, 2, [](int x, int y) {
    const uint8_t v = static_cast<uint8_t>(x * 60 + y * 7);
    // 16-bit samples v * 257 (big-endian: v, v) must come back as v.
    return std::vector<uint8_t>{v, v, uint8_t(255 - v), uint8_t(255 - v), 17, 17};
  });
  const DecodedImage d = DecodeOk(BuildPng(4, 2, 16, 2, rows));
  for (int x = 0; x < 4; ++x) {
    const uint8_t v = static_cast<uint8_t>(x * 60 + 7);
    EXPECT_TRUE(testutil::PixelNear(d.image, x, 1, Color{v, uint8_t(255 - v), 17}, 0)) << x;
  }
}

TEST(PngDecodeTest, Grey8AndGreyAlpha) {
  const auto grey =
      PngRows(3, 1, [](int x, int) { return std::vector<uint8_t>{uint8_t(x * 100)}; });
  const DecodedImage g = DecodeOk(BuildPng(3, 1, 8, 0, grey));
  EXPECT_TRUE(testutil::PixelNear(g.image, 2, 0, Color{200, 200, 200}, 0));

  const auto grey_alpha = PngRows(3, 1, [](int x, int) {
    return std::vector<uint8_t>{100, uint8_t(x * 127)};  // alpha 0, 127, 254
  });
  const DecodedImage ga = DecodeOk(BuildPng(3, 1, 8, 4, grey_alpha));
  EXPECT_TRUE(testutil::PixelNear(ga.image, 0, 0, testutil::kWhite, 0));
  const uint8_t mid = OverWhite(100, 127);
  EXPECT_TRUE(testutil::PixelNear(ga.image, 1, 0, Color{mid, mid, mid}, 0));
  const uint8_t opaque = OverWhite(100, 254);
  EXPECT_TRUE(testutil::PixelNear(ga.image, 2, 0, Color{opaque, opaque, opaque}, 0));
}

TEST(PngDecodeTest, RgbaIsCompositedOverWhite) {
  const auto rows = PngRows(4, 1, [](int x, int) {
    const uint8_t alpha[] = {0, 64, 200, 255};
    return std::vector<uint8_t>{200, 10, 90, alpha[x]};
  });
  const DecodedImage d = DecodeOk(BuildPng(4, 1, 8, 6, rows));
  for (int x = 0; x < 4; ++x) {
    const uint8_t alpha[] = {0, 64, 200, 255};
    const Color expected{OverWhite(200, alpha[x]), OverWhite(10, alpha[x]),
                         OverWhite(90, alpha[x])};
    EXPECT_TRUE(testutil::PixelNear(d.image, x, 0, expected, 0)) << x;
  }
}

TEST(PngDecodeTest, PaletteAndPaletteWithTransparency) {
  const std::vector<uint8_t> palette = {255, 0, 0, 0, 255, 0, 0, 0, 255};
  const auto rows = PngRows(3, 2, [](int x, int) { return std::vector<uint8_t>{uint8_t(x)}; });
  const DecodedImage p = DecodeOk(BuildPng(3, 2, 8, 3, rows, {{"PLTE", palette}}));
  EXPECT_TRUE(testutil::PixelNear(p.image, 0, 1, testutil::kRed, 0));
  EXPECT_TRUE(testutil::PixelNear(p.image, 1, 1, testutil::kGreen, 0));
  EXPECT_TRUE(testutil::PixelNear(p.image, 2, 1, testutil::kBlue, 0));

  // tRNS: entry 0 fully transparent, entry 1 half, entry 2 opaque (missing = 255).
  const DecodedImage t =
      DecodeOk(BuildPng(3, 2, 8, 3, rows, {{"PLTE", palette}, {"tRNS", {0, 128}}}));
  EXPECT_TRUE(testutil::PixelNear(t.image, 0, 0, testutil::kWhite, 0));
  EXPECT_TRUE(
      testutil::PixelNear(t.image, 1, 0, Color{OverWhite(0, 128), 255, OverWhite(0, 128)}, 0));
  EXPECT_TRUE(testutil::PixelNear(t.image, 2, 0, testutil::kBlue, 0));
}

TEST(PngDecodeTest, TruncatedIsInvalidData) {
  const auto png = EncodePng(MakeGradient(64, 64));
  ASSERT_TRUE(png.ok());
  // Cuts: inside the IDAT data, inside IHDR, and just before the IDAT CRC.
  for (size_t cut : {png->size() / 2, size_t{20}, png->size() - 12 - 5}) {
    const std::vector<uint8_t> part(png->begin(), png->begin() + cut);
    StatusOr<DecodedImage> decoded = Decode(part);
    ASSERT_FALSE(decoded.ok()) << cut;
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidData) << cut;
    EXPECT_NE(decoded.status().message().find("PNG"), std::string::npos);
  }
}

TEST(DecodeTest, MissingEndMarkerOnlyIsAccepted) {
  // All pixel data present, only IEND / EOI missing: the picture is whole, viewers show it.
  const Image original = MakeGradient(32, 32);
  const auto png = EncodePng(original);
  ASSERT_TRUE(png.ok());
  StatusOr<DecodedImage> decoded = Decode(std::vector<uint8_t>(png->begin(), png->end() - 12));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(MaxAbsDiff(decoded->image, original), 0);
  const auto jpeg = EncodeJpeg(original, 90);
  ASSERT_TRUE(jpeg.ok());
  decoded = Decode(std::vector<uint8_t>(jpeg->begin(), jpeg->end() - 2));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const auto full = Decode(*jpeg);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(MaxAbsDiff(decoded->image, full->image), 0);
}

TEST(PngDecodeTest, HugeHeaderIsRefusedBeforeAllocating) {
  ExpectRefusedFromHeader(testutil::BuildPngHeaderOnly(60000, 60000));
}

TEST(PngDecodeTest, ZeroSizedHeaderIsInvalidData) {
  StatusOr<DecodedImage> decoded = Decode(testutil::BuildPngHeaderOnly(0, 10));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidData);
}

// ---- WebP -----------------------------------------------------------------------------------

TEST(WebpDecodeTest, LosslessRoundTripsExactly) {
  const Image original = MakeGradient(40, 30);
  const DecodedImage d = DecodeOk(testutil::WebpLossless(original));
  EXPECT_EQ(d.format, ImageFormat::kWebp);
  EXPECT_EQ(d.width, 40);
  EXPECT_EQ(d.height, 30);
  EXPECT_EQ(MaxAbsDiff(d.image, original), 0);
}

TEST(WebpDecodeTest, LossyRoundTripsWithinTolerance) {
  const Image original = MakeGradient(64, 48);
  const DecodedImage d = DecodeOk(testutil::WebpLossy(original, 95));
  const int diff = MaxAbsDiff(d.image, original);
  EXPECT_GE(diff, 0);
  EXPECT_LE(diff, 16);
}

TEST(WebpDecodeTest, AlphaIsCompositedOverWhite) {
  std::vector<uint8_t> rgba;
  const uint8_t alpha[] = {0, 64, 200, 255};
  for (uint8_t a : alpha) {
    for (uint8_t v : {uint8_t{200}, uint8_t{10}, uint8_t{90}, a}) rgba.push_back(v);
  }
  const DecodedImage d = DecodeOk(testutil::WebpLosslessRgba(rgba, 4, 1));
  for (int x = 0; x < 4; ++x) {
    const Color expected{OverWhite(200, alpha[x]), OverWhite(10, alpha[x]),
                         OverWhite(90, alpha[x])};
    EXPECT_TRUE(testutil::PixelNear(d.image, x, 0, expected, 0)) << x;
  }
}

TEST(WebpDecodeTest, TruncatedIsInvalidData) {
  for (const auto& webp : {testutil::WebpLossless(MakeGradient(64, 64)),
                           testutil::WebpLossy(MakeGradient(64, 64), 80)}) {
    const std::vector<uint8_t> half(webp.begin(), webp.begin() + webp.size() / 2);
    StatusOr<DecodedImage> decoded = Decode(half);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidData);
    EXPECT_NE(decoded.status().message().find("WebP"), std::string::npos)
        << decoded.status().message();
  }
}

// ---- all formats ----------------------------------------------------------------------------

TEST(DecodeTest, OnePixelImagesDecode) {
  const Image pixel = testutil::MakeSolid(1, 1, Color{10, 200, 30});
  const std::vector<std::vector<uint8_t>> files = {*EncodeJpeg(pixel, 100), *EncodePng(pixel),
                                                   testutil::WebpLossless(pixel),
                                                   testutil::WebpLossy(pixel, 100)};
  for (const auto& file : files) {
    const DecodedImage d = DecodeOk(file);
    EXPECT_EQ(d.width, 1);
    EXPECT_EQ(d.height, 1);
    ASSERT_EQ(d.image.width, 1);
    ASSERT_EQ(d.image.height, 1);
    EXPECT_TRUE(testutil::PixelNear(d.image, 0, 0, Color{10, 200, 30}, 12))
        << ImageFormatName(d.format);
  }
}

TEST(DecodeTest, EveryPrefixAndRandomCorruptionIsSafe) {
  // Robustness sweep for the sanitizer builds: no crash, and OK always means real pixels.
  const Image img = MakeGradient(16, 12);
  const std::vector<std::vector<uint8_t>> files = {*EncodeJpeg(img, 80), *EncodePng(img),
                                                   testutil::WebpLossless(img),
                                                   testutil::WebpLossy(img, 80)};
  std::mt19937 rng(7);
  for (const auto& file : files) {
    // A prefix keeps the header, so its size is known; a mutation may change the size.
    auto check = [](const std::vector<uint8_t>& bytes, bool size_known) {
      StatusOr<DecodedImage> decoded = Decode(bytes);
      if (!decoded.ok()) return;
      const Image& out = decoded->image;
      ASSERT_FALSE(out.empty());
      EXPECT_EQ(out.data.size(), static_cast<size_t>(out.width) * out.height * 3);
      if (size_known) {
        EXPECT_EQ(out.width, 16);
        EXPECT_EQ(out.height, 12);
      }
    };
    for (size_t cut = 0; cut < file.size(); ++cut) {
      check(std::vector<uint8_t>(file.begin(), file.begin() + cut), true);
    }
    for (int round = 0; round < 200; ++round) {
      std::vector<uint8_t> bytes = file;
      for (int i = 0; i < 8; ++i) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
      check(bytes, false);
    }
  }
}

}  // namespace
}  // namespace mogserve::image
