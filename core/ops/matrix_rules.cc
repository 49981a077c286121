// Matrix products (mm, bmm, addmm, baddbmm; float8 _scaled_mm and the
// mixture-of-experts _grouped_mm). Per mesh dim, as einsum "mk,kn->mn":
// shard m -> rows of the output, shard n -> columns, shard k on both ->
// Partial(sum).
//   mm([S(0)], [R]) -> S(0);  mm([R], [S(1)]) -> S(1);  mm([S(1)], [S(0)]) -> P(sum)
#include <c10/util/Exception.h>

#include <optional>
#include <vector>

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
  return detail::broadcast_operand_shard(bias.shape, static_cast<int64_t>(out.shape.size()), p.shard_dim());
}

DimRule mm_rule(int64_t batch) {
  return [batch](const OpCall& call, int /*mesh_dim*/) {
    std::vector<DimStrategy> candidates = matmul_candidates(batch);
    for (auto& c : candidates) {
      while (c.inputs.size() < call.inputs.size()) c.inputs.push_back(Replicate());  // out=
      while (c.outputs.size() < call.outputs.size()) c.outputs.push_back(c.outputs[0]);
    }
    return candidates;
  };
}

// addmm(bias, a, b): the mm candidates with the bias placed to match.
DimRule addmm_rule(int64_t batch) {
  return [batch](const OpCall& call, int /*mesh_dim*/) {
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
    return candidates;
  };
}

// Note [Scaled and grouped matrix products]
// _scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, fast)
// (float8 matmuls) is mm with its scales placed per candidate, as PyTorch
// 2.15: a one-element scale is Replicate; a 2-D scale (row-wise [M, 1],
// column-wise [1, N]) follows its operand's shard where it has that dim,
// else Replicate (PyTorch copies the operand's placement, which its
// shardability check then drops for a size-1 dim); a 1-D blockwise scale
// follows a non-contracting shard as Shard(0) and rules out a contracting
// one; a Partial operand keeps its scale Replicate (scaling is linear).
// bias and scale_result are refused, as PyTorch refuses them.
// _grouped_mm(a, b, offs, bias, out_dtype) (mixture-of-experts: G groups of
// rows or of the contracted dim, given by offs) takes PyTorch 2.15's
// candidates per operand rank (2-D x 3-D, 3-D x 2-D, 2-D x 2-D, 3-D x 3-D),
// offs always Replicate, and its check that each rank's pieces keep the
// 16-byte stride alignment the kernel requires (CPU and CUDA).
std::optional<Placement> scale_placement(const TensorMeta& scale, const Placement& data, int64_t contracting) {
  int64_t numel = 1;
  for (int64_t d : scale.shape) numel *= d;
  if (numel == 1 || data.is_partial() || data.is_replicate()) return Replicate();
  if (scale.shape.size() != 1) {
    const int64_t d = data.shard_dim();
    if (d >= static_cast<int64_t>(scale.shape.size()) || scale.shape[static_cast<size_t>(d)] == 1) return Replicate();
    return data;
  }
  if (data.shard_dim() == contracting) return std::nullopt;
  return Shard(0);
}

DimRule scaled_mm_rule() {
  return [](const OpCall& call, int) {
    TORCH_CHECK(call.num_args() < 5 || (call.arg(4).isNone() && call.arg(5).isNone()), call.describe(),
                ": _scaled_mm on DTensors takes no bias or scale_result (as in PyTorch); add the bias after");
    std::vector<DimStrategy> candidates;
    for (DimStrategy mm : matmul_candidates(0)) {
      const std::optional<Placement> sa = scale_placement(call.inputs[2].meta, mm.inputs[0], 1);
      const std::optional<Placement> sb = scale_placement(call.inputs[3].meta, mm.inputs[1], 0);
      if (!sa || !sb) continue;
      mm.inputs.push_back(*sa);
      mm.inputs.push_back(*sb);
      candidates.push_back(mm);
    }
    return candidates;
  };
}

