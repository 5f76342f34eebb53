#include "eval/wider_ground_truth.h"

#include <cmath>
#include <filesystem>

#include "common/enum_names.h"

namespace mogserve::eval {
namespace {

std::string Cell(const std::string& var, size_t event) {
  return var + "{" + std::to_string(event + 1) + "}";
}
std::string Cell(const std::string& var, size_t event, size_t image) {
  return Cell(var, event) + "{" + std::to_string(image + 1) + "}";
}

// The variable `name` of `file`, which must be a cell array.
StatusOr<const MatArray*> CellVariable(const MatFile& file, const std::string& file_name,
                                       const std::string& name) {
  const MatArray* v = file.Find(name);
  if (v == nullptr) {
    std::string have;
    for (const MatArray& a : file.variables) have += (have.empty() ? "" : ", ") + a.name;
    return InvalidData(file_name + ": no variable '" + name +
                       "' (the file has: " + (have.empty() ? "none" : have) + ")");
  }
  if (v->mat_class != MatClass::kCell) {
    return InvalidData(file_name + ": " + name + ": expected a cell array, got " + v->Describe());
  }
  return v;
}

// A cell element that is itself a cell array of `count` elements.
StatusOr<const MatArray*> NestedCells(const MatArray& parent, size_t event, size_t count,
                                      const std::string& what) {
  const MatArray& c = parent.cells[event];
  if (c.mat_class != MatClass::kCell && !(c.empty() && c.mat_class == MatClass::kDouble)) {
    return InvalidData(Cell(what, event) + ": expected a cell array, got " + c.Describe());
  }
  if (static_cast<size_t>(c.numel()) != count) {
    return InvalidData(Cell(what, event) + ": expected " + std::to_string(count) +
                       " images (as file_list), got " + c.Describe());
  }
  return &c;
}

Status ReadBoxes(const MatArray& a, const std::string& what, std::vector<WiderBox>& out) {
  if (a.empty()) return Status::Ok();  // no faces at all
  if (!IsNumericClass(a.mat_class) || a.dims.size() != 2 || a.dims[1] != 4) {
    return InvalidData(what + ": expected an Nx4 numeric array of x y w h, got " + a.Describe());
  }
  const int64_t n = a.rows();
  for (int64_t i = 0; i < n; ++i) {  // column-major: column c of row i is real[c * n + i]
    out.push_back({a.real[i], a.real[n + i], a.real[2 * n + i], a.real[3 * n + i]});
  }
  return Status::Ok();
}

Status ReadKeepList(const MatArray& a, size_t faces, const std::string& what,
                    std::vector<int>& out) {
  if (a.empty()) return Status::Ok();
  if (!IsNumericClass(a.mat_class) || a.complex) {
    return InvalidData(what + ": expected a column of face indices, got " + a.Describe());
  }
  for (double v : a.real) {
    if (v != std::floor(v) || v < 1 || v > static_cast<double>(faces)) {
      return InvalidData(what + ": index " + std::to_string(v) + " is not one of the image's " +
                         std::to_string(faces) + " faces (1-based)");
    }
    out.push_back(static_cast<int>(v));
  }
  return Status::Ok();
}

Status ReadEventsAndImages(const MatFile& val, WiderGroundTruth& gt) {
  const std::string f = kWiderValFile;
  MOGSERVE_ASSIGN_OR_RETURN(const MatArray* events, CellVariable(val, f, "event_list"));
  MOGSERVE_ASSIGN_OR_RETURN(const MatArray* files, CellVariable(val, f, "file_list"));
  MOGSERVE_ASSIGN_OR_RETURN(const MatArray* boxes, CellVariable(val, f, "face_bbx_list"));
  const size_t n_events = events->cells.size();
  if (files->cells.size() != n_events || boxes->cells.size() != n_events) {
    return InvalidData(f + ": event_list has " + std::to_string(n_events) +
                       " events, but file_list has " + std::to_string(files->cells.size()) +
                       " and face_bbx_list " + std::to_string(boxes->cells.size()));
  }
  for (size_t e = 0; e < n_events; ++e) {
    WiderEvent event;
    auto name = events->cells[e].AsString();
    if (!name.ok())
      return InvalidData(f + ": " + Cell("event_list", e) + ": " + name.status().message());
    event.name = *name;
    const MatArray& file_cells = files->cells[e];
    if (file_cells.mat_class != MatClass::kCell && !file_cells.empty()) {
      return InvalidData(f + ": " + Cell("file_list", e) + ": expected a cell array, got " +
                         file_cells.Describe());
    }
    const size_t n_images = file_cells.cells.size();
    MOGSERVE_ASSIGN_OR_RETURN(const MatArray* box_cells,
                              NestedCells(*boxes, e, n_images, f + ": face_bbx_list"));
    for (size_t i = 0; i < n_images; ++i) {
      WiderImage image;
      auto image_name = file_cells.cells[i].AsString();
      if (!image_name.ok()) {
        return InvalidData(f + ": " + Cell("file_list", e, i) + ": " +
                           image_name.status().message());
      }
      image.name = *image_name;
      MOGSERVE_RETURN_IF_ERROR(
          ReadBoxes(box_cells->cells[i], f + ": " + Cell("face_bbx_list", e, i), image.faces));
      event.images.push_back(std::move(image));
    }
    gt.events.push_back(std::move(event));
  }
  return Status::Ok();
}

Status ReadSubset(const MatFile& file, WiderSubset subset, WiderGroundTruth& gt) {
  const std::string f = WiderSubsetFile(subset);
  MOGSERVE_ASSIGN_OR_RETURN(const MatArray* lists, CellVariable(file, f, "gt_list"));
  if (lists->cells.size() != gt.events.size()) {
    return InvalidData(f + ": gt_list has " + std::to_string(lists->cells.size()) +
                       " events, but " + kWiderValFile + " has " +
                       std::to_string(gt.events.size()));
  }
  for (size_t e = 0; e < gt.events.size(); ++e) {
    WiderEvent& event = gt.events[e];
    MOGSERVE_ASSIGN_OR_RETURN(const MatArray* cells,
                              NestedCells(*lists, e, event.images.size(), f + ": gt_list"));
    for (size_t i = 0; i < event.images.size(); ++i) {
      WiderImage& image = event.images[i];
      MOGSERVE_RETURN_IF_ERROR(ReadKeepList(cells->cells[i], image.faces.size(),
                                            f + ": " + Cell("gt_list", e, i),
                                            image.keep[static_cast<int>(subset)]));
    }
  }
  return Status::Ok();
}

}  // namespace

constexpr EnumNames<WiderSubset, WiderSubset::kHard> kWiderSubsetNames{{"easy", "medium", "hard"}};

const char* WiderSubsetName(WiderSubset subset) {
  return NameOf(kWiderSubsetNames, subset, "?");
}

std::string WiderSubsetFile(WiderSubset subset) {
  return std::string("wider_") + WiderSubsetName(subset) + "_val.mat";
}

int64_t WiderGroundTruth::image_count() const {
  int64_t n = 0;
  for (const WiderEvent& e : events) n += static_cast<int64_t>(e.images.size());
  return n;
}

int64_t WiderGroundTruth::face_count() const {
  int64_t n = 0;
  for (const WiderEvent& e : events) {
    for (const WiderImage& i : e.images) n += static_cast<int64_t>(i.faces.size());
  }
  return n;
}

int64_t WiderGroundTruth::kept_count(WiderSubset subset) const {
  int64_t n = 0;
  for (const WiderEvent& e : events) {
    for (const WiderImage& i : e.images) {
      n += static_cast<int64_t>(i.keep[static_cast<int>(subset)].size());
    }
  }
  return n;
}

StatusOr<WiderGroundTruth> WiderGroundTruthFromMat(
    const MatFile& val, const std::array<const MatFile*, kWiderSubsets>& subsets) {
  WiderGroundTruth gt;
  MOGSERVE_RETURN_IF_ERROR(ReadEventsAndImages(val, gt));
  for (int s = 0; s < kWiderSubsets; ++s) {
    if (subsets[s] == nullptr)
      return InvalidArgument("missing subset file " + WiderSubsetFile(static_cast<WiderSubset>(s)));
    MOGSERVE_RETURN_IF_ERROR(ReadSubset(*subsets[s], static_cast<WiderSubset>(s), gt));
  }
  return gt;
}

StatusOr<WiderGroundTruth> LoadWiderGroundTruth(const std::string& dir) {
  namespace fs = std::filesystem;
  MOGSERVE_ASSIGN_OR_RETURN(MatFile val, ReadMatFile((fs::path(dir) / kWiderValFile).string()));
  std::array<MatFile, kWiderSubsets> files;
  for (int s = 0; s < kWiderSubsets; ++s) {
    const fs::path path = fs::path(dir) / WiderSubsetFile(static_cast<WiderSubset>(s));
    MOGSERVE_ASSIGN_OR_RETURN(files[s], ReadMatFile(path.string()));
  }
  return WiderGroundTruthFromMat(val, {&files[0], &files[1], &files[2]});
}

}  // namespace mogserve::eval
