#include "cli/detect_in_order.h"

#include "common/reorder_window.h"

namespace mogserve::cli {

void DetectInOrder(
    Detector& detector, const std::vector<InputFile>& inputs, int window,
    const std::function<void(const std::string&, StatusOr<DetectResult>)>& on_result) {
  ReorderWindow<StatusOr<DetectResult>> reorder(window);
  const int64_t total = static_cast<int64_t>(inputs.size());
  int64_t submitted = 0;
  for (int64_t delivered = 0; delivered < total; ++delivered) {
    for (; submitted < total && submitted - delivered < window; ++submitted) {
      detector.DetectFileAsync(inputs[submitted].path,
                               [&reorder, index = submitted](StatusOr<DetectResult> r) {
                                 reorder.Put(index, std::move(r));
                               });
    }
    on_result(inputs[delivered].path, reorder.Take(delivered));
  }
}

opt::OptionNames ImageJobOptionNames() {
  opt::OptionNames names = opt::OptionNames::Flags();
  names.Rename("scheduler", "--policy").Rename("max_batch_size", "--batch-size");
  names.Rename("decode_threads", "--decode-threads");
  return names;
}

}  // namespace mogserve::cli
