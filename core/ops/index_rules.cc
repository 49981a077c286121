// Ops that read or write a tensor at positions given by index tensors:
// advanced indexing (index.Tensor, x[idx]), index_put(_) (x[idx] = v),
// index_fill and index_reduce (PyTorch 2.15's single-dim strategies). Index
// tensors hold global positions, so an indexed dim stays whole; the other
// dims of self shard with no communication, and so do the index tensors'
// own dims (each rank looks up its own part of the positions).
//   index(x [S(1)] f[8, 6], [idx [R] i64[3], None]) -> S(1), no comm
//   index(x [R], [idx [S(0)] i64[4]]) -> S(0), no comm
//   index_put(x [S(1)] f[8, 6], [idx [R]], v [S(1)] f[3, 6]) -> S(1), no comm
#include <c10/util/Exception.h>

#include <algorithm>
#include <functional>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

using detail::placement_of;

// The index tensors of index / index_put: their positions in call.inputs
// and the dims of self they index (their slots in the Tensor?[] argument 1).
struct Indices {
  std::vector<size_t> inputs;
  std::vector<int64_t> dims;
  int64_t broadcast_ndim = 0;   // rank of the broadcast index shape
  bool consecutive = true;      // indexed dims adjacent: the index dims replace them in place
};

Indices indices_of(const OpCall& call) {
  Indices ix;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (call.positions[i].arg_index != 1) continue;
    ix.inputs.push_back(i);
    ix.dims.push_back(call.positions[i].list_index);
    ix.broadcast_ndim = std::max(ix.broadcast_ndim, detail::input_ndim(call, i));
  }
  for (size_t k = 1; k < ix.dims.size(); ++k) ix.consecutive = ix.consecutive && ix.dims[k] == ix.dims[k - 1] + 1;
  return ix;
}

bool indexed(const Indices& ix, int64_t d) { return std::find(ix.dims.begin(), ix.dims.end(), d) != ix.dims.end(); }

// Where dim `d` of self lands in the result of indexing (the index dims
// replace the indexed block when it is consecutive, else go first).
int64_t result_dim(const Indices& ix, int64_t d) {
  const int64_t insert = ix.consecutive && !ix.dims.empty() ? ix.dims.front() : 0;
  if (d < insert) return d;
  const auto before = std::count_if(ix.dims.begin(), ix.dims.end(), [d](int64_t i) { return i < d; });
  return d + ix.broadcast_ndim - before;
}

// index.Tensor(self, Tensor?[] indices).
DimRule index_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const Indices ix = indices_of(call);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    // self sharded on a dim no index reads, the indices replicated.
    for (int64_t d = 0; d < detail::input_ndim(call, 0); ++d) {
      if (indexed(ix, d)) continue;
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = Shard(d);
      s.outputs[0] = Shard(result_dim(ix, d));
      candidates.push_back(s);
    }
    // The indices sharded on one broadcast dim (a size-1 dim broadcasts:
    // replicated), self replicated: each rank looks up its own positions.
    const int64_t insert = ix.consecutive && !ix.dims.empty() ? ix.dims.front() : 0;
    for (int64_t bd = 0; bd < ix.broadcast_ndim; ++bd) {
      DimStrategy s = detail::all_replicate(call);
      bool any = false;
      for (size_t i : ix.inputs) {
        const int64_t td = bd - (ix.broadcast_ndim - detail::input_ndim(call, i));
        if (td < 0 || call.inputs[i].meta.shape[static_cast<size_t>(td)] == 1) continue;
        s.inputs[i] = Shard(td);
        any = true;
      }
      if (!any) continue;
      s.outputs[0] = Shard(bd + insert);
      candidates.push_back(s);
    }
    // Gathering positions is linear in self.
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (p.is_partial() && (p.reduce_op() == ReduceOp::kSum || p.reduce_op() == ReduceOp::kAvg)) {
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = s.outputs[0] = p;
      candidates.push_back(s);
    }
    return candidates;
  };
}

// index_put(self, Tensor?[] indices, values, accumulate) and its in-place
// forms: self and values shard on a dim no index reads (values broadcast
// against the indexed result: a dim it lacks or has of size 1 is
// replicated); a Partial(sum) self and values stay Partial (both writing
// and accumulating are linear in the two).
DimRule index_put_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const Indices ix = indices_of(call);
    const size_t values = call.inputs.size() - 1;
    const int64_t values_ndim = detail::input_ndim(call, values);
    int64_t non_indexed = 0;
    for (int64_t d = 0; d < detail::input_ndim(call, 0); ++d) non_indexed += indexed(ix, d) ? 0 : 1;
    const int64_t result_ndim = ix.broadcast_ndim + non_indexed;
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    int64_t i = 0;  // rank of d among the non-indexed dims
    for (int64_t d = 0; d < detail::input_ndim(call, 0); ++d) {
      if (indexed(ix, d)) continue;
      const int64_t in_result = ix.consecutive && !ix.dims.empty() ? result_dim(ix, d) : ix.broadcast_ndim + i;
      ++i;
      const int64_t vd = in_result - (result_ndim - values_ndim);
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = s.outputs[0] = Shard(d);
      if (vd >= 0 && call.inputs[values].meta.shape[static_cast<size_t>(vd)] != 1) s.inputs[values] = Shard(vd);
      candidates.push_back(s);
    }
    // Self or values Partial(sum): both become Partial(sum) (a Replicate
    // one splits for free, as in PyTorch 2.15's single-dim row).
    const Placement sum = Partial(ReduceOp::kSum);
    if (placement_of(call, 0, mesh_dim) == sum || placement_of(call, values, mesh_dim) == sum) {
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = s.inputs[values] = s.outputs[0] = sum;
      candidates.push_back(s);
    }
    return candidates;
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
    return detail::shard_dims_except(call, mesh_dim, {detail::dim_arg(call, 1, 0)}, [&](int64_t d) {
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
    return detail::shard_dims_except(call, mesh_dim, {detail::dim_arg(call, 1, 0)}, [&](int64_t d) {
      return DimStrategy{{Shard(d), Replicate(), Shard(d)}, {Shard(d)}};
    });
  };
}

}  // namespace

void register_index_rules(ShardingRegistry& registry) {
  registry.add({"aten::index.Tensor"}, detail::single_dim_rule(index_rule()));
  // _index_put_impl is what _index_put_impl.out derives from.
  registry.add({"aten::index_put", "aten::index_put_", "aten::_index_put_impl", "aten::_index_put_impl_"},
               detail::single_dim_rule(index_put_rule()));
  registry.add({"aten::index_fill", "aten::index_fill_"}, detail::single_dim_rule(index_fill_rule()));
  registry.add({"aten::index_reduce", "aten::index_reduce_"}, detail::single_dim_rule(index_reduce_rule()));
}

}  // namespace dtensor
