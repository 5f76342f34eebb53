// Deterministic random weights with a real checkpoint's exact layout, for benchmarks and tests
// without a checkpoint (`--synthetic-weights VARIANT`). Torch-free.
#pragma once

#include <cstdint>

#include "model/host_tensor.h"
#include "model/mogface/mogface_variant.h"

namespace mogserve::model::mogface {

// Exactly ExpectedKeys(variant, with_dsfd_heads), same values for the same seed on every
// platform (own uniform/normal transforms of std::mt19937_64, seeded per key from the name, so
// a key's values do not depend on which other keys exist). Scaled so activations stay finite and
// sigmoids unsaturated through 100+ layers: He-normal convs (the last conv of each residual
// branch and the predictors scaled down), BN gamma U(0.5,1), beta and running_mean small,
// running_var U(0.5,1.5), GN weight ~1, biases small, num_batches_tracked 0.
HostTensorMap SyntheticWeights(Variant variant, uint64_t seed, bool with_dsfd_heads);

}  // namespace mogserve::model::mogface
