// Placement enumeration. See placements.h.
#include "testing/placements.h"

#include <utility>

namespace dtensor::testing {

std::vector<Placements> all_placement_lists(int mesh_ndim, const Placements& alphabet) {
  std::vector<Placements> out{{}};
  for (int d = 0; d < mesh_ndim; ++d) {
    std::vector<Placements> next;
    next.reserve(out.size() * alphabet.size());
    for (const Placements& prefix : out) {
      for (const Placement& p : alphabet) {
        Placements extended = prefix;
        extended.push_back(p);
        next.push_back(std::move(extended));
      }
    }
    out = std::move(next);
  }
  return out;
}

Placements placement_alphabet(int64_t tensor_ndim, const std::vector<ReduceOp>& partials) {
  Placements out{Replicate()};
  for (int64_t d = 0; d < tensor_ndim; ++d) out.push_back(Shard(d));
  for (ReduceOp op : partials) out.push_back(Partial(op));
  return out;
}

}  // namespace dtensor::testing
