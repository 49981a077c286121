// The one vocabulary of collectives: what the backends issue, what the
// redistribute planner's steps need, what traces record. Pure C++17.
//   collective_name(CollectiveKind::kAllToAllSingle);       // "all_to_all_single"
//   parse_collective_kind("reduce_scatter_tensor");         // kReduceScatterTensor
#pragma once

#include <optional>
#include <string_view>

namespace dtensor {

// The logical collectives, named as PyTorch's functional collectives.
enum class CollectiveKind {
  kAllReduce,
  kAllGatherIntoTensor,
  kReduceScatterTensor,
  kAllToAllSingle,
  kBroadcast,
  kScatter,
  kBarrier,
};

// "all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor",
// "all_to_all_single", "broadcast", "scatter", "barrier" (CommDebugMode's
// names, and the `kind` field of the comm-trace JSON).
const char* collective_name(CollectiveKind kind);

// Reads a name produced by collective_name; nullopt for anything else.
// Example: parse_collective_kind("all_reduce") == CollectiveKind::kAllReduce.
std::optional<CollectiveKind> parse_collective_kind(std::string_view name);

}  // namespace dtensor
