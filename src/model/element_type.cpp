#include "model/element_type.h"

#include <cstring>
#include <map>

namespace mogserve::model {
namespace {

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf / NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // ±0
  } else {
    // Subnormal half: shift the mantissa up until its leading 1 becomes the implicit bit.
    int shift = 0;
    while ((mantissa & 0x400) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | static_cast<uint32_t>(113 - shift) << 23 | ((mantissa & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T>
T Read(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // stored little-endian, as is every host we build for
  return v;
}

}  // namespace

int ElementBytes(ElementType type) {
  switch (type) {
    case ElementType::kF64:
    case ElementType::kI64:
      return 8;
    case ElementType::kF32:
    case ElementType::kI32:
      return 4;
    case ElementType::kF16:
    case ElementType::kBF16:
    case ElementType::kI16:
      return 2;
    case ElementType::kI8:
    case ElementType::kU8:
    case ElementType::kBool:
      return 1;
  }
  return 1;
}

float ElementToFloat(ElementType type, const uint8_t* p) {
  switch (type) {
    case ElementType::kF32:
      return Read<float>(p);
    case ElementType::kF16:
      return HalfToFloat(Read<uint16_t>(p));
    case ElementType::kBF16: {
      const uint32_t bits = static_cast<uint32_t>(Read<uint16_t>(p)) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case ElementType::kF64:
      return static_cast<float>(Read<double>(p));
    case ElementType::kI64:
      return static_cast<float>(Read<int64_t>(p));
    case ElementType::kI32:
      return static_cast<float>(Read<int32_t>(p));
    case ElementType::kI16:
      return static_cast<float>(Read<int16_t>(p));
    case ElementType::kI8:
      return static_cast<float>(Read<int8_t>(p));
    case ElementType::kU8:
    case ElementType::kBool:
      return static_cast<float>(*p);
  }
  return 0.0f;
}

std::optional<ElementType> ElementTypeFromSafetensorsName(const std::string& name) {
  static const std::map<std::string, ElementType> kNames = {
      {"F32", ElementType::kF32},  {"F16", ElementType::kF16}, {"BF16", ElementType::kBF16},
      {"F64", ElementType::kF64},  {"I64", ElementType::kI64}, {"I32", ElementType::kI32},
      {"I16", ElementType::kI16},  {"I8", ElementType::kI8},   {"U8", ElementType::kU8},
      {"BOOL", ElementType::kBool}};
  auto it = kNames.find(name);
  return it == kNames.end() ? std::nullopt : std::optional<ElementType>(it->second);
}

std::optional<ElementType> ElementTypeFromTorchStorage(const std::string& name) {
  static const std::map<std::string, ElementType> kNames = {
      {"FloatStorage", ElementType::kF32},     {"HalfStorage", ElementType::kF16},
      {"BFloat16Storage", ElementType::kBF16}, {"DoubleStorage", ElementType::kF64},
      {"LongStorage", ElementType::kI64},      {"IntStorage", ElementType::kI32},
      {"ShortStorage", ElementType::kI16},     {"CharStorage", ElementType::kI8},
      {"ByteStorage", ElementType::kU8},       {"BoolStorage", ElementType::kBool}};
  auto it = kNames.find(name);
  return it == kNames.end() ? std::nullopt : std::optional<ElementType>(it->second);
}

}  // namespace mogserve::model
