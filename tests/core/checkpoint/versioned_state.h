// The state the checkpoint failure tests save again and again: version v of
// each tensor differs from every other version in every element, so a load
// tells which save a checkpoint holds, or that it holds a mix.
#pragma once

#include <ATen/ATen.h>

namespace dtensor::checkpoint::test {

// [8, 6] float32: 0..47 + 1000 * version.
inline at::Tensor versioned_weight(int version) {
  return at::arange(48, at::kFloat).reshape({8, 6}) + 1000 * version;
}

// [6] int64: 0..5 + 1000 * version.
inline at::Tensor versioned_bias(int version) { return at::arange(6, at::kLong) + 1000 * version; }

}  // namespace dtensor::checkpoint::test
