// A network's input normalisation applied on the host to one picture, torch-free: the planar
// (CHW) input that the FP64 reference executor and the parity tests feed to a plan. The CPU
// backend applies the same InputNormalization to whole batches with LibTorch.
#pragma once

#include <vector>

#include "image/image.h"
#include "model/network.h"

namespace mogserve::model {

// 3 x padded_height x padded_width values, channel c = (v − mean[c]) / divisor[c] computed in
// double; the picture sits at the top-left. The padding is 0 when n.zero_padding (MogFace: the
// mean colour, spec §10.1), else the normalisation of a black pixel (the SSD's border).
// padded_width/height must be >= the picture's size.
std::vector<double> NormalizePlanar(const InputNormalization& n, const image::Image& rgb,
                                    int padded_width, int padded_height);

}  // namespace mogserve::model
