// Products with vectors: dot(a, b) and mv(mat, vec) (torch::matmul of 1-D
// operands lands here; matmul of matrices decomposes to mm / bmm). Per mesh
// dim, as einsum: a sharded contraction dim on both sides -> Partial(sum).
//   dot([S(0)], [S(0)]) -> P(sum);  mv([S(0)], [R]) -> S(0);  mv([S(1)], [S(0)]) -> P(sum)
#include "core/ops/builtin_rules.h"

namespace dtensor {
namespace {

// Linear in each operand: one Partial(sum) or Partial(avg) operand, the
// other Replicate, gives that Partial.
void add_linear_partials(std::vector<DimStrategy>& c) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
    c.push_back({{Partial(op), Replicate()}, {Partial(op)}});
    c.push_back({{Replicate(), Partial(op)}, {Partial(op)}});
  }
}

DimRule dot_rule() {
  return [](const OpCall&, int) {
    std::vector<DimStrategy> c{
        {{Replicate(), Replicate()}, {Replicate()}},
        {{Shard(0), Shard(0)}, {Partial()}},
    };
    add_linear_partials(c);
    return c;
  };
}

DimRule mv_rule() {
  return [](const OpCall&, int) {
    std::vector<DimStrategy> c{
        {{Replicate(), Replicate()}, {Replicate()}},
        {{Shard(0), Replicate()}, {Shard(0)}},
        {{Shard(1), Shard(0)}, {Partial()}},
    };
    add_linear_partials(c);
    return c;
  };
}

}  // namespace

void register_vector_product_rules(ShardingRegistry& registry) {
  registry.add({"aten::dot", "aten::vdot"}, per_mesh_dim(dot_rule()));
  registry.add({"aten::mv"}, per_mesh_dim(mv_rule()));
}

}  // namespace dtensor
