// Matrix products. Per mesh dim, as einsum "mk,kn->mn": shard m -> rows of
// the output, shard n -> columns, shard k on both -> Partial(sum).
//   mm([S(0)], [R]) -> S(0);  mm([R], [S(1)]) -> S(1);  mm([S(1)], [S(0)]) -> P(sum)
#include <c10/util/Exception.h>

#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

// mm-like candidates for inputs (a, b) whose matrix dims start at `batch`
// (0 for mm, 1 for bmm); batch dims shard all three together. The product is
// linear in each operand, so one Partial(sum) or Partial(avg) operand with
// the other Replicate gives that Partial (PyTorch's LINEAR_REDUCE_OPS):
// mean_r(a_r) @ b = mean_r(a_r @ b).
std::vector<DimStrategy> matmul_candidates(int64_t batch) {
  const int64_t m = batch, k_a = batch + 1, k_b = batch, n = batch + 1;
  std::vector<DimStrategy> c = {
      {{Replicate(), Replicate()}, {Replicate()}},
      {{Shard(m), Replicate()}, {Shard(m)}},
      {{Replicate(), Shard(n)}, {Shard(n)}},
      {{Shard(k_a), Shard(k_b)}, {Partial()}},
  };
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
    c.push_back({{Partial(op), Replicate()}, {Partial(op)}});
    c.push_back({{Replicate(), Partial(op)}, {Partial(op)}});
  }
  if (batch == 1) c.push_back({{Shard(0), Shard(0)}, {Shard(0)}});
  return c;
}

// The placement of an addmm/baddbmm bias that matches output placement `out`
// under broadcasting.
Placement bias_placement(const TensorMeta& bias, const TensorMeta& out, const Placement& p) {
  if (p.is_partial()) return p;
  if (!p.is_shard()) return Replicate();
  const int64_t offset = static_cast<int64_t>(out.shape.size() - bias.shape.size());
  const int64_t d = p.shard_dim() - offset;
  if (d < 0 || bias.shape[static_cast<size_t>(d)] == 1) return Replicate();
  return Shard(d);
}

DimRule mm_rule(int64_t batch) {
  return [batch](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates = matmul_candidates(batch);
    for (auto& c : candidates) {
      while (c.inputs.size() < call.inputs.size()) c.inputs.push_back(Replicate());  // out=
      while (c.outputs.size() < call.outputs.size()) c.outputs.push_back(c.outputs[0]);
    }
    detail::drop_partial_to_tiny_shard(call, mesh_dim, candidates);
    detail::discourage_tiny_shards(call, mesh_dim, candidates);
    detail::drop_shards_unless_an_input_is_sharded(call, candidates);
    return candidates;
  };
}

// addmm(bias, a, b): the mm candidates with the bias placed to match.
DimRule addmm_rule(int64_t batch) {
  return [batch](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates;
    for (const DimStrategy& mm : matmul_candidates(batch)) {
      DimStrategy s;
      s.outputs.assign(call.outputs.size(), mm.outputs[0]);
      s.inputs.push_back(bias_placement(call.inputs[0].meta, call.outputs[0], mm.outputs[0]));
      s.inputs.push_back(mm.inputs[0]);
      s.inputs.push_back(mm.inputs[1]);
      while (s.inputs.size() < call.inputs.size()) s.inputs.push_back(mm.outputs[0]);  // out=
      candidates.push_back(s);
    }
    detail::drop_partial_to_tiny_shard(call, mesh_dim, candidates);
    detail::discourage_tiny_shards(call, mesh_dim, candidates);
    detail::drop_shards_unless_an_input_is_sharded(call, candidates);
    return candidates;
  };
}

}  // namespace

void register_matrix_rules(ShardingRegistry& registry) {
  registry.add({"aten::mm"}, per_mesh_dim(mm_rule(0)));
  registry.add({"aten::bmm"}, per_mesh_dim(mm_rule(1)));
  registry.add({"aten::addmm", "aten::addmm_"}, per_mesh_dim(addmm_rule(0)));
  registry.add({"aten::baddbmm", "aten::baddbmm_"}, per_mesh_dim(addmm_rule(1)));
}

}  // namespace dtensor
