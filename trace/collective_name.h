// What a traced collective's name stands for. Our traces name collectives
// exactly as layout/collective_kind.h does; other producers spell them their
// own way (PyTorch's comm_mode_log.json: "c10d_functional.all_reduce",
// "_c10d_functional.all_gather_into_tensor", c10d's "all_gather",
// "reduce_scatter", "*_coalesced"). Names are kept as written in a trace;
// readers that need the kind (costs, colours, the viewer's arrows) ask here.
//   kind_of_collective("c10d_functional.all_reduce");   // kAllReduce
//   kind_of_collective("send");                         // nullopt: other, kept as text
#pragma once

#include <optional>
#include <string_view>

#include "layout/collective_kind.h"

namespace dtensor::trace {

/// The kind `name` is a form of: our names exactly; with a
/// "c10d_functional." / "_c10d_functional." / "c10d." namespace dropped, a
/// "_coalesced" suffix dropped, and c10d's short names ("all_gather",
/// "reduce_scatter", "all_to_all", "allreduce") read as the tensor forms.
/// nullopt for any other name (point-to-point ops, names of newer writers).
std::optional<CollectiveKind> kind_of_collective(std::string_view name);

}  // namespace dtensor::trace
