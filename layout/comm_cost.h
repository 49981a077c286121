// Comm cost model: per-rank bytes of each collective with ring formulas, and
// an alpha-beta time estimate. Pure arithmetic, no devices. What each
// placement transition costs is in transitions.h, built on these.
//   CommCostModel model;                         // 5 us + 0.5 us per ring step, 50 GB/s
//   model.collective_us(/*bytes_per_rank=*/1 << 20,
//                       ring_steps(CollectiveKind::kAllGatherIntoTensor, 4));  // ~27.5 us
#pragma once

#include <cstdint>
#include <vector>

#include "layout/collective_kind.h"
#include "layout/mesh_shape.h"
#include "layout/placement.h"

namespace dtensor {

// Note [Comm cost model]
// An alpha-beta model: a collective costs latency_us + ring steps *
// step_latency_us + bytes_per_rank / bandwidth, a local op costs 0. A ring
// over n ranks takes n-1 steps, an all_reduce 2(n-1) (a reduce_scatter pass,
// then an all_gather pass), each paying a hop's latency; PyTorch's
// allgather_cost / allreduce_cost count hops alike (6.6 us + 0.6 us per hop).
// For small tensors the steps decide: on 2 ranks an all_reduce costs a step
// (25 kB at the defaults) more than an all_gather, so DTensor gathers a
// 384-byte shard rather than all_reduce a 256-byte Partial operand
// (issue #18, g18_00645). bytes_per_rank is what one rank sends (= receives) in a
// ring implementation, as in OneFlow's boxing cost comments and PyTorch's
// redistribute cost (n = group size, i.e. the mesh dim size):
//   all_gather:     (n-1)/n * output bytes
//   reduce_scatter: (n-1)/n * input bytes
//   all_reduce:     2(n-1)/n * bytes   (a reduce_scatter then an all_gather)
//   all_to_all:     (n-1)/n * bytes    (every rank keeps 1/n of its input)
// Uneven shards: collectives run on PADDED buffers (every rank's piece padded
// to the largest torch.chunk piece, ceil(size / n)), as DTensor's redistribute
// pads before all_gather / reduce_scatter / all_to_all, so bytes use the padded
// sizes. For AG/RS/A2A the padded buffer is a multiple of n so the bytes are
// exact; all_reduce bytes are rounded up. Overflow saturates at INT64_MAX.
// The defaults are illustrative NVLink-ish numbers, not a measurement: the
// planner ranks plans by (collective count, bytes), never by this estimate.

// Alpha-beta parameters. GB means 1e9 bytes.
// Example: CommCostModel{/*latency_us=*/10.0, /*bandwidth_gbytes_per_s=*/25.0}.
struct CommCostModel {
  double latency_us = 5.0;       // starting one collective
  double bandwidth_gbytes_per_s = 50.0;
  double step_latency_us = 0.5;  // each step of a ring (a hop's latency)

  // Time of one collective in microseconds: latency_us + ring_steps *
  // step_latency_us + bytes_per_rank / (bandwidth_gbytes_per_s * 1e3).
  // Example: CommCostModel{}.collective_us(50'000, /*ring_steps=*/2) == 7.0.
  double collective_us(int64_t bytes_per_rank, int64_t ring_steps) const;
  // The latency of a collective of `ring_steps` steps as bytes: what the
  // bandwidth moves meanwhile (250'000 + 25'000 per step for the defaults).
  // Strategy costs add it per collective.
  double latency_bytes(int64_t ring_steps) const {
    return (latency_us + static_cast<double>(ring_steps) * step_latency_us) * bandwidth_gbytes_per_s * 1e3;
  }
};

// Steps of a ring implementation of `kind` over n ranks: 2(n-1) for an
// all_reduce, n-1 for every other kind, 0 when n <= 1.
// Example: ring_steps(CollectiveKind::kAllReduce, 4) == 6.
int64_t ring_steps(CollectiveKind kind, int64_t n);

// S(d)->R: all_gather, (n-1)/n * output bytes. Precondition: bytes >= 0, n >= 1.
// Example: all_gather_bytes_per_rank(/*output_bytes=*/32, /*n=*/4) == 24.
int64_t all_gather_bytes_per_rank(int64_t output_bytes, int64_t n);
// P->S(d): reduce_scatter, (n-1)/n * input bytes. Example: (32, 4) -> 24.
int64_t reduce_scatter_bytes_per_rank(int64_t input_bytes, int64_t n);
// P->R: all_reduce, 2(n-1)/n * bytes, rounded up. Example: (20, 4) -> 30.
int64_t all_reduce_bytes_per_rank(int64_t bytes, int64_t n);
// S(d)->S(e): all_to_all, (n-1)/n * input bytes. Example: (32, 4) -> 24.
int64_t all_to_all_bytes_per_rank(int64_t input_bytes, int64_t n);

// Bytes one rank sends in a ring implementation of a collective of `kind` over
// n ranks, from what this rank contributes (`input_bytes`) and receives into its
// output (`output_bytes`): the four formulas above; broadcast and scatter
// count the input bytes, barrier 0; n <= 1 gives 0.
// Example: ring_bytes_per_rank(kAllGatherIntoTensor, 8, 32, 4) == 24.
int64_t ring_bytes_per_rank(CollectiveKind kind, int64_t input_bytes, int64_t output_bytes,
                            int64_t n);

// n * ceil(size / n): a dim of `size` elements padded so that n equal pieces
// cover it, as collectives pad uneven pieces; saturates at INT64_MAX.
// Example: padded_extent(5, 4) == 8.
int64_t padded_extent(int64_t size, int64_t n);

// The largest piece one of n ranks holds when `split` (a Shard or a
// StridedShard) cuts `size` elements: ceil(size / n) for a Shard; for
// StridedShard(d, sf) the sum over its sf torch.chunk pieces of ceil(piece / n)
// (rank 0 holds the largest sub-piece of each). Example: (9, 4, _S(0, 2)) == 3.
int64_t padded_split_extent(int64_t size, int64_t n, const Placement& split);

// Bytes of a dense buffer of `shape` with elements of `element_size` bytes;
// saturates at INT64_MAX. Example: buffer_bytes({2, 3}, 4) == 24.
int64_t buffer_bytes(const std::vector<int64_t>& shape, int64_t element_size);

// The largest local extent of every tensor dim under `placements` (the
// padded piece: nested ceil(size / n) over the mesh dims sharding that dim,
// mesh dim 0 first). Precondition: placements normalized and valid.
// Example: ({5, 3}, Mesh(2, 2), [S(0), S(0)]) -> [2, 3] (5 -> 3 -> 2).
std::vector<int64_t> padded_local_shape(const std::vector<int64_t>& global_shape,
                                        const MeshShape& mesh, const Placements& placements);

}  // namespace dtensor
