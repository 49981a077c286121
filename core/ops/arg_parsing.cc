// Reading an operator call: inputs by schema position, arguments, dims.
#include "core/ops/arg_parsing.h"

#include <c10/util/Exception.h>

#include <algorithm>

namespace dtensor::detail {

int64_t input_at_arg(const OpCall& call, size_t arg) {
  for (size_t i = 0; i < call.positions.size(); ++i) {
    if (call.positions[i].arg_index == arg && call.positions[i].list_index < 0) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

int64_t int_arg(const OpCall& call, size_t arg, int64_t fallback) {
  if (arg >= call.num_args()) return fallback;
  const c10::IValue& v = call.arg(arg);
  return v.isInt() ? v.toInt() : fallback;
}

int64_t dim_arg(const OpCall& call, size_t arg, int64_t fallback) {
  return wrap_dim(int_arg(call, arg, fallback), input_ndim(call, 0));
}

bool bool_arg(const OpCall& call, size_t arg, bool fallback) {
  if (arg >= call.num_args()) return fallback;
  const c10::IValue& v = call.arg(arg);
  return v.isBool() ? v.toBool() : fallback;
}

std::vector<int64_t> dims_arg(const OpCall& call, size_t arg, int64_t ndim, bool empty_means_all) {
  std::vector<int64_t> dims;
  if (arg < call.num_args()) {
    const c10::IValue& v = call.arg(arg);
    if (v.isInt()) {
      dims.push_back(wrap_dim(v.toInt(), ndim));
    } else if (v.isIntList()) {
      for (int64_t d : v.toIntVector()) dims.push_back(wrap_dim(d, ndim));
    }
  }
  if (dims.empty() && empty_means_all) {
    for (int64_t d = 0; d < ndim; ++d) dims.push_back(d);
  }
  return dims;
}

int64_t wrap_dim(int64_t dim, int64_t ndim) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  TORCH_CHECK(dim >= -n && dim < n, "dim ", dim, " is out of range for a tensor of rank ", ndim);
  return dim < 0 ? dim + n : dim;
}

int64_t dim_after_removal(int64_t d, const std::vector<int64_t>& removed) {
  if (std::find(removed.begin(), removed.end(), d) != removed.end()) return -1;
  return d - std::count_if(removed.begin(), removed.end(), [d](int64_t r) { return r < d; });
}

}  // namespace dtensor::detail
