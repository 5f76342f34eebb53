#include "image/exif.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "image/decode.h"
#include "image/encode.h"
#include "test_images.h"

namespace mogserve::image {
namespace {

using testutil::Color;
using testutil::kBlue;
using testutil::kGreen;
using testutil::kRed;
using testutil::kWhite;
using testutil::MakeExifTiff;

// Where the quadrants of testutil::MakeQuadrants (red TL, green TR, blue BL, white BR, as stored)
// must appear once a viewer has applied each orientation: {top-left, top-right, bottom-left,
// bottom-right}. Written out by hand from the EXIF specification, independently of the code.
struct Expected {
  int orientation;
  std::array<Color, 4> corners;
};
const Expected kExpected[] = {
    {1, {kRed, kGreen, kBlue, kWhite}},  // as stored
    {2, {kGreen, kRed, kWhite, kBlue}},  // mirrored left-right
    {3, {kWhite, kBlue, kGreen, kRed}},  // rotated 180
    {4, {kBlue, kWhite, kRed, kGreen}},  // mirrored top-bottom
    {5, {kRed, kBlue, kGreen, kWhite}},  // transposed
    {6, {kBlue, kRed, kWhite, kGreen}},  // rotated 90 clockwise
    {7, {kWhite, kGreen, kBlue, kRed}},  // transversed
    {8, {kGreen, kWhite, kRed, kBlue}},  // rotated 90 counter-clockwise
};

// Checks the four quadrant centres of `img` against the expected colours.
void ExpectCorners(const Image& img, const std::array<Color, 4>& corners, int tolerance) {
  const int xs[] = {img.width / 4, img.width * 3 / 4};
  const int ys[] = {img.height / 4, img.height * 3 / 4};
  for (int i = 0; i < 4; ++i) {
    const int x = xs[i % 2], y = ys[i / 2];
    const uint8_t* p = img.pixel(x, y);
    EXPECT_TRUE(testutil::PixelNear(img, x, y, corners[i], tolerance))
        << "corner " << i << " at (" << x << "," << y << ") is " << int(p[0]) << "," << int(p[1])
        << "," << int(p[2]);
  }
}

TEST(ParseExifOrientationTest, ReadsBothByteOrders) {
  for (int orientation = 1; orientation <= 8; ++orientation) {
    for (bool big_endian : {false, true}) {
      EXPECT_EQ(ParseExifOrientation(MakeExifTiff(orientation, big_endian, true)), orientation);
      EXPECT_EQ(ParseExifOrientation(MakeExifTiff(orientation, big_endian, false)), orientation);
    }
  }
}

TEST(ParseExifOrientationTest, MalformedBlocksGiveOne) {
  EXPECT_EQ(ParseExifOrientation({}), 1);
  const std::vector<uint8_t> good = MakeExifTiff(6, false, false);
  ASSERT_EQ(ParseExifOrientation(good), 6);
  // Every truncation must be survived; the tag sits in the second entry (bytes 22..33, value at
  // 30).
  for (size_t cut = 0; cut < good.size(); ++cut) {
    const std::vector<uint8_t> part(good.begin(), good.begin() + cut);
    const int orientation = ParseExifOrientation(part);
    EXPECT_EQ(orientation, cut >= 34 ? 6 : 1) << cut;
  }
  auto with = [&](size_t offset, uint8_t value) {
    std::vector<uint8_t> bad = good;
    bad[offset] = value;
    return ParseExifOrientation(bad);
  };
  EXPECT_EQ(with(0, 'X'), 1);   // bad byte-order mark
  EXPECT_EQ(with(2, 43), 1);    // bad magic
  EXPECT_EQ(with(4, 0xF0), 1);  // IFD offset past the end
  EXPECT_EQ(with(7, 0xFF), 1);  // IFD offset huge (overflow bait)
  EXPECT_EQ(with(8, 0xFF), 6);  // a count past the block still reads the entries present
  EXPECT_EQ(with(8, 1), 1);     // a count that stops before the tag
  EXPECT_EQ(with(24, 4), 1);    // orientation stored as LONG instead of SHORT
  EXPECT_EQ(with(30, 0), 1);    // value 0
  EXPECT_EQ(with(30, 9), 1);    // value 9
  EXPECT_EQ(with(31, 1), 1);    // value 262 (high byte set)
}

TEST(JpegExifOrientationTest, FindsExifAfterOtherSegments) {
  const auto jpeg = EncodeJpeg(Image(8, 8), 80);
  ASSERT_TRUE(jpeg.ok());
  EXPECT_EQ(JpegExifOrientation(*jpeg), 1);
  const std::string xmp = "http://ns.adobe.com/xap/1.0/";
  std::vector<uint8_t> with_exif =
      testutil::InsertJpegSegment(*jpeg, 0xE1, MakeExifTiff(3, true, true));
  with_exif = testutil::InsertJpegSegment(with_exif, 0xE1, {xmp.begin(), xmp.end()});
  EXPECT_EQ(JpegExifOrientation(with_exif), 3);
  // A segment length running past the end stops the scan safely.
  std::vector<uint8_t> broken = with_exif;
  broken[4] = 0xFF;
  broken[5] = 0xFF;
  EXPECT_EQ(JpegExifOrientation(broken), 1);
  EXPECT_EQ(JpegExifOrientation(std::vector<uint8_t>(with_exif.begin(), with_exif.begin() + 30)),
            1);
}

TEST(ApplyOrientationTest, MovesQuadrantsAsViewersDo) {
  const Image stored = testutil::MakeQuadrants(6, 4);
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.orientation);
    const Image upright = ApplyOrientation(stored, e.orientation);
    const bool swaps = e.orientation >= 5;
    EXPECT_EQ(upright.width, swaps ? 4 : 6);
    EXPECT_EQ(upright.height, swaps ? 6 : 4);
    ExpectCorners(upright, e.corners, 0);
  }
  EXPECT_EQ(testutil::MaxAbsDiff(ApplyOrientation(stored, 0), stored), 0);
  EXPECT_EQ(testutil::MaxAbsDiff(ApplyOrientation(stored, 9), stored), 0);
}

