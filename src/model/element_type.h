// Element types of tensors stored in checkpoint files, and their conversion to float32.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mogserve::model {

enum class ElementType { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool };

int ElementBytes(ElementType type);

// The little-endian element at `p` as float32 (integers convert by value; half and bfloat16
// exactly, including subnormals, infinities and NaN).
float ElementToFloat(ElementType type, const uint8_t* p);

// "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL" (safetensors names).
std::optional<ElementType> ElementTypeFromSafetensorsName(const std::string& name);

// "FloatStorage", "HalfStorage", "BFloat16Storage", "DoubleStorage", "LongStorage",
// "IntStorage", "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage" (torch.save names).
std::optional<ElementType> ElementTypeFromTorchStorage(const std::string& name);

}  // namespace mogserve::model
