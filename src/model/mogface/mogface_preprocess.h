// MogFace input normalisation (spec §6a) and padding (spec §10.1), torch-free.
#pragma once

#include <vector>

#include "image/image.h"

namespace mogserve::model::mogface {

// Rounds a side up to the next multiple of `multiple` (32 keeps every P2..P5 map exactly twice
// the next, spec §10.1).
int PadToMultiple(int side, int multiple);

// The network input for one RGB picture: planar CHW float32 of 3 x padded_height x
// padded_width, channel c = (v - mean_c) / std_c / 255 with ImageNet mean and std in RGB order
// (spec §6a: the extra /255 is real, the values are about ±0.01). The picture sits at the
// top-left; the padding is 0, which equals padding the image with the mean colour.
// padded_width/height must be >= the picture's size.
std::vector<float> NormalizeAndPad(const image::Image& rgb, int padded_width, int padded_height);

}  // namespace mogserve::model::mogface
