// Gloo-specific checks, beyond the shared suite (tests/backends/collective_suite.h):
// the dtypes Gloo 1.13 cannot move or reduce (bool, bfloat16, int16, int8,
// half, complex), 0-dim and empty tensors, and composed collectives reported
// once. Inputs depend on the global rank, so a wrong group order shows up.
//   auto group = world->new_group({3, 1});
//   dtensor::testing::gloo_checks::check_all(*group, world->observers());
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "backends/communicator.h"

namespace dtensor::testing::gloo_checks {

/// Input of global rank `rank`: small integers (1..3, exact in every dtype and
/// in products over 4 ranks); bool: alternating; complex: imaginary = rank.
at::Tensor rank_input(int64_t rank, at::IntArrayRef shape, c10::ScalarType dtype);

void check_all_reduce(Communicator& comm);
void check_all_gather_into_tensor(Communicator& comm);
void check_reduce_scatter_tensor(Communicator& comm);
void check_all_to_all_single(Communicator& comm);
void check_broadcast(Communicator& comm);
void check_scatter(Communicator& comm);
/// Several async collectives in flight, waited in reverse order.
void check_async(Communicator& comm);
/// A composed collective (reduce_scatter_tensor) is reported exactly once, as itself.
void check_events_reported_once(Communicator& comm, ObserverList& observers);

/// All of the above, then a barrier.
void check_all(Communicator& comm, ObserverList& observers);

}  // namespace dtensor::testing::gloo_checks
