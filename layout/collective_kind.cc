// Names of the collectives. See collective_kind.h.
#include "layout/collective_kind.h"

namespace dtensor {

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGatherIntoTensor:
      return "all_gather_into_tensor";
    case CollectiveKind::kReduceScatterTensor:
      return "reduce_scatter_tensor";
    case CollectiveKind::kAllToAllSingle:
      return "all_to_all_single";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kScatter:
      return "scatter";
    case CollectiveKind::kBarrier:
      return "barrier";
  }
  return "unknown";
}

std::optional<CollectiveKind> parse_collective_kind(std::string_view name) {
  for (CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGatherIntoTensor,
        CollectiveKind::kReduceScatterTensor, CollectiveKind::kAllToAllSingle,
        CollectiveKind::kBroadcast, CollectiveKind::kScatter, CollectiveKind::kBarrier}) {
    if (name == collective_name(kind)) return kind;
  }
  return std::nullopt;
}

}  // namespace dtensor
