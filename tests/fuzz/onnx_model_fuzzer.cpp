// libFuzzer target over the ONNX import's untrusted input, a model file: the protobuf reader
// (model/onnx/onnx_reader.cpp: tensors, attributes, the graph's order), then, for what reads, the
// family-independent shape inference and load-time folding at two input sizes (a fixed input at
// its own size). Built with clang under ASan and UBSan by scripts/test.sh (MOGSERVE_FUZZ=ON),
// seeded with the BlazeFace ONNX files scripts/setup.sh fetches. Nothing but Status may come out.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "model/layer_plan.h"
#include "model/onnx/family.h"
#include "model/onnx/onnx_network.h"
#include "model/onnx/static_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mogserve::model::onnx;
  using mogserve::StatusOr;
  StatusOr<Graph> graph =
      ParseModel(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx", "/none");
  if (!graph.ok()) return 0;
  auto shared = std::make_shared<const Graph>(std::move(*graph));
  StatusOr<ImageInput> input = FindImageInput(*shared);
  if (!input.ok()) return 0;
  for (const int64_t side : {64, 97}) {
    const int64_t h = input->height > 0 ? input->height : side;
    const int64_t w = input->width > 0 ? input->width : side;
    StatusOr<StaticGraph> s = StaticGraph::Infer(shared, 1, h, w);
    if (!s.ok()) continue;
    (void)DetectFamily(*s);
    // The mapping onto the plan (fusions, the Resize rule, the output chains) and the plan's
    // shapes at this size.
    StatusOr<ImportedNetwork> imported = ImportNetwork(*s, "fuzz", {});
    if (imported.ok()) {
      (void)mogserve::model::LayerPlan::Create(imported->network, static_cast<int>(h),
                                               static_cast<int>(w));
    }
  }
  return 0;
}
