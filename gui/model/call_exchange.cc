// Call exchange model. See call_exchange.h and Note [Pairwise bytes of a
// collective].
#include "gui/model/call_exchange.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "layout/comm_cost.h"
#include "trace/collective_name.h"

namespace dtensor::gui {

std::vector<RankExchange> pairwise_bytes(const std::string& kind, int64_t rank, int64_t input_bytes,
                                         const std::vector<int64_t>& group) {
  std::vector<RankExchange> out;
  const int64_t n = static_cast<int64_t>(group.size());
  const std::optional<CollectiveKind> known = trace::kind_of_collective(kind);
  if (!known || n <= 1 || input_bytes <= 0) return out;
  int64_t per_peer = 0;
  bool root_only = false;
  switch (*known) {
    case CollectiveKind::kBroadcast:  // the root's whole input to each peer
      per_peer = input_bytes, root_only = true;
      break;
    case CollectiveKind::kScatter:  // the root's piece for each peer
      per_peer = input_bytes / n, root_only = true;
      break;
    case CollectiveKind::kBarrier:
      break;
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kAllGatherIntoTensor:
    case CollectiveKind::kReduceScatterTensor:
    case CollectiveKind::kAllToAllSingle:
      // The ring total, split evenly over the peers (an all_gather's output
      // is n inputs).
      per_peer = ring_bytes_per_rank(*known, input_bytes, n * input_bytes, n) / (n - 1);
      break;
  }
  if (per_peer <= 0 || (root_only && rank != group.front())) return out;
  for (int64_t peer : group) {
    if (peer != rank) out.push_back({rank, peer, per_peer});
  }
  return out;
}

CallExchange call_exchange(const trace::CommTrace& trace, size_t event_index) {
  const trace::CollectiveRecord& chosen = trace.collectives[event_index];
  CallExchange x;
  x.seq = chosen.seq;
  x.kind = chosen.kind;
  x.mesh_dim = static_cast<int>(std::min<int64_t>(chosen.mesh_dim, 64));
  std::vector<const trace::CollectiveRecord*> call;
  std::set<int64_t> recorded;
  for (const trace::CollectiveRecord& e : trace.collectives) {
    if (e.seq != chosen.seq || e.kind != chosen.kind) continue;
    call.push_back(&e);
    recorded.insert(e.rank);
  }
  std::map<std::pair<int64_t, int64_t>, int64_t> bytes;
  std::set<std::vector<int64_t>> groups;
  auto add = [&](int64_t rank, const trace::CollectiveRecord& e,
                 const std::vector<int64_t>& group) {
    if (bytes.size() + group.size() > kMaxExchangeEdges) {
      x.truncated = true;
      return;
    }
    for (const RankExchange& edge : pairwise_bytes(e.kind, rank, e.bytes, group))
      bytes[{edge.from, edge.to}] = edge.bytes;
  };
  for (const trace::CollectiveRecord* e : call) {
    std::vector<int64_t> group = e->group;
    std::sort(group.begin(), group.end());
    groups.insert(group);
    add(e->rank, *e, e->group);
    for (int64_t peer : e->group) {
      if (x.truncated) break;
      if (!recorded.count(peer)) add(peer, *e, e->group);  // SPMD stand-in
    }
  }
  x.groups.assign(groups.begin(), groups.end());
  for (const auto& [pair, b] : bytes) {
    x.edges.push_back({pair.first, pair.second, b});
    x.sent_by_rank[pair.first] += b;
    x.max_edge_bytes = std::max(x.max_edge_bytes, b);
  }
  return x;
}

}  // namespace dtensor::gui
