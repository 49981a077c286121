// Call exchange model: for one collective call of a trace (the same seq on
// every rank), the bytes each rank sends to each other rank, for the Mesh
// panel's arrows. No ImGui.
//   CallExchange x = call_exchange(trace, /*event_index=*/3);
//   for (const RankExchange& e : x.edges) draw_arrow(e.from, e.to, e.bytes);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trace/trace_model.h"

namespace dtensor::gui {

// Note [Pairwise bytes of a collective]
// A trace records what each rank contributes (bytes) and receives (output
// bytes), not the wire pattern, which depends on the backend (ring, tree,
// NVLS). The viewer draws the logical exchange: who must get whose data,
// with each rank sending the same total as layout/comm_cost.h's ring
// formulas (ring_bytes_per_rank, which this model calls), split evenly over
// its peers (n = group size; kinds as trace::kind_of_collective reads them,
// so PyTorch's spellings draw too):
//   all_gather:      input bytes to each peer         ((n-1)/n * output)
//   reduce_scatter:  input / n to each peer           ((n-1)/n * input)
//   all_reduce:      2 * input / n to each peer       (2(n-1)/n * input)
//   all_to_all:      input / n to each peer           ((n-1)/n * input)
//   broadcast:       the root (group[0]) sends input bytes to each peer
//   scatter:         the root (group[0]) sends input / n to each peer
//   barrier:         nothing
// Ranks of the group without an event of their own (a one-rank trace) are
// assumed to do what the recorded rank did (SPMD). At most kMaxExchangeEdges
// pairs are kept (a solo-mode trace of 65,536 ranks would have billions);
// the Mesh panel draws at most kMaxPlaygroundRanks ranks anyway.

// Most (from, to) pairs call_exchange keeps.
inline constexpr size_t kMaxExchangeEdges = 1 << 16;

// Bytes `from` sends to `to` in one call.
struct RankExchange {
  int64_t from = 0;
  int64_t to = 0;
  int64_t bytes = 0;
};

// The exchange of one call.
struct CallExchange {
  int64_t seq = -1;
  std::string kind;
  // The mesh dim of the call's groups; -1 when the events do not say.
  int mesh_dim = -1;
  // The process groups taking part, each ascending, sorted.
  std::vector<std::vector<int64_t>> groups;
  // Every (from, to) pair with bytes > 0, sorted by (from, to).
  std::vector<RankExchange> edges;
  // rank -> total bytes sent in this call.
  std::map<int64_t, int64_t> sent_by_rank;
  // Largest edge, for scaling line widths (0 when there are no edges).
  int64_t max_edge_bytes = 0;
  // True when pairs past kMaxExchangeEdges were dropped.
  bool truncated = false;
};

// The bytes `rank` sends to each of its peers in `group` for a collective
// `kind` with `input_bytes` contributed (Note [Pairwise bytes of a collective]);
// none for a kind kind_of_collective does not know.
std::vector<RankExchange> pairwise_bytes(const std::string& kind, int64_t rank, int64_t input_bytes,
                                         const std::vector<int64_t>& group);

// The exchange of the call that trace.collectives[event_index] belongs to: every
// event with its seq and kind. Precondition: event_index < trace.collectives.size().
CallExchange call_exchange(const trace::CommTrace& trace, size_t event_index);

}  // namespace dtensor::gui
