// The reduction operators of collectives and of Partial placements.
// Header-only, pure C++: part of the layout vocabulary that backends/ and
// core/ share (See ARCHITECTURE.md, "Layers").
//   ReduceOp op = parse_reduce_op("avg").value();   // ReduceOp::kAvg
//   reduce_op_name(op);                              // "avg"
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace dtensor {

// How values held by several ranks combine into one, as c10d::ReduceOp and
// PyTorch's Partial(reduce_op) spell it. kAvg is a sum divided by the group size.
enum class ReduceOp { kSum, kAvg, kMax, kMin, kProduct };

// The lower-case name PyTorch uses in Partial's repr: "sum", "avg", "max",
// "min", "product". Example: reduce_op_name(ReduceOp::kMax) == "max".
inline const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kProduct:
      return "product";
  }
  return "unknown";
}

// Parses a name produced by reduce_op_name, ignoring ASCII case so that
// c10d's upper-case spellings ("SUM", "PRODUCT") work too. Returns nullopt for
// anything else. Example: parse_reduce_op("Sum") == ReduceOp::kSum.
inline std::optional<ReduceOp> parse_reduce_op(std::string_view name) {
  constexpr ReduceOp kAll[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax,
                               ReduceOp::kMin, ReduceOp::kProduct};
  auto lower = [](char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  };
  for (ReduceOp op : kAll) {
    std::string_view candidate = reduce_op_name(op);
    if (candidate.size() != name.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < name.size() && same; ++i) {
      same = lower(name[i]) == candidate[i];
    }
    if (same) return op;
  }
  return std::nullopt;
}

}  // namespace dtensor
