#include "model/onnx/family.h"

#include <algorithm>

#include "model/host_tensor.h"

namespace mogserve::model::onnx {
namespace {

// An output as rows: `rows` anchors of `width` values each (the last axis; batch 1).
struct Rows {
  std::string name;
  int64_t rows = 0;
  int64_t width = 0;
};

std::vector<Rows> OutputRows(const StaticGraph& g) {
  std::vector<Rows> out;
  for (const ValueInfo& v : g.graph().outputs) {
    const std::vector<int64_t>& s = g.value(v.name).shape;
    Rows r{v.name, 1, s.empty() ? 1 : s.back()};
    for (size_t i = 0; i + 1 < s.size(); ++i) r.rows *= s[i];
    out.push_back(r);
  }
  return out;
}

std::string Describe(const std::vector<Rows>& rows) {
  std::string s;
  for (const Rows& r : rows) {
    s += (s.empty() ? "" : ", ") + r.name + " " + std::to_string(r.rows) + "x" +
         std::to_string(r.width);
  }
  return s;
}

bool HasName(const std::vector<Rows>& rows, const std::string& name) {
  return std::any_of(rows.begin(), rows.end(), [&](const Rows& r) { return r.name == name; });
}

std::optional<std::string> MatchYuNet(const std::vector<Rows>& rows) {
  for (const char* stride : {"8", "16", "32"}) {
    for (const char* head : {"cls_", "obj_", "bbox_", "kps_"}) {
      if (!HasName(rows, std::string(head) + stride)) return std::nullopt;
    }
  }
  return "outputs cls_S, obj_S, bbox_S and kps_S for strides 8, 16 and 32";
}

std::optional<std::string> MatchBlazeFace(const std::vector<Rows>& rows) {
  std::vector<int64_t> scores, boxes;
  for (const Rows& r : rows) {
    if (r.width == 1)
      scores.push_back(r.rows);
    else if (r.width == 16)
      boxes.push_back(r.rows);
    else
      return std::nullopt;
  }
  std::sort(scores.begin(), scores.end());
  std::sort(boxes.begin(), boxes.end());
  if (scores.empty() || scores != boxes) return std::nullopt;
  return "per level an anchor-score output [A, 1] and a box-and-6-keypoint output [A, 16]";
}

// `widths` in order, all of `rows` anchors.
bool SameRows(const std::vector<Rows>& rows, const std::vector<int64_t>& widths) {
  if (rows.size() != widths.size()) return false;
  std::vector<int64_t> have, want = widths;
  for (const Rows& r : rows) have.push_back(r.width);
  std::sort(have.begin(), have.end());
  std::sort(want.begin(), want.end());
  return have == want && std::all_of(rows.begin(), rows.end(),
                                     [&](const Rows& r) { return r.rows == rows[0].rows; });
}

std::optional<std::string> MatchScrfd(const std::vector<Rows>& rows, int64_t height,
                                      int64_t width) {
  const size_t n = rows.size();
  if (n != 6 && n != 9 && n != 10 && n != 15) return std::nullopt;
  const size_t levels = n == 6 || n == 9 ? 3 : 5;
  const bool kps = n == 9 || n == 15;
  int64_t anchors = 0;
  for (size_t l = 0; l < levels; ++l) {
    const int64_t stride = int64_t{8} << l;
    const int64_t cells = ((height + stride - 1) / stride) * ((width + stride - 1) / stride);
    const int64_t a = cells > 0 ? rows[l].rows / cells : 0;
    if (a < 1 || a > 2 || rows[l].rows != cells * a) return std::nullopt;
    if (anchors != 0 && a != anchors) return std::nullopt;
    anchors = a;
    if (rows[l].width != 1 || rows[l + levels].width != 4 ||
        rows[l + levels].rows != rows[l].rows) {
      return std::nullopt;
    }
    if (kps && (rows[l + 2 * levels].width != 10 || rows[l + 2 * levels].rows != rows[l].rows)) {
      return std::nullopt;
    }
  }
  return std::to_string(levels) + " strides from 8, " + std::to_string(anchors) +
         " anchor(s) per cell: scores, then boxes" + (kps ? ", then 5-point landmarks" : "") +
         " per stride";
}

}  // namespace

const std::vector<Family>& AllFamilies() {
  static const std::vector<Family> all = {Family::kScrfd, Family::kRetinaFace, Family::kYuNet,
                                          Family::kUltraFace, Family::kBlazeFace};
  return all;
}

std::string FamilyName(Family family) {
  switch (family) {
    case Family::kScrfd:
      return "scrfd";
    case Family::kRetinaFace:
      return "retinaface";
    case Family::kYuNet:
      return "yunet";
    case Family::kUltraFace:
      return "ultraface";
    case Family::kBlazeFace:
      return "blazeface";
  }
  return "";
}

std::optional<Family> ParseFamily(const std::string& name) {
  for (Family f : AllFamilies()) {
    if (FamilyName(f) == name) return f;
  }
  return std::nullopt;
}

FamilyMatch DetectFamily(const StaticGraph& graph) {
  const std::vector<Rows> rows = OutputRows(graph);
  const int64_t height = graph.height(), width = graph.width();
  if (auto why = MatchYuNet(rows)) return {Family::kYuNet, *why};
  if (auto why = MatchScrfd(rows, height, width)) return {Family::kScrfd, *why};
  if (SameRows(rows, {4, 2, 10})) {
    return {Family::kRetinaFace, "boxes [A, 4], two-class scores [A, 2], landmarks [A, 10]"};
  }
  if (SameRows(rows, {2, 4})) return {Family::kUltraFace, "scores [A, 2] and boxes [A, 4]"};
  if (auto why = MatchBlazeFace(rows)) return {Family::kBlazeFace, *why};
  return {std::nullopt, "outputs " + Describe(rows) + " match no known family (" + [] {
            std::string names;
            for (Family f : AllFamilies()) {
              names += (names.empty() ? "" : ", ") + FamilyName(f);
            }
            return names;
          }() + ")"};
}

}  // namespace mogserve::model::onnx
