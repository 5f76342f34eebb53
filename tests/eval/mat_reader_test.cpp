// The MAT v5 reader on files written by the test (compressed and not, both byte orders) and on
// malformed ones: each error names the element and what was expected.
#include "eval/mat_reader.h"

#include <gtest/gtest.h>

#include <cstring>

#include "mat_test_writer.h"

namespace mogserve::eval {
namespace {

using testing::MatBoxes;
using testing::MatCellColumn;
using testing::MatChar;
using testing::MatIndexColumn;
using testing::MatNumbers;
using testing::MatStruct;
using testing::MatValue;
using testing::MatWriter;

std::vector<uint8_t> SampleFile(bool compress) {
  return MatWriter::File(
      {{"event_list", MatCellColumn({MatChar("0--Parade"), MatChar("1--Handshaking")})},
       {"face_bbx_list",
        MatCellColumn({MatCellColumn({MatBoxes({{1, 2, 3, 4}, {5, 6, -2, 8}}), MatBoxes({})})})},
       {"gt_list", MatCellColumn({MatIndexColumn({2, 1}), MatIndexColumn({300, 7}, true)})},
       {"scale", MatNumbers(MatClass::kDouble, kMiDouble, 1, 3, {0.5, -1.25, 1e9})},
       // MATLAB stores doubles in the narrowest integer type that holds them.
       {"narrow", MatNumbers(MatClass::kDouble, kMiUint8, 2, 1, {200, 3})},
       {"info", MatStruct({{"name", MatChar("val")},
                           {"count", MatNumbers(MatClass::kInt32, kMiInt32, 1, 1, {3226})}})}},
      compress);
}

class MatReaderTest : public ::testing::TestWithParam<bool> {};

TEST_P(MatReaderTest, ReadsCellsCharsNumbersAndStructs) {
  auto file = ParseMat(SampleFile(GetParam()));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(file->variables.size(), 6u);
  EXPECT_EQ(file->description.rfind("MATLAB 5.0 MAT-file", 0), 0u);
  EXPECT_FALSE(file->big_endian);

  const MatArray* events = file->Find("event_list");
  ASSERT_NE(events, nullptr);
  EXPECT_EQ(events->mat_class, MatClass::kCell);
  EXPECT_EQ(events->Describe(), "2x1 cell");
  ASSERT_EQ(events->cells.size(), 2u);
  EXPECT_EQ(*events->cells[0].AsString(), "0--Parade");
  EXPECT_EQ(*events->cells[1].AsString(), "1--Handshaking");

  const MatArray* boxes = file->Find("face_bbx_list");
  ASSERT_NE(boxes, nullptr);
  const MatArray& image = boxes->cells[0].cells[0];
  EXPECT_EQ(image.mat_class, MatClass::kInt32);
  EXPECT_EQ(image.dims, (std::vector<int64_t>{2, 4}));
  // Column-major: x of both rows, then y, w, h.
  EXPECT_EQ(image.real, (std::vector<double>{1, 5, 2, 6, 3, -2, 4, 8}));
  EXPECT_TRUE(boxes->cells[0].cells[1].empty());

  const MatArray* keep = file->Find("gt_list");
  EXPECT_EQ(keep->cells[0].mat_class, MatClass::kUint8);
  EXPECT_EQ(keep->cells[0].real, (std::vector<double>{2, 1}));
  EXPECT_EQ(keep->cells[1].mat_class, MatClass::kUint16);
  EXPECT_EQ(keep->cells[1].real, (std::vector<double>{300, 7}));

  EXPECT_EQ(file->Find("scale")->real, (std::vector<double>{0.5, -1.25, 1e9}));
  EXPECT_EQ(file->Find("narrow")->mat_class, MatClass::kDouble);
  EXPECT_EQ(file->Find("narrow")->real, (std::vector<double>{200, 3}));

  const MatArray* info = file->Find("info");
  ASSERT_EQ(info->mat_class, MatClass::kStruct);
  EXPECT_EQ(info->field_names, (std::vector<std::string>{"name", "count"}));
  auto name = info->Field("name");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*(*name)->AsString(), "val");
  EXPECT_EQ((*info->Field("count"))->real, (std::vector<double>{3226}));
  auto missing = info->Field("size");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("name, count"), std::string::npos);
  EXPECT_EQ(file->Find("nothing"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Compression, MatReaderTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Compressed" : "Plain"; });

// Big-endian writer, by hand: one 1x2 double and a char row.
TEST(MatReader, ReadsBigEndianFiles) {
  std::vector<uint8_t> f = MatWriter::Header();
  f[124] = 0x01;
  f[125] = 0x00;
  f[126] = 'M';
  f[127] = 'I';
  auto put32 = [&](uint32_t v) {
    for (int i = 3; i >= 0; --i) f.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto put_double = [&](double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    for (int i = 7; i >= 0; --i) f.push_back(static_cast<uint8_t>(u >> (8 * i)));
  };
  put32(kMiMatrix);
  put32(16 + 16 + 8 + 24);
  put32(kMiUint32), put32(8), put32(static_cast<uint32_t>(MatClass::kDouble)), put32(0);
  put32(kMiInt32), put32(8), put32(1), put32(2);
  put32(1u << 16 | kMiInt8);  // small element: name "x"
  f.insert(f.end(), {'x', 0, 0, 0});
  put32(kMiDouble), put32(16);
  put_double(2.5);
  put_double(-7);
  auto file = ParseMat(f);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE(file->big_endian);
  ASSERT_EQ(file->variables.size(), 1u);
  EXPECT_EQ(file->variables[0].name, "x");
  EXPECT_EQ(file->variables[0].real, (std::vector<double>{2.5, -7}));
}

TEST(MatReader, KeepsUnsupportedClassesAsPlaceholders) {
  MatValue sparse = MatNumbers(MatClass::kDouble, kMiDouble, 1, 1, {1});
  sparse.mat_class = static_cast<MatClass>(5);  // mxSPARSE_CLASS
  auto file = ParseMat(MatWriter::File({{"s", sparse}, {"d", MatChar("ok")}}, true));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->Find("s")->mat_class, MatClass::kUnsupported);
  EXPECT_EQ(file->Find("s")->Describe(), "1x1 sparse");
  EXPECT_EQ(*file->Find("d")->AsString(), "ok");
}

TEST(MatReader, AsStringRefusesOtherClassesAndMatrices) {
  MatArray a;
  a.mat_class = MatClass::kDouble;
  EXPECT_FALSE(a.AsString().ok());
  a.mat_class = MatClass::kChar;
  a.dims = {2, 3};
  a.chars = U"abcdef";
  auto s = a.AsString();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("2x3 char"), std::string::npos);
}

// --- malformed files ---

void ExpectError(const std::vector<uint8_t>& bytes, const std::vector<std::string>& parts,
                 MatReadLimits limits = {}) {
  auto file = ParseMat(bytes, limits);
  ASSERT_FALSE(file.ok());
  for (const std::string& part : parts) {
    EXPECT_NE(file.status().message().find(part), std::string::npos)
        << "'" << part << "' not in: " << file.status().message();
  }
}

TEST(MatReaderErrors, ShortOrForeignHeaders) {
  ExpectError(std::vector<uint8_t>(100, ' '), {"shorter than the 128-byte header"});
  std::vector<uint8_t> f = MatWriter::Header();
  f[126] = 'X';
  ExpectError(f, {"endian indicator", "byte 126"});
  f = MatWriter::Header();
  f[125] = 0x02;
  ExpectError(f, {"version 0x0100", "0x0200"});
  f = MatWriter::Header();
  const char v73[] = "MATLAB 7.3 MAT-file";
  std::memcpy(f.data(), v73, sizeof(v73) - 1);
  auto r = ParseMat(f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("HDF5"), std::string::npos);
}

TEST(MatReaderErrors, TruncatedElement) {
  std::vector<uint8_t> f = SampleFile(false);
  f.resize(f.size() - 20);
  ExpectError(f, {"variable 6", "claims", "truncated"});
  f = SampleFile(true);
  f.resize(140);
  ExpectError(f, {"variable 1", "miCOMPRESSED", "claims"});
}

TEST(MatReaderErrors, CorruptCompressedData) {
  std::vector<uint8_t> f = MatWriter::File({{"x", MatChar("hello world")}}, true);
  f[128 + 8] ^= 0xff;  // the zlib header
  ExpectError(f, {"variable 1", "does not inflate", "incorrect header check"});

  // A zlib stream cut short, with the tag's byte count matching the cut.
  f = MatWriter::File({{"x", MatChar("hello world, hello world")}}, true);
  const uint32_t shorter = static_cast<uint32_t>(f.size() - 128 - 8 - 6);
  std::memcpy(f.data() + 132, &shorter, 4);
  f.resize(f.size() - 6);
  ExpectError(f, {"variable 1", "truncated"});
}

TEST(MatReaderErrors, CompressedElementMustHoldAMatrix) {
  std::vector<uint8_t> inner;
  MatWriter::Element(inner, kMiDouble, MatWriter::Numbers({1, 2}, kMiDouble));
  uLongf size = compressBound(static_cast<uLong>(inner.size()));
  std::vector<uint8_t> z(size);
  compress2(z.data(), &size, inner.data(), static_cast<uLong>(inner.size()), 6);
  std::vector<uint8_t> f = MatWriter::Header();
  MatWriter::Put32(f, kMiCompressed);
  MatWriter::Put32(f, static_cast<uint32_t>(size));
  f.insert(f.end(), z.begin(), z.begin() + size);
  ExpectError(f, {"variable 1", "holds miDOUBLE", "expected miMATRIX"});
}

TEST(MatReaderErrors, TopLevelElementMustBeAMatrix) {
  std::vector<uint8_t> f = MatWriter::Header();
  MatWriter::Element(f, kMiDouble, MatWriter::Numbers({1}, kMiDouble));
  ExpectError(f, {"variable 1", "expected miMATRIX or miCOMPRESSED, got miDOUBLE"});
}

// Patches the first miMATRIX of an uncompressed one-variable file.
std::vector<uint8_t> PlainFile(const MatValue& v) {
  return MatWriter::File({{"v", v}}, false);
}

TEST(MatReaderErrors, BadArrayFlagsAndDimensions) {
  std::vector<uint8_t> f = PlainFile(MatNumbers(MatClass::kDouble, kMiDouble, 1, 2, {1, 2}));
  // Bytes 136..143: the array flags tag; make it miINT32.
  f[136] = kMiInt32;
  ExpectError(f, {"variable 1", "array flags: expected miUINT32 of 8 bytes, got miINT32"});

  f = PlainFile(MatNumbers(MatClass::kDouble, kMiDouble, 1, 2, {1, 2}));
  f[152] = kMiDouble;  // the dimensions tag (after 8 + 8 bytes of flags)
  ExpectError(f, {"dimensions: expected miINT32", "got miDOUBLE"});

  f = PlainFile(MatNumbers(MatClass::kDouble, kMiDouble, 1, 2, {1, 2}));
  f[164] = 3;  // dims 1x3, but the data hold 2 values
  ExpectError(f, {"variable 1 ('v')", "real part holds 2 values", "1x3 double need 3"});

  f = PlainFile(MatNumbers(MatClass::kDouble, kMiDouble, 1, 2, {1, 2}));
  const int32_t huge = 0x7fffffff;
  std::memcpy(f.data() + 164, &huge, 4);
  std::memcpy(f.data() + 160, &huge, 4);
  ExpectError(f, {"dimensions", "larger than the"});

  f = PlainFile(MatNumbers(MatClass::kDouble, kMiDouble, 1, 2, {1, 2}));
  const int32_t negative = -1;
  std::memcpy(f.data() + 164, &negative, 4);
  ExpectError(f, {"negative size -1"});
}

TEST(MatReaderErrors, CellElementsMustBeMatrices) {
  MatValue cells = MatCellColumn({MatChar("a"), MatChar("b")});
  std::vector<uint8_t> f = PlainFile(cells);
  // The second cell's miMATRIX tag: find the second occurrence of type 14 after the header.
  int seen = 0;
  for (size_t i = 136; i + 4 <= f.size(); i += 8) {
    uint32_t type;
    std::memcpy(&type, f.data() + i, 4);
    if (type == kMiMatrix && ++seen == 2) {
      f[i] = kMiUint8;
      break;
    }
  }
  ASSERT_EQ(seen, 2);
  ExpectError(f, {"variable 1 ('v'){2}", "expected a miMATRIX element, got miUINT8"});
}

TEST(MatReaderErrors, CharDataMustMatchDimensions) {
  std::vector<uint8_t> f = PlainFile(MatChar("abc"));
  f[164] = 4;  // 1x4 claimed, 3 characters stored
  ExpectError(f, {"char data holds 3 characters", "1x4 char need 4"});
}

TEST(MatReaderErrors, NestingAndInflateLimits) {
  MatValue v = MatChar("deep");
  for (int i = 0; i < 5; ++i) v = MatCellColumn({v});
  MatReadLimits limits;
  limits.max_depth = 3;
  ExpectError(MatWriter::File({{"v", v}}, false), {"{1}{1}{1}{1}", "nest deeper than 3"}, limits);
  EXPECT_TRUE(ParseMat(MatWriter::File({{"v", v}}, false)).ok());

  MatValue big = MatNumbers(MatClass::kDouble, kMiDouble, 1, 10000, std::vector<double>(10000, 0));
  limits = {};
  limits.max_inflated_bytes = 20000;
  auto r = ParseMat(MatWriter::File({{"big", big}}, true), limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("inflates beyond the limit of 20000"), std::string::npos);
}

TEST(MatReaderErrors, ReadMatFileNamesThePath) {
  auto r = ReadMatFile("/nonexistent/wider_face_val.mat");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/wider_face_val.mat"), std::string::npos);
}

}  // namespace
}  // namespace mogserve::eval
