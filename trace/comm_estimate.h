// Time estimates for traced collectives from the comm cost model of
// layout/comm_cost.h (alpha-beta, ring bytes per rank).
//   double us = estimate_collective_us(record, CommCostModel{});
#pragma once

#include <cstdint>

#include "layout/comm_cost.h"
#include "trace/trace_model.h"

namespace dtensor::trace {

/// Bytes one rank sends in a ring implementation of `r` (see Note [Comm cost
/// model]): all_gather (n-1)/n * output bytes, reduce_scatter and all_to_all
/// (n-1)/n * input bytes, all_reduce 2(n-1)/n * bytes; broadcast and scatter
/// count the bytes contributed; barrier 0. n is the group size (1 when the
/// group is unknown, giving 0 bytes). The kind is read with
/// kind_of_collective, so PyTorch's names ("c10d_functional.all_reduce")
/// cost as theirs.
int64_t ring_bytes_per_rank(const CollectiveRecord& r);

/// latency_us + ring_bytes_per_rank / bandwidth for every kind, barrier
/// included (a collective always pays the latency); 0 for groups of one rank.
/// Example: an all_reduce of 320 bytes over 4 ranks with the default model
/// costs 5 + 480 / 50e3 = 5.0096 us.
double estimate_collective_us(const CollectiveRecord& r, const CommCostModel& model);

}  // namespace dtensor::trace
