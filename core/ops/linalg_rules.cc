// Linear algebra on batches of matrices [*, m, n] (PyTorch 2.15's rules):
// factorizations, inverses, determinants and solves work on the last two
// dims, so every batch dim shards with no communication; solves are linear
// in their right-hand side, so a Partial(sum|avg) one stays Partial with the
// factor replicated. SVD, QR, eigh and the diagonal ops are replicated, as in
// PyTorch 2.15.
//   linalg_inv_ex(A [S(0)] f[4, 3, 3]) -> S(0) x2, no comm
//   linalg_solve_triangular(A [R], B [P(sum)]) -> P(sum)
#include <c10/util/Exception.h>

#include <string>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

using detail::placement_of;

// Input `linear` (the right-hand side) Partial(op) with every other input
// replicated gives outputs Partial(op) at `partial_outputs`, Replicate elsewhere.
struct LinearInput {
  size_t input = 0;
  std::vector<size_t> partial_outputs = {0};
};

// True when dim `d` is the same batch dim of every tensor: each has the
// first input's leading batch dims (its rank is that rank minus 0, 1 or 2:
// matrices, vectors like pivots and tau, per-matrix scalars like info) and
// the same size there. A right-hand side with more batch dims than the
// factor broadcasts against it: the dims do not line up, so none is offered
// (sharding one operand of a broadcast would change the local result).
bool batch_dim_everywhere(const OpCall& call, int64_t d) {
  const int64_t ndim = detail::input_ndim(call, 0);
  const int64_t size = call.inputs[0].meta.shape[static_cast<size_t>(d)];
  for (const DTensorSpec& in : call.inputs) {
    const auto rank = static_cast<int64_t>(in.meta.shape.size());
    if (rank > ndim || rank < ndim - 2 || d >= rank || in.meta.shape[static_cast<size_t>(d)] != size) return false;
  }
  return true;
}

DimRule batch_dims_rule(std::optional<LinearInput> linear = std::nullopt) {
  return [linear](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    for (int64_t d = 0; d + 2 < detail::input_ndim(call, 0); ++d) {
      if (batch_dim_everywhere(call, d)) candidates.push_back(detail::every_tensor_as(call, Shard(d)));
    }
    if (linear && linear->input < call.inputs.size()) {
      const Placement& p = placement_of(call, linear->input, mesh_dim);
      if (p.is_partial() && (p.reduce_op() == ReduceOp::kSum || p.reduce_op() == ReduceOp::kAvg)) {
        DimStrategy s = detail::all_replicate(call);
        s.inputs[linear->input] = p;
        for (size_t o : linear->partial_outputs) {
          if (o < s.outputs.size()) s.outputs[o] = p;
        }
        candidates.push_back(s);
      }
    }
    return candidates;
  };
}

// linalg_solve_triangular(A, B): also B sharded on the batch dims it has
// beyond A's (A broadcasts along them) with A replicated. PyTorch 2.15 offers
// every batch dim of B, which is wrong where A has that dim too: the local A
// keeps all its matrices and broadcasting pairs them with the wrong ones.
DimRule solve_triangular_rule() {
  DimRule base = batch_dims_rule(LinearInput{1});
  return [base](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates = base(call, mesh_dim);
    for (int64_t d = 0; d < detail::input_ndim(call, 1) - detail::input_ndim(call, 0); ++d) {
      candidates.push_back(DimStrategy{{Replicate(), Shard(d)}, {Shard(d)}});
    }
    return candidates;
  };
}

// linalg_pinv.atol_rtol_tensor(self, *, atol?, rtol?): batch dims of self;
// the tolerances (scalar tensors) replicated.
DimRule pinv_rule() {
  return [](const OpCall& call, int) {
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    for (int64_t d = 0; d + 2 < detail::input_ndim(call, 0); ++d) {
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = s.outputs[0] = Shard(d);
      candidates.push_back(s);
    }
    return candidates;
  };
}

DimRule replicate_only() {
  return [](const OpCall& call, int) { return std::vector<DimStrategy>{detail::all_replicate(call)}; };
}

}  // namespace

void register_linalg_rules(ShardingRegistry& registry) {
  registry.add({"aten::cholesky_inverse", "aten::linalg_matrix_exp", "aten::linalg_householder_product",
                "aten::geqrf", "aten::linalg_cholesky_ex", "aten::linalg_eig", "aten::linalg_inv_ex",
                "aten::triangular_solve", "aten::_linalg_det", "aten::linalg_ldl_factor_ex", "aten::linalg_lu",
                "aten::linalg_lu_factor_ex", "aten::lu_unpack", "aten::_linalg_slogdet", "aten::_linalg_check_errors"},
               detail::single_dim_rule(batch_dims_rule(), {/*allow_uneven=*/true}));
  registry.add({"aten::cholesky_solve"}, detail::single_dim_rule(batch_dims_rule(LinearInput{0}), {/*allow_uneven=*/true}));  // (B, A)
  registry.add({"aten::linalg_lu_solve", "aten::linalg_ldl_solve", "aten::ormqr"},
               detail::single_dim_rule(batch_dims_rule(LinearInput{2}), {/*allow_uneven=*/true}));  // (factor, pivots or tau, B)
  registry.add({"aten::_linalg_solve_ex"}, detail::single_dim_rule(batch_dims_rule(LinearInput{1}), {/*allow_uneven=*/true}));  // (A, B) -> result, LU, pivots, info
  registry.add({"aten::linalg_solve_triangular"}, detail::single_dim_rule(solve_triangular_rule(), {/*allow_uneven=*/true}));
  registry.add({"aten::linalg_pinv.atol_rtol_tensor"}, detail::single_dim_rule(pinv_rule(), {/*allow_uneven=*/true}));
  registry.add({"aten::_linalg_svd", "aten::linalg_qr", "aten::_linalg_eigh", "aten::diagonal", "aten::diagonal_copy",
                "aten::diag_embed"},
               detail::single_dim_rule(replicate_only()));
}

}  // namespace dtensor
