#include "eval/mat_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "common/byte_order.h"
#include "common/file_util.h"

namespace mogserve::eval {
namespace {

constexpr size_t kHeaderBytes = 128;

// Array flags (the first sub-element of every miMATRIX).
constexpr uint32_t kFlagComplex = 0x08;
constexpr uint32_t kFlagLogical = 0x02;

size_t PadTo8(size_t n) {
  return (n + 7) & ~size_t{7};
}

// Bytes of one value of a numeric storage type; 0 for the others.
size_t StorageBytes(uint32_t type) {
  switch (type) {
    case kMiInt8:
    case kMiUint8:
    case kMiUtf8:
      return 1;
    case kMiInt16:
    case kMiUint16:
    case kMiUtf16:
      return 2;
    case kMiInt32:
    case kMiUint32:
    case kMiSingle:
    case kMiUtf32:
      return 4;
    case kMiDouble:
    case kMiInt64:
    case kMiUint64:
      return 8;
    default:
      return 0;
  }
}

// One data element: its type and where its bytes lie in the enclosing buffer.
struct Element {
  uint32_t type = 0;
  std::span<const uint8_t> data;
  size_t next = 0;  // offset of the element after this one
};

// Reads fixed-size values of either byte order out of one buffer; every read is bounds-checked
// by the caller through Take().
class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> bytes, bool big_endian)
      : bytes_(bytes), big_endian_(big_endian) {}

  uint32_t U32(size_t at) const { return Load<uint32_t>(bytes_.data() + at); }

  template <typename T>
  T Load(const uint8_t* p) const {
    return LoadInOrder<T>(p, big_endian_);
  }

  // The element starting at `at`, in the small (4-byte payload) or the normal format. `padded`:
  // the next element starts at the following 8-byte boundary (all but miCOMPRESSED).
  StatusOr<Element> ReadElement(size_t at, const std::string& what) const {
    if (at + 8 > bytes_.size()) {
      return InvalidData(what + ": expected an 8-byte element tag at offset " + std::to_string(at) +
                         ", but only " +
                         std::to_string(bytes_.size() - std::min(at, bytes_.size())) +
                         " bytes are left");
    }
    const uint32_t first = U32(at);
    Element e;
    if ((first >> 16) != 0) {  // small data element: size and type share the first word
      e.type = first & 0xffff;
      const uint32_t n = first >> 16;
      if (n > 4) {
        return InvalidData(what + ": small element at offset " + std::to_string(at) + " claims " +
                           std::to_string(n) + " bytes (at most 4 fit)");
      }
      e.data = bytes_.subspan(at + 4, n);
      e.next = at + 8;
      return e;
    }
    e.type = first;
    const uint64_t n = U32(at + 4);
    if (at + 8 + n > bytes_.size()) {
      return InvalidData(what + ": " + MatDataTypeName(e.type) + " element at offset " +
                         std::to_string(at) + " claims " + std::to_string(n) + " bytes, but only " +
                         std::to_string(bytes_.size() - at - 8) + " are left (truncated file?)");
    }
    e.data = bytes_.subspan(at + 8, n);
    e.next = e.type == kMiCompressed ? at + 8 + n : std::min(at + 8 + PadTo8(n), bytes_.size());
    return e;
  }

  bool big_endian() const { return big_endian_; }

 private:
  std::span<const uint8_t> bytes_;
  bool big_endian_;  // the file's byte order
};

StatusOr<std::vector<uint8_t>> Inflate(std::span<const uint8_t> in, int64_t max_bytes,
                                       const std::string& what) {
  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) return Internal("zlib inflateInit failed");
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  std::vector<uint8_t> out(std::max<size_t>(4096, in.size() * 4));
  int rc = Z_OK;
  while (true) {
    if (zs.total_out == out.size()) {
      if (static_cast<int64_t>(out.size()) >= max_bytes) {
        inflateEnd(&zs);
        return ResourceExhausted(what + ": compressed element inflates beyond the limit of " +
                                 std::to_string(max_bytes) + " bytes");
      }
      out.resize(static_cast<size_t>(std::min<int64_t>(max_bytes, out.size() * 2)));
    }
    zs.next_out = out.data() + zs.total_out;
    zs.avail_out = static_cast<uInt>(out.size() - zs.total_out);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      inflateEnd(&zs);
      return InvalidData(what + ": compressed element is truncated (zlib stream ends early)");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string msg = zs.msg != nullptr ? zs.msg : "error " + std::to_string(rc);
      inflateEnd(&zs);
      return InvalidData(what + ": compressed element does not inflate (zlib: " + msg + ")");
    }
  }
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

