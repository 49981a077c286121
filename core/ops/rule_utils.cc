// Shared helpers of the rule families.
#include "core/ops/rule_utils.h"

#include <c10/util/Exception.h>

namespace dtensor::detail {

int64_t wrap_dim(int64_t dim, int64_t ndim) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  TORCH_CHECK(dim >= -n && dim < n, "dim ", dim, " is out of range for a tensor of rank ", ndim);
  return dim < 0 ? dim + n : dim;
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

DimStrategy all_replicate(const OpCall& call) {
  return DimStrategy{std::vector<Placement>(call.inputs.size(), Replicate()),
                     std::vector<Placement>(call.outputs.size(), Replicate())};
}

DimStrategy follow_first_input(const OpCall& call, int mesh_dim) {
  DimStrategy s;
  for (size_t i = 0; i < call.inputs.size(); ++i) s.inputs.push_back(placement_of(call, i, mesh_dim));
  Placement first = call.inputs.empty() ? Replicate() : placement_of(call, 0, mesh_dim);
  s.outputs.assign(call.outputs.size(), first);
  return s;
}

}  // namespace dtensor::detail
