// Which steps of a redistribute plan run as one collective over a flattened
// mesh, as PyTorch 2.15 merges them (_optimize_transform_infos in
// torch/distributed/tensor/_redistribute.py), where the result stays exact.
//   // [S(0), S(0)] -> [R, R] on a 2 x 2 mesh whose dims (0, 1) were flattened:
//   auto runs = merged_collectives(plan, {8, 4}, mesh, coordinate,
//                                  [](const std::vector<int>& dims) { return dims == std::vector<int>{0, 1}; });
//   runs[0].first == 0, runs[0].count == 2, runs[0].mesh_dims == {0, 1}   // one all_gather
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "layout/mesh_shape.h"
#include "layout/redistribute_plan.h"

namespace dtensor {

// Note [Merged collectives over a flattened mesh]
// A plan changes one mesh dim per step, so [S(0), S(0)] -> [R, R] is two
// all_gathers. When the user has flattened those mesh dims (DeviceMesh::
// flatten, PyTorch's mesh["dp", "tp"]._flatten()), PyTorch 2.15 runs such a
// run of steps as one collective over the flattened mesh, whose ranks are
// the group's in row-major order, which is the order nested shards take. A
// run is merged when (PyTorch's rules):
// - its steps are consecutive, of one kind among all_gather, all_reduce and
//   reduce_scatter, and change the same placement into the same placement,
//   except that Partial(sum) and Partial(avg) sources mix (the collective
//   sums, then the result is divided by the sizes of the avg mesh dims);
// - all_gathers come innermost mesh dim first and reduce_scatters outermost
//   first (plans order them so; other orders are not nested the flat way);
// - the user flattened exactly those mesh dims, in ascending order;
// - a reduce_scatter's tensor dim divides evenly by the group's size.
// One rule is ours: an all_gather merges only when each rank's nested piece
// is its torch.chunk piece of the flattened group. PyTorch 2.15 merges
// uneven nested shards too and then returns wrong values ([6, 2]
// [S(0), S(0)] on 2 x 2 gathers rows 0-1, 2, a padding row and 3-4: pieces
// of 2, 1, 2, 1 rows laid out as chunks of 2, 2, 2, 0); we keep the two
// all_gathers there. Steps of size-1 mesh dims (local relabels) end a run,
// and all_to_alls never merge (PyTorch excludes them too).
struct MergedCollective {
  std::size_t first = 0;  // plan.steps[first, first + count) run as one collective
  std::size_t count = 0;
  std::vector<int> mesh_dims;      // ascending: the flattened mesh's dims
  StepKind kind = StepKind::kAllGather;
  ReduceOp op = ReduceOp::kSum;    // all_reduce / reduce_scatter: the collective's op
  int64_t divide_by = 1;           // mixed sum / avg: the avg mesh dims' sizes, divided after
};

// The runs of `plan` (for a tensor of `global_shape` at mesh position
// `coordinate`) that merge, in plan order. `flattened(dims)` says whether the
// user flattened exactly those mesh dims (ascending). Empty when nothing
// merges.
std::vector<MergedCollective> merged_collectives(const RedistributePlan& plan,
                                                 const std::vector<int64_t>& global_shape,
                                                 const MeshShape& mesh,
                                                 const std::vector<int64_t>& coordinate,
                                                 const std::function<bool(const std::vector<int>&)>& flattened);

}  // namespace dtensor