TEST(ApplyOrientationTest, MapsEveryPixelExactly) {
  // Pixel values encode their stored coordinates; check the full mapping for 6 (90 CW).
  Image stored(3, 2);
  for (int y = 0; y < 2; ++y) {
    for (int x = 0; x < 3; ++x) stored.pixel(x, y)[0] = static_cast<uint8_t>(10 * y + x);
  }
  const Image cw = ApplyOrientation(stored, 6);
  ASSERT_EQ(cw.width, 2);
  ASSERT_EQ(cw.height, 3);
  // Stored rows (0 1 2 / 10 11 12) become columns read bottom-up: 10 0 / 11 1 / 12 2.
  const uint8_t expected[3][2] = {{10, 0}, {11, 1}, {12, 2}};
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 2; ++x) EXPECT_EQ(cw.pixel(x, y)[0], expected[y][x]) << x << "," << y;
  }
}

TEST(ExifDecodeTest, JpegWithEachOrientationDecodesUpright) {
  const auto jpeg = EncodeJpeg(testutil::MakeQuadrants(64, 32), 95);
  ASSERT_TRUE(jpeg.ok());
  for (const Expected& e : kExpected) {
    for (bool big_endian : {false, true}) {
      SCOPED_TRACE(std::to_string(e.orientation) + (big_endian ? " MM" : " II"));
      const auto file =
          testutil::InsertJpegSegment(*jpeg, 0xE1, MakeExifTiff(e.orientation, big_endian, true));
      StatusOr<DecodedImage> d = Decode(file);
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      EXPECT_EQ(d->exif_orientation, e.orientation);
      const bool swaps = e.orientation >= 5;
      EXPECT_EQ(d->width, swaps ? 32 : 64);
      EXPECT_EQ(d->height, swaps ? 64 : 32);
      EXPECT_EQ(d->image.width, d->width);
      EXPECT_EQ(d->image.height, d->height);
      ExpectCorners(d->image, e.corners, 40);
    }
  }
}

TEST(ExifDecodeTest, OrientationCombinesWithDctScaling) {
  const auto jpeg = EncodeJpeg(testutil::MakeQuadrants(1920, 1280), 80);
  ASSERT_TRUE(jpeg.ok());
  const auto file = testutil::InsertJpegSegment(*jpeg, 0xE1, MakeExifTiff(6, false, true));
  DecodeOptions options;
  options.min_long_side_px = 512;
  StatusOr<DecodedImage> d = Decode(file, options);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->width, 1280);
  EXPECT_EQ(d->height, 1920);
  EXPECT_EQ(d->image.width, 640);
  EXPECT_EQ(d->image.height, 960);
  ExpectCorners(d->image, kExpected[5].corners, 40);
}

TEST(ExifDecodeTest, MalformedExifNeverFailsADecode) {
  const auto jpeg = EncodeJpeg(testutil::MakeQuadrants(16, 16), 90);
  ASSERT_TRUE(jpeg.ok());
  std::vector<uint8_t> tiff = MakeExifTiff(6, false, true);
  tiff[10] = 0xEE;  // IFD offset far past the end
  StatusOr<DecodedImage> d = Decode(testutil::InsertJpegSegment(*jpeg, 0xE1, tiff));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->exif_orientation, 1);
  tiff.resize(12);  // truncated inside the IFD
  d = Decode(testutil::InsertJpegSegment(*jpeg, 0xE1, tiff));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->exif_orientation, 1);
}

TEST(ExifDecodeTest, WebpExifChunkIsApplied) {
  const auto webp = testutil::WebpLossless(testutil::MakeQuadrants(20, 10));
  for (bool exif_header : {false, true}) {
    const auto file = testutil::WebpWithExif(webp, MakeExifTiff(8, true, exif_header));
    StatusOr<DecodedImage> d = Decode(file);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->exif_orientation, 8);
    EXPECT_EQ(d->width, 10);
    EXPECT_EQ(d->height, 20);
    ExpectCorners(d->image, kExpected[7].corners, 0);
  }
}

TEST(ExifDecodeTest, PngExifChunkIsApplied) {
  const Image stored = testutil::MakeQuadrants(8, 4);
  std::vector<std::vector<uint8_t>> rows(4);
  for (int y = 0; y < 4; ++y) rows[y].assign(stored.pixel(0, y), stored.pixel(0, y) + 8 * 3);
  const auto png = testutil::BuildPng(8, 4, 8, 2, rows, {{"eXIf", MakeExifTiff(3, false, false)}});
  StatusOr<DecodedImage> d = Decode(png);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->exif_orientation, 3);
  ExpectCorners(d->image, kExpected[2].corners, 0);
}

}  // namespace
}  // namespace mogserve::image
