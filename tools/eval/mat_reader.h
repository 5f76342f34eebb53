// A reader for MATLAB level-5 MAT-files (the "-v6" and "-v7" formats; not v7.3, which is HDF5),
// enough for the WIDER FACE ground truth: zlib-compressed elements (miCOMPRESSED), cell arrays,
// structs, char arrays, and numeric arrays of every class (double, single, int8..uint64, logical),
// whatever storage type the file packs them in. Both byte orders are read.
//
// Errors are Status values (never exceptions) that name the element (the variable, then the path
// of cell or field indices in MATLAB's 1-based notation), what was expected and what was found.
// Sparse, object and function-handle arrays are kept as MatClass::kUnsupported placeholders, so a
// file holding one still loads; only using that variable fails.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mogserve/status.h"

namespace mogserve::eval {

// The array classes of the MAT v5 spec (mxCLASS values); kUnsupported stands for sparse, object,
// function handle and any class this reader does not decode.
enum class MatClass : uint8_t {
  kUnsupported = 0,
  kCell = 1,
  kStruct = 2,
  kChar = 4,
  kDouble = 6,
  kSingle = 7,
  kInt8 = 8,
  kUint8 = 9,
  kInt16 = 10,
  kUint16 = 11,
  kInt32 = 12,
  kUint32 = 13,
  kInt64 = 14,
  kUint64 = 15,
};
// "cell", "double", "uint16", ...
const char* MatClassName(MatClass c);
bool IsNumericClass(MatClass c);

// One array, as MATLAB sees it: dims (at least two), column-major contents.
struct MatArray {
  std::string name;  // the variable's name at top level; "" inside cells and structs
  MatClass mat_class = MatClass::kDouble;
  std::string unsupported_class;  // kUnsupported: "sparse", "object", "class 17", ...
  std::vector<int64_t> dims = {0, 0};
  bool logical = false;
  bool complex = false;
  // Numeric and logical arrays: the values converted to double (int64/uint64 beyond 2^53 lose
  // precision), column-major. `imag` only when complex.
  std::vector<double> real;
  std::vector<double> imag;
  std::u32string chars;                  // char arrays: the characters, column-major
  std::vector<MatArray> cells;           // cell arrays: the elements, column-major
  std::vector<std::string> field_names;  // structs: the fields, in file order
  // Structs: the value of field f of element e is fields[e * field_names.size() + f].
  std::vector<MatArray> fields;

  int64_t numel() const;
  int64_t rows() const { return dims.empty() ? 0 : dims[0]; }
  // The product of every dimension after the first.
  int64_t cols() const;
  bool empty() const { return numel() == 0; }
  // "61x1 cell"
  std::string Describe() const;

  // A char array that is a row, a column or empty, as UTF-8; InvalidData otherwise.
  StatusOr<std::string> AsString() const;
  // Field `field` of struct element `element` (0-based); NotFound names the fields there are.
  StatusOr<const MatArray*> Field(std::string_view field, int64_t element = 0) const;
};

struct MatFile {
  std::string description;  // the header's text ("MATLAB 5.0 MAT-file, Platform: ...")
  bool big_endian = false;
  std::vector<MatArray> variables;

  // The variable called `name`, or nullptr.
  const MatArray* Find(std::string_view name) const;
};

struct MatReadLimits {
  // A compressed element may not inflate beyond this (a zip bomb stops here).
  int64_t max_inflated_bytes = int64_t{1} << 30;
  // Cells and structs nest at most this deep.
  int max_depth = 64;
};

// Parses a whole MAT v5 file held in memory.
StatusOr<MatFile> ParseMat(std::span<const uint8_t> bytes, const MatReadLimits& limits = {});
// Reads and parses `path`; error messages start with the path.
StatusOr<MatFile> ReadMatFile(const std::string& path, const MatReadLimits& limits = {});

// Element data types of the MAT v5 spec (miINT8 ... miUTF32), for writers and messages.
enum MatDataType : uint32_t {
  kMiInt8 = 1,
  kMiUint8 = 2,
  kMiInt16 = 3,
  kMiUint16 = 4,
  kMiInt32 = 5,
  kMiUint32 = 6,
  kMiSingle = 7,
  kMiDouble = 9,
  kMiInt64 = 12,
  kMiUint64 = 13,
  kMiMatrix = 14,
  kMiCompressed = 15,
  kMiUtf8 = 16,
  kMiUtf16 = 17,
  kMiUtf32 = 18,
};
// "miINT32", or "type 42" for a value outside the spec.
std::string MatDataTypeName(uint32_t type);

}  // namespace mogserve::eval
