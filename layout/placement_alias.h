// Alias form of placements, as JAX's PartitionSpec / hyper_parallel write it:
// one entry per TENSOR dim naming the mesh dim(s) that shard it.
//   auto mesh = MeshShape::create({2, 4}, {"dp", "tp"});
//   placements_from_alias({{"tp"}, {"None"}}, mesh);   // [R, S(0)]
//   to_string(AliasSpec{{"dp", "tp"}, {}});             // "(('dp', 'tp'), None)"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "layout/mesh_shape.h"
#include "layout/placement.h"

namespace dtensor {

// The mesh dims sharding one tensor dim, outermost split first. Empty, or the
// single entry "None", means the tensor dim is not sharded.
using TensorDimAlias = std::vector<std::string>;

// One TensorDimAlias per tensor dim. Brace lists build it directly:
//   AliasSpec{{"dp"}, {"None"}}       // dim 0 sharded on dp, dim 1 not sharded
//   AliasSpec{{"dp", "tp"}, {}}       // dim 0 sharded on dp then tp, dim 1 not
using AliasSpec = std::vector<TensorDimAlias>;

// Note [Alias nesting order]
// An alias ("dp", "tp") on a tensor dim means: split the dim over dp, then
// split each dp block over tp, i.e. dp is the outer (major) split, as in JAX.
// Placements nest left to right in mesh dim order (see Note [Nested sharding
// order] in shard_layout.h), so placements can express exactly the aliases
// whose names appear in increasing mesh dim order. An alias such as
// ("tp", "dp") on Mesh(dp=2, tp=2) would need tp to be the outer split, which
// PyTorch only expresses with _StridedShard / shard_order; we reject it
// rather than silently change the layout.

// Converts an alias spec to placements (one per mesh dim) on a named mesh:
// Shard(d) for every mesh dim named in entry d, Replicate for mesh dims named
// nowhere. Throws LayoutError when the mesh has no names, a name is unknown,
// a mesh dim is used twice, "None" is mixed with names, or the names of one
// tensor dim are not in increasing mesh dim order (See Note [Alias nesting order]).
// Example: placements_from_alias({{"dp", "tp"}, {}}, Mesh(dp=2, tp=2)) == [S(0), S(0)].
Placements placements_from_alias(const AliasSpec& alias, const MeshShape& named_mesh);

// Converts placements for a tensor of rank `tensor_ndim` to the alias form on
// a named mesh. Unsharded tensor dims come out as {} (the canonical "None"), so
// alias -> placements -> alias returns the input with {"None"} entries as {}.
// Throws LayoutError for Partial placements (an alias cannot express pending
// reductions: redistribute to Replicate or Shard first), an unnamed mesh, or
// placements that validate_placements rejects.
// Example: alias_from_placements([R, S(0)], Mesh(dp=2, tp=2), 2) == {{"tp"}, {}}.
AliasSpec alias_from_placements(const Placements& placements, const MeshShape& named_mesh,
                                int64_t tensor_ndim);

// Python tuple repr of the spec: ('dp', None), (('dp', 'tp'), None), ('tp',)
// for one tensor dim and () for none. {"None"} and {} both print as None.
std::string to_string(const AliasSpec& alias);

}  // namespace dtensor