// Decodes `count` values of storage type `type` into doubles.
Status ConvertNumbers(const ByteReader& r, const Element& e, std::vector<double>& out,
                      const std::string& what) {
  const size_t size = StorageBytes(e.type);
  if (size == 0 || e.type == kMiUtf8 || e.type == kMiUtf16 || e.type == kMiUtf32) {
    return InvalidData(what +
                       ": expected numeric data (miINT8 ... miUINT64, miSINGLE, miDOUBLE)"
                       ", got " +
                       MatDataTypeName(e.type));
  }
  if (e.data.size() % size != 0) {
    return InvalidData(what + ": " + std::to_string(e.data.size()) + " bytes of " +
                       MatDataTypeName(e.type) + " is not a whole number of values");
  }
  const size_t n = e.data.size() / size;
  out.resize(n);
  const uint8_t* p = e.data.data();
  for (size_t i = 0; i < n; ++i, p += size) {
    switch (e.type) {
      case kMiInt8:
        out[i] = static_cast<int8_t>(*p);
        break;
      case kMiUint8:
        out[i] = *p;
        break;
      case kMiInt16:
        out[i] = r.Load<int16_t>(p);
        break;
      case kMiUint16:
        out[i] = r.Load<uint16_t>(p);
        break;
      case kMiInt32:
        out[i] = r.Load<int32_t>(p);
        break;
      case kMiUint32:
        out[i] = r.Load<uint32_t>(p);
        break;
      case kMiSingle:
        out[i] = r.Load<float>(p);
        break;
      case kMiDouble:
        out[i] = r.Load<double>(p);
        break;
      case kMiInt64:
        out[i] = static_cast<double>(r.Load<int64_t>(p));
        break;
      case kMiUint64:
        out[i] = static_cast<double>(r.Load<uint64_t>(p));
        break;
      default:
        break;
    }
  }
  return Status::Ok();
}

// Decodes char data: UTF-8 (miUTF8, and miUINT8/miINT8 as Latin-1 bytes), UTF-16/UCS-2
// (miUINT16, MATLAB's default, and miUTF16) or UTF-32.
Status ConvertChars(const ByteReader& r, const Element& e, std::u32string& out,
                    const std::string& what) {
  out.clear();
  const uint8_t* p = e.data.data();
  const size_t n = e.data.size();
  switch (e.type) {
    case kMiInt8:
    case kMiUint8:
      for (size_t i = 0; i < n; ++i) out.push_back(p[i]);
      return Status::Ok();
    case kMiUtf8:
      for (size_t i = 0; i < n;) {
        const uint8_t b = p[i];
        const int extra = b < 0x80           ? 0
                          : (b >> 5) == 0x06 ? 1
                          : (b >> 4) == 0x0e ? 2
                          : (b >> 3) == 0x1e ? 3
                                             : -1;
        bool valid = extra >= 0 && i + static_cast<size_t>(extra) < n;
        for (int k = 1; valid && k <= extra; ++k) valid = (p[i + k] & 0xc0) == 0x80;
        if (!valid) {
          return InvalidData(what + ": invalid UTF-8 in char data at byte " + std::to_string(i));
        }
        char32_t c = extra == 0 ? b : b & (0x3f >> extra);
        for (int k = 1; k <= extra; ++k) c = (c << 6) | (p[i + k] & 0x3f);
        out.push_back(c);
        i += 1 + extra;
      }
      return Status::Ok();
    case kMiUint16:
    case kMiUtf16:
      if (n % 2 != 0) return InvalidData(what + ": odd byte count in 16-bit char data");
      for (size_t i = 0; i < n; i += 2) out.push_back(r.Load<uint16_t>(p + i));
      return Status::Ok();
    case kMiUint32:
    case kMiUtf32:
      if (n % 4 != 0)
        return InvalidData(what + ": byte count of 32-bit char data not a multiple of 4");
      for (size_t i = 0; i < n; i += 4) out.push_back(r.Load<uint32_t>(p + i));
      return Status::Ok();
    default:
      return InvalidData(what + ": expected char data (miUINT16, miUTF8, ...), got " +
                         MatDataTypeName(e.type));
  }
}

