// Dense strides for a shape, with the dims ordered like another tensor's
// strides: how a global stride is derived from a local tensor's layout (and
// a local stride from a global one) when shard sizes differ.
//   dense_strides_ordered_like({8, 4}, {1, 8}) == {1, 8}   // transposed
//   dense_strides_ordered_like({8, 4}, {4, 1}) == {4, 1}   // contiguous
#pragma once

#include <cstdint>
#include <vector>

namespace dtensor {

/// Strides of a dense (non-overlapping, gap-free) tensor of `sizes` whose
/// dims are ordered from innermost to outermost as in `reference_strides`
/// (ties, e.g. from size-1 dims, keep the later dim innermost, as contiguous
/// tensors do). Both vectors have one entry per dim.
std::vector<int64_t> dense_strides_ordered_like(const std::vector<int64_t>& sizes,
                                                const std::vector<int64_t>& reference_strides);

}  // namespace dtensor
