// Call exchange model. See call_exchange.h and Note [Pairwise bytes of a
// collective].
#include "gui/model/call_exchange.h"

#include <algorithm>
#include <set>
#include <utility>

namespace dtensor::gui {

std::vector<RankExchange> pairwise_bytes(const std::string& kind, int64_t rank,
                                         int64_t input_bytes, const std::vector<int64_t>& group) {
  std::vector<RankExchange> out;
  const int64_t n = static_cast<int64_t>(group.size());
  if (n <= 1 || input_bytes <= 0) return out;
  int64_t per_peer = 0;
  bool root_only = false;
  if (kind == "all_gather_into_tensor" || kind == "all_gather") {
    per_peer = input_bytes;
  } else if (kind == "reduce_scatter_tensor" || kind == "all_to_all_single") {
    per_peer = input_bytes / n;
  } else if (kind == "all_reduce") {
    per_peer = (2 * input_bytes + n - 1) / n;
  } else if (kind == "broadcast") {
    per_peer = input_bytes, root_only = true;
  } else if (kind == "scatter") {
    per_peer = input_bytes / n, root_only = true;
  }
  if (per_peer <= 0 || (root_only && rank != group.front())) return out;
  for (int64_t peer : group) {
    if (peer != rank) out.push_back({rank, peer, per_peer});
  }
  return out;
}

CallExchange call_exchange(const Trace& trace, size_t event_index) {
  const TraceEvent& chosen = trace.events[event_index];
  CallExchange x;
  x.seq = chosen.seq;
  x.kind = chosen.kind;
  x.mesh_dim = chosen.mesh_dim;
  std::vector<const TraceEvent*> call;
  std::set<int64_t> recorded;
  for (const TraceEvent& e : trace.events) {
    if (e.seq != chosen.seq || e.kind != chosen.kind) continue;
    call.push_back(&e);
    recorded.insert(e.rank);
  }
  std::map<std::pair<int64_t, int64_t>, int64_t> bytes;
  std::set<std::vector<int64_t>> groups;
  auto add = [&](int64_t rank, const TraceEvent& e, const std::vector<int64_t>& group) {
    if (bytes.size() + group.size() > kMaxExchangeEdges) {
      x.truncated = true;
      return;
    }
    for (const RankExchange& edge : pairwise_bytes(e.kind, rank, e.bytes, group))
      bytes[{edge.from, edge.to}] = edge.bytes;
  };
  for (const TraceEvent* e : call) {
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