class MatrixParser {
 public:
  explicit MatrixParser(const MatReadLimits& limits) : limits_(limits) {}

  // Parses the contents of one miMATRIX element.
  StatusOr<MatArray> Parse(const ByteReader& r, std::span<const uint8_t> data, int depth,
                           const std::string& what) {
    MatArray a;
    if (data.empty()) return a;  // MATLAB writes empty cell elements as a bare tag: 0x0 double
    if (depth > limits_.max_depth) {
      return InvalidData(what + ": cells/structs nest deeper than " +
                         std::to_string(limits_.max_depth));
    }
    const ByteReader sub(data, r.big_endian());
    MOGSERVE_ASSIGN_OR_RETURN(Element flags, sub.ReadElement(0, what + ": array flags"));
    if (flags.type != kMiUint32 || flags.data.size() != 8) {
      return InvalidData(what + ": array flags: expected miUINT32 of 8 bytes, got " +
                         MatDataTypeName(flags.type) + " of " + std::to_string(flags.data.size()) +
                         " bytes");
    }
    const uint32_t word = sub.Load<uint32_t>(flags.data.data());
    const uint32_t cls = word & 0xff;
    a.complex = (word >> 8) & kFlagComplex;
    a.logical = (word >> 8) & kFlagLogical;

    MOGSERVE_ASSIGN_OR_RETURN(Element dims, sub.ReadElement(flags.next, what + ": dimensions"));
    if (dims.type != kMiInt32 || dims.data.size() < 8 || dims.data.size() % 4 != 0) {
      return InvalidData(what + ": dimensions: expected miINT32 with at least 2 values, got " +
                         MatDataTypeName(dims.type) + " of " + std::to_string(dims.data.size()) +
                         " bytes");
    }
    a.dims.clear();
    double numel = 1;  // in double: absurd dimensions must not overflow before they are refused
    for (size_t i = 0; i < dims.data.size(); i += 4) {
      const int32_t d = sub.Load<int32_t>(dims.data.data() + i);
      if (d < 0) return InvalidData(what + ": dimensions: negative size " + std::to_string(d));
      a.dims.push_back(d);
      numel *= d;
    }
    // Every element takes at least one byte of the file (a struct without fields: none), so
    // larger sizes cannot be valid; this refuses them before anything is allocated.
    const double most = cls == 2 ? 1e12 : static_cast<double>(data.size());
    if (numel > most) {
      return InvalidData(what + ": dimensions " + a.Describe() + " are larger than the " +
                         std::to_string(data.size()) + "-byte element can hold");
    }

    MOGSERVE_ASSIGN_OR_RETURN(Element name, sub.ReadElement(dims.next, what + ": array name"));
    if (name.type != kMiInt8 && name.type != kMiUint8 && name.type != kMiUtf8) {
      return InvalidData(what + ": array name: expected miINT8, got " + MatDataTypeName(name.type));
    }
    a.name.assign(name.data.begin(), name.data.end());
    const std::string here = a.name.empty() || depth > 0 ? what : what + " ('" + a.name + "')";
    size_t at = name.next;

    switch (cls) {
      case 1:
        a.mat_class = MatClass::kCell;
        MOGSERVE_RETURN_IF_ERROR(ParseCells(sub, at, a, depth, here));
        return a;
      case 2:
        a.mat_class = MatClass::kStruct;
        MOGSERVE_RETURN_IF_ERROR(ParseStruct(sub, at, a, depth, here));
        return a;
      case 4:
        a.mat_class = MatClass::kChar;
        MOGSERVE_RETURN_IF_ERROR(ParseChars(sub, at, a, here));
        return a;
      case 3:
        a.unsupported_class = "object";
        break;
      case 5:
        a.unsupported_class = "sparse";
        break;
      default:
        if (cls >= 6 && cls <= 15) {
          a.mat_class = static_cast<MatClass>(cls);
          MOGSERVE_RETURN_IF_ERROR(ParseNumbers(sub, at, a, here));
          return a;
        }
        a.unsupported_class = cls == 16 ? "function handle" : "class " + std::to_string(cls);
    }
    a.mat_class = MatClass::kUnsupported;
    return a;
  }

