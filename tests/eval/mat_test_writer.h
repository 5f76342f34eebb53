// A small MATLAB level-5 MAT-file writer for the tests (the library only reads): cells, structs,
// char, double, int32, uint8 and uint16 arrays, each variable optionally zlib-compressed, small
// data elements where MATLAB uses them. Header-only: the e2e tests include it too.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "eval/mat_reader.h"

namespace mogserve::eval::testing {

// A value to write.
struct MatValue {
  MatClass mat_class = MatClass::kDouble;
  std::vector<int32_t> dims = {0, 0};
  std::vector<double> numbers;      // numeric classes, column-major
  uint32_t storage = kMiDouble;     // how numbers are stored (MATLAB may narrow doubles)
  std::string text;                 // char (ASCII), a row
  std::vector<MatValue> children;   // cell elements, or struct fields of element 1
  std::vector<std::string> fields;  // struct field names
};

inline MatValue MatChar(const std::string& s) {
  MatValue v;
  v.mat_class = MatClass::kChar;
  v.dims = {s.empty() ? 0 : 1, static_cast<int32_t>(s.size())};
  v.text = s;
  return v;
}

inline MatValue MatNumbers(MatClass c, uint32_t storage, int32_t rows, int32_t cols,
                           std::vector<double> column_major) {
  MatValue v;
  v.mat_class = c;
  v.dims = {rows, cols};
  v.numbers = std::move(column_major);
  v.storage = storage;
  return v;
}

// rows x 4 int32 boxes given row by row.
inline MatValue MatBoxes(const std::vector<std::vector<double>>& rows) {
  std::vector<double> cm;
  for (int c = 0; c < 4; ++c) {
    for (const auto& r : rows) cm.push_back(r[c]);
  }
  return MatNumbers(MatClass::kInt32, kMiInt32, static_cast<int32_t>(rows.size()),
                    rows.empty() ? 0 : 4, cm);
}

// A column of keep indices, as uint8 (or uint16 when wide).
inline MatValue MatIndexColumn(const std::vector<int>& indices, bool wide = false) {
  std::vector<double> v(indices.begin(), indices.end());
  return wide ? MatNumbers(MatClass::kUint16, kMiUint16, static_cast<int32_t>(v.size()),
                           v.empty() ? 0 : 1, v)
              : MatNumbers(MatClass::kUint8, kMiUint8, static_cast<int32_t>(v.size()),
                           v.empty() ? 0 : 1, v);
}

inline MatValue MatCellColumn(std::vector<MatValue> children) {
  MatValue v;
  v.mat_class = MatClass::kCell;
  v.dims = {static_cast<int32_t>(children.size()), 1};
  v.children = std::move(children);
  return v;
}

inline MatValue MatStruct(std::vector<std::pair<std::string, MatValue>> fields) {
  MatValue v;
  v.mat_class = MatClass::kStruct;
  v.dims = {1, 1};
  for (auto& [name, value] : fields) {
    v.fields.push_back(name);
    v.children.push_back(std::move(value));
  }
  return v;
}

class MatWriter {
 public:
  // Appends one element (tag, data, padding to 8 bytes); small format when it fits in 4 bytes.
  static void Element(std::vector<uint8_t>& out, uint32_t type, const std::vector<uint8_t>& data,
                      bool allow_small = true) {
    if (allow_small && data.size() <= 4) {
      Put32(out, static_cast<uint32_t>(data.size()) << 16 | type);
      std::vector<uint8_t> word(4, 0);
      std::memcpy(word.data(), data.data(), data.size());
      out.insert(out.end(), word.begin(), word.end());
      return;
    }
    Put32(out, type);
    Put32(out, static_cast<uint32_t>(data.size()));
    out.insert(out.end(), data.begin(), data.end());
    while (out.size() % 8 != 0) out.push_back(0);
  }

  static void Put32(std::vector<uint8_t>& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }

  template <typename T>
  static void PutValue(std::vector<uint8_t>& out, T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
  }

  static std::vector<uint8_t> Numbers(const std::vector<double>& values, uint32_t storage) {
    std::vector<uint8_t> out;
    for (double v : values) {
      switch (storage) {
        case kMiUint8:
          PutValue<uint8_t>(out, static_cast<uint8_t>(v));
          break;
        case kMiInt8:
          PutValue<int8_t>(out, static_cast<int8_t>(v));
          break;
        case kMiUint16:
          PutValue<uint16_t>(out, static_cast<uint16_t>(v));
          break;
        case kMiInt16:
          PutValue<int16_t>(out, static_cast<int16_t>(v));
          break;
        case kMiInt32:
          PutValue<int32_t>(out, static_cast<int32_t>(v));
          break;
        case kMiUint32:
          PutValue<uint32_t>(out, static_cast<uint32_t>(v));
          break;
        case kMiSingle:
          PutValue<float>(out, static_cast<float>(v));
          break;
        default:
          PutValue<double>(out, v);
          break;
      }
    }
    return out;
  }

