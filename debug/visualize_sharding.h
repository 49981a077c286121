// visualize_sharding for DTensors: the layout table of layout/'s
// visualize_sharding, printed by one rank only (as PyTorch's prints on rank 0).
//   debug::visualize_sharding(w, "net1.weight");   // rank 0 of w's mesh prints
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace dtensor::debug {

/// The table of which rank holds which block of DTensor `dtensor` (1-D or
/// 2-D), on every rank. Throws c10::Error for a plain tensor or another rank
/// count (naming the shape).
std::string sharding_table(const at::Tensor& dtensor, std::string_view header = "");

/// Writes sharding_table(dtensor, header) to `out` on one rank only:
/// `print_rank` (a global rank of the mesh), by default the mesh's first rank
/// (mesh coordinate all zeros). Returns whether this rank printed. Every rank
/// may call it; no collective is issued. Example:
///   debug::visualize_sharding(w, "w");   // prints on rank 0 only
bool visualize_sharding(const at::Tensor& dtensor, std::string_view header = "",
                        std::ostream& out = std::cout, std::optional<int64_t> print_rank = std::nullopt);

}  // namespace dtensor::debug
