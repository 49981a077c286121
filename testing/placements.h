// Placement enumeration for property loops over layouts.
//   for (const Placements& p : all_placement_lists(/*mesh_ndim=*/2, placement_alphabet(/*tensor_ndim=*/2)))
//     ...;   // [R, R], [R, S(0)], ..., [P(sum), P(sum)]: 16 lists
#pragma once

#include <cstdint>
#include <vector>

#include "layout/reduce_op.h"
#include "layout/placement.h"

namespace dtensor::testing {

/// Every placement list of length `mesh_ndim` over `alphabet`, in
/// lexicographic order of the alphabet's order (alphabet.size()^mesh_ndim
/// lists; one empty list for mesh_ndim 0). Example: all_placement_lists(1,
/// {Replicate(), Shard(0)}) == {{R}, {S(0)}}.
std::vector<Placements> all_placement_lists(int mesh_ndim, const Placements& alphabet);

/// R, S(0) .. S(tensor_ndim - 1), then Partial(op) for each of `partials`.
/// Example: placement_alphabet(2) == {R, S(0), S(1), P(sum)}.
Placements placement_alphabet(int64_t tensor_ndim, const std::vector<ReduceOp>& partials = {ReduceOp::kSum});

}  // namespace dtensor::testing
