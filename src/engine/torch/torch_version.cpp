#include "engine/torch_version.h"

#include <torch/version.h>

namespace mogserve::engine {

std::string TorchVersion() {
  return TORCH_VERSION;
}

}  // namespace mogserve::engine
