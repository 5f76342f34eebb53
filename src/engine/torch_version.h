// The LibTorch this binary was built against, for reports (torch-free header).
#pragma once

#include <string>

namespace mogserve::engine {

// "1.13.0", from LibTorch's version header at build time; "none" in builds without LibTorch.
std::string TorchVersion();

}  // namespace mogserve::engine
