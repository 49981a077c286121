// Kinds of traced collective names. See collective_name.h.
#include "trace/collective_name.h"

namespace dtensor::trace {
namespace {

bool drop_prefix(std::string_view* name, std::string_view prefix) {
  if (name->substr(0, prefix.size()) != prefix) return false;
  name->remove_prefix(prefix.size());
  return true;
}

bool drop_suffix(std::string_view* name, std::string_view suffix) {
  if (name->size() < suffix.size() || name->substr(name->size() - suffix.size()) != suffix)
    return false;
  name->remove_suffix(suffix.size());
  return true;
}

}  // namespace

std::optional<CollectiveKind> kind_of_collective(std::string_view name) {
  if (std::optional<CollectiveKind> exact = parse_collective_kind(name)) return exact;
  for (std::string_view prefix : {"_c10d_functional.", "c10d_functional.", "c10d."}) {
    if (drop_prefix(&name, prefix)) break;
  }
  drop_suffix(&name, "_coalesced");
  if (std::optional<CollectiveKind> kind = parse_collective_kind(name)) return kind;
  // c10d's and older functional names of the same collectives.
  struct Alias {
    std::string_view name;
    CollectiveKind kind;
  };
  static constexpr Alias kAliases[] = {
      {"allreduce", CollectiveKind::kAllReduce},
      {"all_gather", CollectiveKind::kAllGatherIntoTensor},
      {"allgather", CollectiveKind::kAllGatherIntoTensor},
      {"all_gather_tensor", CollectiveKind::kAllGatherIntoTensor},
      {"_allgather_base", CollectiveKind::kAllGatherIntoTensor},
      {"reduce_scatter", CollectiveKind::kReduceScatterTensor},
      {"_reduce_scatter_base", CollectiveKind::kReduceScatterTensor},
      {"all_to_all", CollectiveKind::kAllToAllSingle},
      {"alltoall_base", CollectiveKind::kAllToAllSingle},
  };
  for (const Alias& alias : kAliases) {
    if (name == alias.name) return alias.kind;
  }
  return std::nullopt;
}

}  // namespace dtensor::trace
