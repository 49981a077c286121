// Message helpers shared by the layout/ components; see layout_error.h.
#include "layout/layout_error.h"

namespace dtensor {
namespace detail {

std::string shape_to_string(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

int64_t checked_numel(const std::vector<int64_t>& shape, const char* caller) {
  int64_t numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    DTENSOR_LAYOUT_CHECK(shape[i] >= 0, caller, ": tensor dim ", i, " has negative size ",
                         shape[i], " in shape ", shape_to_string(shape),
                         "; sizes must be >= 0");
    DTENSOR_LAYOUT_CHECK(!__builtin_mul_overflow(numel, shape[i], &numel), caller,
                         ": the number of elements of shape ", shape_to_string(shape),
                         " overflows int64");
  }
  return numel;
}

}  // namespace detail
}  // namespace dtensor
