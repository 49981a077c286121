// Helpers shared by the DTensor tests: random seeds printed for property
// loops, and reference helpers (the local block a rank should hold). The
// collective counter and the placement enumeration come from the testing
// kit (testing/collective_counter.h, testing/placements.h), included here.
//   CollectiveCounter counter(world);   ...   EXPECT_EQ(counter.counts(), (Counts{{"all_reduce", 1}}));
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/world.h"
#include "core/dtensor.h"
#include "testing/collective_counter.h"
#include "testing/placements.h"
#include "testing/seed.h"  // test_seed(), for the property loops

namespace dtensor::testing {

/// True when the public redistribute refuses `from` -> `to` for making a new
/// Partial on some mesh dim (a Partial that differs from `from` there), unless
/// it is P(sum) made from a Shard (See Note [Redistribute to Partial is
/// internal] in core/dtensor.cc; as PyTorch 2.15).
bool public_redistribute_refuses(const Placements& from, const Placements& to);

/// x.redistribute(to), or, for a new Partial it refuses, checks that the public API
/// refuses it (EXPECT) and takes the internal path sharding propagation uses
/// (redistribute_local) instead. Collectives are the same either way.
DTensor redistribute_or_internal(const DTensor& x, const Placements& to);

/// Placements with every Partial replaced by Replicate.
Placements without_partial(const Placements& placements);

/// What this rank holds of `global` under `spec` (Partial dims ignored): its
/// block, or its spans concatenated under a _StridedShard.
at::Tensor expected_local(const at::Tensor& global, const DTensorSpec& spec);

/// Standard-normal float64 values from a private generator: the same on every
/// rank thread (at::randn's default generator is shared by the threads of a
/// fake world, so rank threads calling it get different values).
at::Tensor seeded_randn(const std::vector<int64_t>& shape, uint64_t seed);

/// "[S(0), R]" -> text; convenience for SCOPED_TRACE.
std::string trace(const Placements& from, const Placements& to, const std::vector<int64_t>& shape);

}  // namespace dtensor::testing
