// Ops that write or pad part of a tensor along one dim: slice_scatter,
// select_scatter, diagonal_scatter, index_fill, index_reduce and
// constant_pad_nd (PyTorch 2.15's single-dim strategies). The written or
// padded dims stay whole, since local positions there would depend on
// global offsets; every other dim shards with no communication.
//   slice_scatter(x [S(1)], src [S(1)], dim=0, 1, 3) -> S(1), no comm
//   constant_pad_nd(x [S(0)] f[4, 6], [1, 1]) -> S(0);  of x [S(1)] -> x gathered
#include <c10/util/Exception.h>

#include <algorithm>
#include <functional>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

using detail::placement_of;

// Candidates: all-Replicate, then for every dim d of self (input 0) but the
// `kept` ones, `row(d)` (inputs and outputs sharded accordingly), then the
// Partial rows that keep input 0's current Partial.
std::vector<DimStrategy> shard_other_dims(const OpCall& call, int mesh_dim, const std::vector<int64_t>& kept,
                                          const std::function<DimStrategy(int64_t)>& row,
                                          const std::vector<DimStrategy>& partial_rows = {}) {
  std::vector<DimStrategy> candidates{detail::all_replicate(call)};
  for (int64_t d = 0; d < detail::input_ndim(call, 0); ++d) {
    if (std::find(kept.begin(), kept.end(), d) == kept.end()) candidates.push_back(row(d));
  }
  const Placement& p = placement_of(call, 0, mesh_dim);
  for (const DimStrategy& s : partial_rows) {
    if (p.is_partial() && s.inputs[0] == p) candidates.push_back(s);
  }
  return candidates;
}

// Every tensor Partial(op) for the reductions a positionwise replacement
// keeps exact: sum, avg, min, max (both operands partial the same way).
std::vector<DimStrategy> partial_pass_through(const OpCall& call) {
  std::vector<DimStrategy> rows;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax}) {
    rows.push_back(detail::every_tensor_as(call, Partial(op)));
  }
  return rows;
}

int64_t dim_arg(const OpCall& call, size_t arg, int64_t fallback) {
  return detail::wrap_dim(detail::int_arg(call, arg, fallback), detail::input_ndim(call, 0));
}

// slice_scatter(self, src, dim=0, start, end, step): src matches self off `dim`.
DimRule slice_scatter_rule() {
  return [](const OpCall& call, int mesh_dim) {
    return shard_other_dims(call, mesh_dim, {dim_arg(call, 2, 0)},
                            [&](int64_t d) { return detail::every_tensor_as(call, Shard(d)); },
                            partial_pass_through(call));
  };
}

// select_scatter(self, src, dim, index): src lacks `dim`.
DimRule select_scatter_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t dim = dim_arg(call, 2, 0);
    return shard_other_dims(call, mesh_dim, {dim}, [&](int64_t d) {
      return DimStrategy{{Shard(d), Shard(d < dim ? d : d - 1)}, {Shard(d)}};
    });
  };
}

// diagonal_scatter(self, src, offset=0, dim1=0, dim2=1): src lacks dim1 and
// dim2 and has the diagonal appended.
DimRule diagonal_scatter_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t dim1 = dim_arg(call, 3, 0), dim2 = dim_arg(call, 4, 1);
    return shard_other_dims(call, mesh_dim, {dim1, dim2}, [&](int64_t d) {
      const int64_t removed = (d > std::min(dim1, dim2) ? 1 : 0) + (d > std::max(dim1, dim2) ? 1 : 0);
      return DimStrategy{{Shard(d), Shard(d - removed)}, {Shard(d)}};
    });
  };
}

// index_fill(self, dim, index, value): the index is replicated; a scalar value
// is the same on every rank, so only idempotent reductions (avg, max, min)
// stay Partial; a 0-d tensor value is replaced as is, so all four do when it
// is Partial the same way (inputs: self, index[, value]).
DimRule index_fill_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const bool tensor_value = call.inputs.size() == 3;
    std::vector<DimStrategy> partial_rows;
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax}) {
      if (!tensor_value && op == ReduceOp::kSum) continue;
      DimStrategy s{{Partial(op), Replicate()}, {Partial(op)}};
      if (tensor_value) s.inputs.push_back(Partial(op));
      partial_rows.push_back(s);
    }
    return shard_other_dims(call, mesh_dim, {dim_arg(call, 1, 0)}, [&](int64_t d) {
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = s.outputs[0] = Shard(d);
      return s;
    }, partial_rows);
  };
}

// index_reduce(self, dim, index, source, reduce, include_self): source
// matches self off `dim`; none of its reductions ("prod", "mean", "amax",
// "amin") keeps a Partial.
DimRule index_reduce_rule() {
  return [](const OpCall& call, int mesh_dim) {
    return shard_other_dims(call, mesh_dim, {dim_arg(call, 1, 0)}, [&](int64_t d) {
      return DimStrategy{{Shard(d), Replicate(), Shard(d)}, {Shard(d)}};
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
    return shard_other_dims(call, mesh_dim, padded, [&](int64_t d) { return detail::every_tensor_as(call, Shard(d)); },
                            partial_rows);
  };
}

}  // namespace

void register_scatter_rules(ShardingRegistry& registry) {
  registry.add({"aten::slice_scatter"}, detail::single_dim_rule(slice_scatter_rule()));
  registry.add({"aten::select_scatter"}, detail::single_dim_rule(select_scatter_rule()));
  registry.add({"aten::diagonal_scatter"}, detail::single_dim_rule(diagonal_scatter_rule()));
  registry.add({"aten::index_fill", "aten::index_fill_"}, detail::single_dim_rule(index_fill_rule()));
  registry.add({"aten::index_reduce", "aten::index_reduce_"}, detail::single_dim_rule(index_reduce_rule()));
  registry.add({"aten::constant_pad_nd"}, detail::single_dim_rule(constant_pad_rule()));
}

}  // namespace dtensor
