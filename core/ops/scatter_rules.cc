// Ops that write or pad part of a tensor along one dim: slice_scatter,
// select_scatter, diagonal_scatter and constant_pad_nd (PyTorch 2.15's
// single-dim strategies; index_fill and index_reduce are in index_rules.cc). The written or
// padded dims stay whole, since local positions there would depend on
// global offsets; every other dim shards with no communication.
//   slice_scatter(x [S(1)], src [S(1)], dim=0, 1, 3) -> S(1), no comm
//   constant_pad_nd(x [S(0)] f[4, 6], [1, 1]) -> S(0);  of x [S(1)] -> x gathered
#include <c10/util/Exception.h>

#include <algorithm>
#include <functional>

#include "core/compat/torch_compat.h"
#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

using detail::placement_of;

// Every tensor Partial(op) for the reductions a positionwise replacement
// keeps exact: sum, avg, min, max (both operands partial the same way).
std::vector<DimStrategy> partial_pass_through(const OpCall& call) {
  std::vector<DimStrategy> rows;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax}) {
    rows.push_back(detail::every_tensor_as(call, Partial(op)));
  }
  return rows;
}

// slice_scatter(self, src, dim=0, start, end, step): src matches self off `dim`.
DimRule slice_scatter_rule() {
  return [](const OpCall& call, int mesh_dim) {
    return detail::shard_dims_except(call, mesh_dim, {detail::dim_arg(call, 2, 0)},
                            [&](int64_t d) { return detail::every_tensor_as(call, Shard(d)); },
                            partial_pass_through(call));
  };
}

// select_scatter(self, src, dim, index): src lacks `dim`.
DimRule select_scatter_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t dim = detail::dim_arg(call, 2, 0);
    return detail::shard_dims_except(call, mesh_dim, {dim}, [&](int64_t d) {
      return DimStrategy{{Shard(d), Shard(d < dim ? d : d - 1)}, {Shard(d)}};
    });
  };
}

// diagonal_scatter(self, src, offset=0, dim1=0, dim2=1): src lacks dim1 and
// dim2 and has the diagonal appended.
DimRule diagonal_scatter_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t dim1 = detail::dim_arg(call, 3, 0), dim2 = detail::dim_arg(call, 4, 1);
    return detail::shard_dims_except(call, mesh_dim, {dim1, dim2}, [&](int64_t d) {
      const int64_t removed = (d > std::min(dim1, dim2) ? 1 : 0) + (d > std::max(dim1, dim2) ? 1 : 0);
      return DimStrategy{{Shard(d), Shard(d - removed)}, {Shard(d)}};
    });
  };
}

// constant_pad_nd(self, pad, value): padded dims stay whole. At padded
// positions every rank writes the same value, so avg, max and min stay
// Partial; sum only when nothing is padded or the value is 0 (the value's
// zeroness is part of the sharding cache key, Note [Sharding cache key]).
DimRule constant_pad_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t ndim = detail::input_ndim(call, 0);
    const std::vector<int64_t> pad = call.arg(1).toIntVector();
    std::vector<int64_t> padded;
    for (size_t i = 0; i + 1 < pad.size(); i += 2) {
      if (pad[i] != 0 || pad[i + 1] != 0) padded.push_back(ndim - 1 - static_cast<int64_t>(i / 2));
    }
    const bool zero_value = call.num_args() < 3 || call.arg(2).isNone() || call.arg(2).toScalar().equal(0);
    std::vector<DimStrategy> partial_rows;
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
      if (op == ReduceOp::kSum && !padded.empty() && !zero_value) continue;
      partial_rows.push_back(detail::every_tensor_as(call, Partial(op)));
    }
    return detail::shard_dims_except(call, mesh_dim, padded, [&](int64_t d) { return detail::every_tensor_as(call, Shard(d)); },
                            partial_rows);
  };
}

// LibTorch before 2.0 refuses constant_pad_nd of an empty dim that the pad
// list covers, even padded by 0 ("resulted in a negative output size"), so
// there such a dim is never split into an empty piece (6 columns over 4
// ranks are 2, 2, 2, 0). Later versions run it.
PlanCheck constant_pad_check() {
  if (DTENSOR_TORCH_AT_LEAST(2, 0)) return nullptr;
  return [](const OpCall& call, const std::vector<Placements>& inputs) {
    const int64_t ndim = detail::input_ndim(call, 0);
    const auto covered = static_cast<int64_t>(call.arg(1).toIntVector().size() / 2);
    for (int64_t d = std::max<int64_t>(ndim - covered, 0); d < ndim; ++d) {
      if (detail::piece_sizes(call.inputs[0].meta.shape, call.mesh, inputs[0], d).count(0) > 0) return false;
    }
    return true;
  };
}

}  // namespace

void register_scatter_rules(ShardingRegistry& registry) {
  registry.add({"aten::slice_scatter"}, detail::single_dim_rule(slice_scatter_rule(), {/*allow_uneven=*/true}));
  registry.add({"aten::select_scatter"}, detail::single_dim_rule(select_scatter_rule()));
  registry.add({"aten::diagonal_scatter"}, detail::single_dim_rule(diagonal_scatter_rule()));
  registry.add({"aten::constant_pad_nd"}, detail::single_dim_rule(constant_pad_rule(), {false, constant_pad_check()}));
}

}  // namespace dtensor