 private:
  Status ParseNumbers(const ByteReader& r, size_t at, MatArray& a, const std::string& what) {
    MOGSERVE_ASSIGN_OR_RETURN(Element real, r.ReadElement(at, what + ": real part"));
    MOGSERVE_RETURN_IF_ERROR(ConvertNumbers(r, real, a.real, what + ": real part"));
    if (static_cast<int64_t>(a.real.size()) != a.numel()) {
      return InvalidData(what + ": real part holds " + std::to_string(a.real.size()) +
                         " values, but the dimensions " + a.Describe() + " need " +
                         std::to_string(a.numel()));
    }
    if (a.complex) {
      MOGSERVE_ASSIGN_OR_RETURN(Element imag, r.ReadElement(real.next, what + ": imaginary part"));
      MOGSERVE_RETURN_IF_ERROR(ConvertNumbers(r, imag, a.imag, what + ": imaginary part"));
      if (a.imag.size() != a.real.size()) {
        return InvalidData(what + ": imaginary part holds " + std::to_string(a.imag.size()) +
                           " values, expected " + std::to_string(a.real.size()));
      }
    }
    return Status::Ok();
  }

  Status ParseChars(const ByteReader& r, size_t at, MatArray& a, const std::string& what) {
    MOGSERVE_ASSIGN_OR_RETURN(Element e, r.ReadElement(at, what + ": char data"));
    MOGSERVE_RETURN_IF_ERROR(ConvertChars(r, e, a.chars, what + ": char data"));
    if (static_cast<int64_t>(a.chars.size()) != a.numel()) {
      return InvalidData(what + ": char data holds " + std::to_string(a.chars.size()) +
                         " characters, but the dimensions " + a.Describe() + " need " +
                         std::to_string(a.numel()));
    }
    return Status::Ok();
  }

  // One miMATRIX per element, column-major.
  Status ParseCells(const ByteReader& r, size_t at, MatArray& a, int depth,
                    const std::string& what) {
    const int64_t n = a.numel();
    a.cells.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const std::string child = what + "{" + std::to_string(i + 1) + "}";
      MOGSERVE_ASSIGN_OR_RETURN(Element e, r.ReadElement(at, child));
      if (e.type != kMiMatrix) {
        return InvalidData(child + ": expected a miMATRIX element, got " + MatDataTypeName(e.type));
      }
      MOGSERVE_ASSIGN_OR_RETURN(MatArray cell, Parse(r, e.data, depth + 1, child));
      a.cells.push_back(std::move(cell));
      at = e.next;
    }
    return Status::Ok();
  }

  // Field name length, the names (fixed-width, NUL-padded), then one miMATRIX per element and
  // field.
  Status ParseStruct(const ByteReader& r, size_t at, MatArray& a, int depth,
                     const std::string& what) {
    MOGSERVE_ASSIGN_OR_RETURN(Element len, r.ReadElement(at, what + ": field name length"));
    if (len.type != kMiInt32 || len.data.size() != 4) {
      return InvalidData(what + ": field name length: expected one miINT32, got " +
                         MatDataTypeName(len.type) + " of " + std::to_string(len.data.size()) +
                         " bytes");
    }
    const int32_t width = r.Load<int32_t>(len.data.data());
    MOGSERVE_ASSIGN_OR_RETURN(Element names, r.ReadElement(len.next, what + ": field names"));
    if (names.type != kMiInt8 || width <= 0 || names.data.size() % width != 0) {
      return InvalidData(what + ": field names: expected miINT8 in slots of " +
                         std::to_string(width) + " bytes, got " + MatDataTypeName(names.type) +
                         " of " + std::to_string(names.data.size()) + " bytes");
    }
    for (size_t i = 0; i < names.data.size(); i += static_cast<size_t>(width)) {
      const char* p = reinterpret_cast<const char*>(names.data.data() + i);
      a.field_names.emplace_back(p, strnlen(p, static_cast<size_t>(width)));
    }
    at = names.next;
    const int64_t n = a.field_names.empty() ? 0 : a.numel();
    for (int64_t e = 0; e < n; ++e) {
      for (const std::string& field : a.field_names) {
        const std::string child =
            what + (n > 1 ? "(" + std::to_string(e + 1) + ")" : "") + "." + field;
        MOGSERVE_ASSIGN_OR_RETURN(Element el, r.ReadElement(at, child));
        if (el.type != kMiMatrix) {
          return InvalidData(child + ": expected a miMATRIX element, got " +
                             MatDataTypeName(el.type));
        }
        MOGSERVE_ASSIGN_OR_RETURN(MatArray value, Parse(r, el.data, depth + 1, child));
        a.fields.push_back(std::move(value));
        at = el.next;
      }
    }
    return Status::Ok();
  }

  MatReadLimits limits_;
};