  // The miMATRIX element of `v` named `name`.
  static std::vector<uint8_t> Matrix(const MatValue& v, const std::string& name) {
    std::vector<uint8_t> body;
    std::vector<uint8_t> flags;
    Put32(flags, static_cast<uint32_t>(v.mat_class));
    Put32(flags, 0);
    Element(body, kMiUint32, flags, false);
    std::vector<uint8_t> dims;
    for (int32_t d : v.dims) PutValue<int32_t>(dims, d);
    Element(body, kMiInt32, dims, false);
    Element(body, kMiInt8, std::vector<uint8_t>(name.begin(), name.end()));
    int64_t numel = 1;
    for (int32_t d : v.dims) numel *= d;
    switch (v.mat_class) {
      case MatClass::kCell:
        for (const MatValue& c : v.children) {
          const std::vector<uint8_t> m = Matrix(c, "");
          body.insert(body.end(), m.begin(), m.end());
        }
        break;
      case MatClass::kStruct: {
        size_t width = 1;
        for (const std::string& f : v.fields) width = std::max(width, f.size() + 1);
        std::vector<uint8_t> len;
        PutValue<int32_t>(len, static_cast<int32_t>(width));
        Element(body, kMiInt32, len);
        std::vector<uint8_t> names;
        for (const std::string& f : v.fields) {
          names.insert(names.end(), f.begin(), f.end());
          names.insert(names.end(), width - f.size(), 0);
        }
        Element(body, kMiInt8, names);
        for (const MatValue& c : v.children) {
          const std::vector<uint8_t> m = Matrix(c, "");
          body.insert(body.end(), m.begin(), m.end());
        }
        break;
      }
      case MatClass::kChar: {
        std::vector<uint8_t> chars;
        for (char c : v.text) PutValue<uint16_t>(chars, static_cast<uint8_t>(c));
        Element(body, kMiUint16, chars);
        break;
      }
      default:
        Element(body, v.storage, Numbers(v.numbers, v.storage));
    }
    (void)numel;
    std::vector<uint8_t> out;
    Put32(out, kMiMatrix);
    Put32(out, static_cast<uint32_t>(body.size()));
    out.insert(out.end(), body.begin(), body.end());
    return out;
  }

  static std::vector<uint8_t> Header() {
    std::string text = "MATLAB 5.0 MAT-file, written by mogserve's tests";
    text.resize(116, ' ');
    std::vector<uint8_t> out(text.begin(), text.end());
    out.resize(124, 0);  // subsystem data offset
    out.push_back(0x00);
    out.push_back(0x01);  // version 0x0100, little-endian
    out.push_back('I');
    out.push_back('M');
    return out;
  }

  // A whole file; `compress` wraps each variable in a miCOMPRESSED element (as MATLAB's -v7).
  static std::vector<uint8_t> File(const std::vector<std::pair<std::string, MatValue>>& vars,
                                   bool compress) {
    std::vector<uint8_t> out = Header();
    for (const auto& [name, value] : vars) {
      const std::vector<uint8_t> m = Matrix(value, name);
      if (!compress) {
        out.insert(out.end(), m.begin(), m.end());
        continue;
      }
      uLongf size = compressBound(static_cast<uLong>(m.size()));
      std::vector<uint8_t> z(size);
      compress2(z.data(), &size, m.data(), static_cast<uLong>(m.size()), 6);
      z.resize(size);
      Put32(out, kMiCompressed);
      Put32(out, static_cast<uint32_t>(z.size()));
      out.insert(out.end(), z.begin(), z.end());  // no padding after compressed data
    }
    return out;
  }
};

// A WIDER-style ground truth to write: events of images, each with boxes (x y w h rows) and the
// three keep-lists.
struct TestImage {
  std::string name;
  std::vector<std::vector<double>> boxes;
  std::vector<int> easy, medium, hard;
};
struct TestEvent {
  std::string name;
  std::vector<TestImage> images;
};

// The four files' bytes: wider_face_val.mat, then easy, medium, hard.
inline std::vector<std::vector<uint8_t>> WiderMatFiles(const std::vector<TestEvent>& events,
                                                       bool compress) {
  std::vector<MatValue> event_list, file_list, bbx_list;
  std::vector<MatValue> keep[3];
  for (const TestEvent& e : events) {
    event_list.push_back(MatChar(e.name));
    std::vector<MatValue> files, boxes, k[3];
    for (const TestImage& i : e.images) {
      files.push_back(MatChar(i.name));
      boxes.push_back(MatBoxes(i.boxes));
      k[0].push_back(MatIndexColumn(i.easy));
      k[1].push_back(MatIndexColumn(i.medium));
      k[2].push_back(MatIndexColumn(i.hard));
    }
    file_list.push_back(MatCellColumn(files));
    bbx_list.push_back(MatCellColumn(boxes));
    for (int s = 0; s < 3; ++s) keep[s].push_back(MatCellColumn(k[s]));
  }
  std::vector<std::vector<uint8_t>> out;
  out.push_back(MatWriter::File({{"event_list", MatCellColumn(event_list)},
                                 {"file_list", MatCellColumn(file_list)},
                                 {"face_bbx_list", MatCellColumn(bbx_list)}},
                                compress));
  for (int s = 0; s < 3; ++s) {
    out.push_back(MatWriter::File({{"event_list", MatCellColumn(event_list)},
                                   {"file_list", MatCellColumn(file_list)},
                                   {"face_bbx_list", MatCellColumn(bbx_list)},
                                   {"gt_list", MatCellColumn(keep[s])}},
                                  compress));
  }
  return out;
}

}  // namespace mogserve::eval::testing
