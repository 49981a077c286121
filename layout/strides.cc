#include "layout/strides.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "layout/layout_error.h"

namespace dtensor {

std::vector<int64_t> dense_strides_ordered_like(const std::vector<int64_t>& sizes,
                                                const std::vector<int64_t>& reference_strides) {
  if (sizes.size() != reference_strides.size()) {
    throw LayoutError("dense_strides_ordered_like: " + std::to_string(sizes.size()) + " sizes but " +
                      std::to_string(reference_strides.size()) + " reference strides");
  }
  std::vector<size_t> inner_first(sizes.size());
  std::iota(inner_first.begin(), inner_first.end(), size_t{0});
  std::sort(inner_first.begin(), inner_first.end(), [&](size_t a, size_t b) {
    return reference_strides[a] != reference_strides[b] ? reference_strides[a] < reference_strides[b] : a > b;
  });
  std::vector<int64_t> strides(sizes.size(), 1);
  int64_t next = 1;
  for (size_t d : inner_first) {
    strides[d] = next;
    next *= std::max<int64_t>(sizes[d], 1);
  }
  return strides;
}

}  // namespace dtensor
