// A tensor read from a weights file into host memory, before it becomes a LibTorch tensor.
// Torch-free, so loaders and their tests need no LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mogserve::model {

struct HostTensor {
  std::vector<int64_t> shape;  // as stored in the file
  std::vector<float> values;   // converted to float32; integer tensors hold their values
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// Tensors by name, in name order.
using HostTensorMap = std::map<std::string, HostTensor>;

// "[64,3,7,7]", for error messages.
std::string ShapeString(const std::vector<int64_t>& shape);

}  // namespace mogserve::model