StatusOr<bool> ParseHeader(std::span<const uint8_t> bytes, std::string& description) {
  if (bytes.size() < kHeaderBytes) {
    return InvalidData("not a MAT v5 file: " + std::to_string(bytes.size()) +
                       " bytes, shorter than the 128-byte header");
  }
  description.assign(reinterpret_cast<const char*>(bytes.data()), 116);
  description.erase(description.find_last_not_of(std::string(" \0", 2)) + 1);
  if (description.rfind("MATLAB 7.3", 0) == 0) {
    return Unsupported("MAT v7.3 (HDF5) files are not supported; re-save with save(..., '-v7')");
  }
  const uint8_t* mark = bytes.data() + 126;
  const std::optional<bool> big_endian = BigEndianMark(mark, "IM", "MI");
  if (!big_endian) {
    return InvalidData(
        "not a MAT v5 file: expected the endian indicator 'IM' or 'MI' at byte "
        "126, got 0x" +
        [&] {
          char hex[8];
          std::snprintf(hex, sizeof(hex), "%02x%02x", mark[0], mark[1]);
          return std::string(hex);
        }());
  }
  const uint16_t version = LoadInOrder<uint16_t>(bytes.data() + 124, *big_endian);
  if (version != 0x0100) {
    return InvalidData("MAT header: expected version 0x0100 at byte 124, got 0x" + [&] {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "%04x", version);
      return std::string(hex);
    }());
  }
  return *big_endian;
}

}  // namespace

StatusOr<MatFile> ParseMat(std::span<const uint8_t> bytes, const MatReadLimits& limits) {
  MatFile file;
  MOGSERVE_ASSIGN_OR_RETURN(file.big_endian, ParseHeader(bytes, file.description));
  const ByteReader r(bytes, file.big_endian);
  MatrixParser parser(limits);
  size_t at = kHeaderBytes;
  for (int index = 1; at < bytes.size(); ++index) {
    const std::string what = "variable " + std::to_string(index);
    MOGSERVE_ASSIGN_OR_RETURN(Element e, r.ReadElement(at, what));
    const size_t offset = at;
    at = e.next;
    if (e.type == kMiCompressed) {
      MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> inflated,
                                Inflate(e.data, limits.max_inflated_bytes, what));
      const ByteReader inner(inflated, r.big_endian());
      MOGSERVE_ASSIGN_OR_RETURN(Element m, inner.ReadElement(0, what + " (inflated)"));
      if (m.type != kMiMatrix) {
        return InvalidData(what + ": the compressed element holds " + MatDataTypeName(m.type) +
                           ", expected miMATRIX");
      }
      MOGSERVE_ASSIGN_OR_RETURN(MatArray a, parser.Parse(inner, m.data, 0, what));
      file.variables.push_back(std::move(a));
    } else if (e.type == kMiMatrix) {
      MOGSERVE_ASSIGN_OR_RETURN(MatArray a, parser.Parse(r, e.data, 0, what));
      file.variables.push_back(std::move(a));
    } else {
      return InvalidData(what + " at offset " + std::to_string(offset) +
                         ": expected miMATRIX or miCOMPRESSED, got " + MatDataTypeName(e.type));
    }
  }
  return file;
}

StatusOr<MatFile> ReadMatFile(const std::string& path, const MatReadLimits& limits) {
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(path));
  auto file = ParseMat(bytes, limits);
  if (!file.ok()) return Status(file.status().code(), path + ": " + file.status().message());
  return file;
}

}  // namespace mogserve::eval
