// MatArray, MatFile and the names of MAT v5 classes and types (the parsing is in mat_reader.cpp).
#include <string>

#include "common/enum_names.h"
#include "eval/mat_reader.h"

namespace mogserve::eval {
namespace {

std::string Utf8(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xc0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xe0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    }
  }
  return out;
}

// The header: 116 bytes of text, 8 of subsystem offset, version 0x0100 and the endian mark.

}  // namespace

constexpr EnumName<MatClass> kMatClassNames[] = {
    {MatClass::kCell, "cell"},     {MatClass::kStruct, "struct"},
    {MatClass::kChar, "char"},     {MatClass::kDouble, "double"},
    {MatClass::kSingle, "single"}, {MatClass::kInt8, "int8"},
    {MatClass::kUint8, "uint8"},   {MatClass::kInt16, "int16"},
    {MatClass::kUint16, "uint16"}, {MatClass::kInt32, "int32"},
    {MatClass::kUint32, "uint32"}, {MatClass::kInt64, "int64"},
    {MatClass::kUint64, "uint64"}, {MatClass::kUnsupported, "unsupported"}};

const char* MatClassName(MatClass c) {
  return NameOf(kMatClassNames, c, "unsupported");
}

bool IsNumericClass(MatClass c) {
  const int v = static_cast<int>(c);
  return v >= 6 && v <= 15;
}

std::string MatDataTypeName(uint32_t type) {
  switch (type) {
    case kMiInt8:
      return "miINT8";
    case kMiUint8:
      return "miUINT8";
    case kMiInt16:
      return "miINT16";
    case kMiUint16:
      return "miUINT16";
    case kMiInt32:
      return "miINT32";
    case kMiUint32:
      return "miUINT32";
    case kMiSingle:
      return "miSINGLE";
    case kMiDouble:
      return "miDOUBLE";
    case kMiInt64:
      return "miINT64";
    case kMiUint64:
      return "miUINT64";
    case kMiMatrix:
      return "miMATRIX";
    case kMiCompressed:
      return "miCOMPRESSED";
    case kMiUtf8:
      return "miUTF8";
    case kMiUtf16:
      return "miUTF16";
    case kMiUtf32:
      return "miUTF32";
    default:
      return "type " + std::to_string(type);
  }
}

int64_t MatArray::numel() const {
  if (dims.empty()) return 0;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t MatArray::cols() const {
  int64_t n = 1;
  for (size_t i = 1; i < dims.size(); ++i) n *= dims[i];
  return dims.empty() ? 0 : n;
}

std::string MatArray::Describe() const {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += 'x';
    s += std::to_string(dims[i]);
  }
  s += " ";
  s += mat_class == MatClass::kUnsupported ? unsupported_class : MatClassName(mat_class);
  if (logical) s += " (logical)";
  return s;
}

StatusOr<std::string> MatArray::AsString() const {
  if (mat_class != MatClass::kChar) {
    return InvalidData("expected a char array, got " + Describe());
  }
  if (numel() != 0 && rows() != 1 && cols() != 1) {
    return InvalidData("expected a one-line char array, got " + Describe());
  }
  return Utf8(chars);
}

StatusOr<const MatArray*> MatArray::Field(std::string_view field, int64_t element) const {
  if (mat_class != MatClass::kStruct) return InvalidData("expected a struct, got " + Describe());
  if (element < 0 || element >= numel()) {
    return InvalidArgument("struct element " + std::to_string(element + 1) + " of " + Describe());
  }
  for (size_t f = 0; f < field_names.size(); ++f) {
    if (field_names[f] == field) {
      return &fields[static_cast<size_t>(element) * field_names.size() + f];
    }
  }
  std::string known;
  for (const std::string& f : field_names) known += (known.empty() ? "" : ", ") + f;
  return NotFound("no field '" + std::string(field) + "' (the struct has: " + known + ")");
}

const MatArray* MatFile::Find(std::string_view name) const {
  for (const MatArray& v : variables) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

}  // namespace mogserve::eval
