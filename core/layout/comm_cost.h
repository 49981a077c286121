// Comm cost model for redistribute steps: the step kinds (which collective or
// local op), per-rank bytes with ring formulas on padded buffers, and an
// alpha-beta time estimate. Pure arithmetic, no devices.
//   CommCostModel model;                                    // 5 us, 50 GB/s
//   model.estimate_us(StepKind::kAllGather, /*bytes_per_rank=*/1 << 20);  // ~26 us
#pragma once

#include <cstdint>
#include <vector>

#include "core/layout/mesh_shape.h"
#include "core/layout/placement.h"

namespace dtensor {

// What one redistribute step does on one mesh dim: a collective over the
// group along that mesh dim, or a local op (no communication).
enum class StepKind {
  kAllGather,       // S(d) -> R
  kAllToAll,        // S(d) -> S(e)
  kAllReduce,       // P(op) -> R
  kReduceScatter,   // P(op) -> S(d)
  kLocalChunk,      // R -> S(d): keep this rank's torch.chunk piece
  kLocalPartition,  // R -> P(sum): divide by the mesh dim size; R -> P(avg): keep
  kLocalRelabel,    // any change on a size-1 mesh dim: data unchanged
};

// The name PyTorch's functional collectives (and CommDebugMode) use:
// "all_gather_into_tensor", "all_to_all_single", "all_reduce",
// "reduce_scatter_tensor"; local kinds give "local_chunk", "local_partition"
// and "local". Example: step_kind_name(StepKind::kAllToAll) == "all_to_all_single".
const char* step_kind_name(StepKind kind);

// True for the four kinds that communicate (all_gather, all_to_all,
// all_reduce, reduce_scatter). Example: is_collective(StepKind::kLocalChunk) == false.
bool is_collective(StepKind kind);

// Note [Comm cost model]
// An alpha-beta model: a collective costs latency_us + bytes_per_rank / bandwidth,
// a local op costs 0. bytes_per_rank is what one rank sends (= receives) in a
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
  double latency_us = 5.0;
  double bandwidth_gbytes_per_s = 50.0;

  // Time of one step in microseconds: 0 for local kinds, else
  // latency_us + bytes_per_rank / (bandwidth_gbytes_per_s * 1e3).
  // Example: CommCostModel{}.estimate_us(StepKind::kAllReduce, 50'000) == 6.0.
  double estimate_us(StepKind kind, int64_t bytes_per_rank) const;
};

// S(d)->R: all_gather, (n-1)/n * output bytes. Precondition: bytes >= 0, n >= 1.
// Example: all_gather_bytes_per_rank(/*output_bytes=*/32, /*n=*/4) == 24.
int64_t all_gather_bytes_per_rank(int64_t output_bytes, int64_t n);
// P->S(d): reduce_scatter, (n-1)/n * input bytes. Example: (32, 4) -> 24.
int64_t reduce_scatter_bytes_per_rank(int64_t input_bytes, int64_t n);
// P->R: all_reduce, 2(n-1)/n * bytes, rounded up. Example: (20, 4) -> 30.
int64_t all_reduce_bytes_per_rank(int64_t bytes, int64_t n);
// S(d)->S(e): all_to_all, (n-1)/n * input bytes. Example: (32, 4) -> 24.
int64_t all_to_all_bytes_per_rank(int64_t input_bytes, int64_t n);

// The largest local extent of every tensor dim under `placements` (the
// padded piece: nested ceil(size / n) over the mesh dims sharding that dim,
// mesh dim 0 first). Precondition: placements normalized and valid.
// Example: ({5, 3}, Mesh(2, 2), [S(0), S(0)]) -> [2, 3] (5 -> 3 -> 2).
std::vector<int64_t> padded_local_shape(const std::vector<int64_t>& global_shape,
                                        const MeshShape& mesh, const Placements& placements);

// Bytes one rank moves when mesh dim `mesh_dim` goes from before[mesh_dim] to
// `to` with `kind`, computed from the CURRENT logical shape: the extents that
// the other mesh dims of `before` leave (padded, max over ranks), then the ring
// formula of `kind` on the padded buffer. Local kinds give 0. See Note [Comm
// cost model]. Preconditions: placements normalized, element_size >= 1, and
// `kind` matches the transition (e.g. kAllGather needs a Shard before).
// Example: ({5}, 4 bytes, Mesh(4), [S(0)], 0, R, kAllGather) -> 3/4 * (4*2*4) = 24.
int64_t step_bytes_per_rank(const std::vector<int64_t>& global_shape, int64_t element_size,
                            const MeshShape& mesh, const Placements& before, int mesh_dim,
                            const Placement& to, StepKind kind);

}  // namespace dtensor