// [output, mat_a, mat_b] rows of PyTorch 2.15's grouped_mm strategy.
std::vector<DimStrategy> grouped_mm_candidates(size_t a_ndim, size_t b_ndim) {
  const Placement R = Replicate(), P = Partial();
  std::vector<std::vector<Placement>> rows = {{P, P, R}, {P, R, P}};
  if (a_ndim == 2 && b_ndim == 3) rows.insert(rows.end(), {{Shard(1), R, Shard(2)}, {P, Shard(1), Shard(1)}});
  if (a_ndim == 3 && b_ndim == 2) rows.insert(rows.end(), {{P, Shard(2), Shard(0)}, {Shard(0), Shard(1), R}});
  if (a_ndim == 2 && b_ndim == 2) rows.insert(rows.end(), {{Shard(2), R, Shard(1)}, {Shard(1), Shard(0), R}});
  if (a_ndim == 3 && b_ndim == 3) {
    rows.insert(rows.end(), {{Shard(2), R, Shard(2)}, {Shard(1), Shard(1), R}, {P, Shard(2), Shard(1)},
                             {Shard(0), Shard(0), Shard(0)}});
  }
  std::vector<DimStrategy> candidates{{{R, R}, {R}}};
  for (const auto& row : rows) candidates.push_back({{row[1], row[2]}, {row[0]}});
  return candidates;
}

DimRule grouped_mm_rule() {
  return [](const OpCall& call, int) {
    TORCH_CHECK(call.num_args() < 4 || call.arg(3).isNone(), call.describe(),
                ": _grouped_mm on DTensors takes no bias (as in PyTorch); add the bias after");
    std::vector<DimStrategy> candidates =
        grouped_mm_candidates(call.inputs[0].meta.shape.size(), call.inputs[1].meta.shape.size());
    for (DimStrategy& c : candidates) {
      while (c.inputs.size() < call.inputs.size()) c.inputs.push_back(Replicate());  // offs
    }
    return candidates;
  };
}

// PyTorch's _valid_grouped_mm_strides on every rank's pieces: a row-major
// operand's rows (a column-major one's columns) span a multiple of 16 bytes.
bool grouped_mm_strides_aligned(const OpCall& call, const std::vector<Placements>& inputs) {
  for (size_t i = 0; i < 2; ++i) {
    const TensorMeta& meta = call.inputs[i].meta;
    const int64_t end = static_cast<int64_t>(meta.shape.size()) - 1;
    const int64_t alignment = 16 / static_cast<int64_t>(c10::elementSize(meta.dtype));
    const int64_t leading = meta.stride[static_cast<size_t>(end)] == 1 ? end : end - 1;
    for (int64_t size : detail::piece_sizes(meta.shape, call.mesh, inputs[i], leading)) {
      if (size % alignment != 0) return false;
    }
  }
  return true;
}

}  // namespace

void register_matrix_rules(ShardingRegistry& registry) {
  // Note [Matrix products split no dim smaller than the group]
  // PyTorch 2.15 expands mm, bmm, addmm and baddbmm (and t) from single-dim
  // strategies and drops every whole-mesh strategy that puts an input on a
  // shard of a dim with fewer elements than the ranks splitting it
  // (is_tensor_shardable, without allow_uneven_sharding): such an input is
  // gathered, even one already laid out so. We did keep those (and only
  // priced an all_to_all onto them one latency more), which was cheaper at
  // the op but not over a program: the matmul of a [1, 1, 4] P(sum) by a
  // [4, 1] [R, S(1), S(1)] kept the weight's size-1 shards, and its
  // backward then gathered them at t (g18_01597, one all_reduce more than
  // PyTorch). Matching the filter made 32 more corpus programs identical to
  // 2.15's records and none open.
  registry.add({"aten::mm"}, detail::single_dim_rule(mm_rule(0)));
  registry.add({"aten::bmm"}, detail::single_dim_rule(mm_rule(1)));
  registry.add({"aten::addmm", "aten::addmm_"}, detail::single_dim_rule(addmm_rule(0)));
  registry.add({"aten::baddbmm", "aten::baddbmm_"}, detail::single_dim_rule(addmm_rule(1)));
  registry.add({"aten::_scaled_mm"}, detail::single_dim_rule(scaled_mm_rule()));
  registry.add({"aten::_grouped_mm"}, detail::single_dim_rule(grouped_mm_rule(), {false, grouped_mm_strides_aligned}));
}

}  // namespace dtensor
