// Image files through a Detector with results in input order and bounded memory: `detect` and
// `anonymize`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/input_files.h"
#include "mogserve/detector.h"
#include "options/option_table.h"

namespace mogserve::cli {

// Every input through `detector`, `on_result` called in input order on this thread. At most
// `window` requests are in flight (read, decoding, queued or running) and as many finished
// results wait for their turn, so memory stays bounded however many inputs there are.
void DetectInOrder(
    Detector& detector, const std::vector<InputFile>& inputs, int window,
    const std::function<void(const std::string&, StatusOr<DetectResult>)>& on_result);

// The names a picture job's errors give the options: its flags, with --policy, --batch-size and
// --decode-threads for the scheduler, batch and decoder options.
opt::OptionNames ImageJobOptionNames();

}  // namespace mogserve::cli
