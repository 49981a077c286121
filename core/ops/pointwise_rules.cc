// Pointwise operators with broadcasting: a sharded dim of any input shards the
// output; Partial survives only where the op is linear in it.
//   [S(0)] + [R] (broadcast row) -> S(0);  P(sum) + P(sum) -> P(sum);  P * R -> P
#include <c10/util/Exception.h>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

using detail::placement_of;

// Note [Partial through pointwise ops]
// sum_r(a_r) + sum_r(b_r) = sum_r(a_r + b_r): additive ops keep Partial(sum)
// when every input is Partial(sum) (a Replicate operand would be added n
// times). c * sum_r(a_r) = sum_r(c * a_r): multiplicative ops keep Partial
// when exactly one input, the linear one, is Partial and the rest Replicate.
// avg behaves like sum for both. Any other op (relu, exp, ...) needs the
// reduced value: its Partial inputs are reduced first.
enum class Linearity { kNone, kAdditive, kMultiplicative, kFirstArgLinear };

struct Broadcast {
  int64_t out_ndim;
  const std::vector<int64_t>* out_shape;
};

// Tensor dim of input `i` that lines up with output dim `out_dim`, or -1 when
// the input lacks it or broadcasts along it.
int64_t input_dim_for(const OpCall& call, size_t i, int64_t out_dim, const Broadcast& b) {
  const auto& shape = call.inputs[i].meta.shape;
  const int64_t d = out_dim - (b.out_ndim - static_cast<int64_t>(shape.size()));
  if (d < 0) return -1;
  if (shape[static_cast<size_t>(d)] == 1 && (*b.out_shape)[static_cast<size_t>(out_dim)] != 1) return -1;
  return d;
}

DimStrategy sharded_on(const OpCall& call, int64_t out_dim, const Broadcast& b) {
  DimStrategy s;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    int64_t d = input_dim_for(call, i, out_dim, b);
    s.inputs.push_back(d >= 0 ? Shard(d) : Replicate());
  }
  for (const auto& out : call.outputs) {
    s.outputs.push_back(out.shape == *b.out_shape ? Shard(out_dim) : Replicate());
  }
  return s;
}

bool linear_partial(const Placement& p) {
  return p.is_partial() && (p.reduce_op() == ReduceOp::kSum || p.reduce_op() == ReduceOp::kAvg);
}

// Note [Partial through a broadcast]
// c * sum_r(a_r) stays Partial for free, but when a is broadcast (a [2]
// times c [6, 6, 2]) the pending reduction grows from a's bytes to the
// output's: reducing a now is one all_reduce of 16 bytes, keeping the Partial
// one of 576 bytes wherever the result is needed whole (g18_00595: pow's
// backward multiplies a Partial exponent by the base's log, then where()
// reduces the product). Keeping it still pays when the product is summed back
// to a's shape (the gradient of a broadcast operand), so the choice follows
// PyTorch's pointwise strategy, which keeps the Partial only when it follows
// that operand: the one with the most shards, then the most dims, the first on
// ties. A broadcast Partial operand that PyTorch would not follow is reduced.
int64_t num_shards(const DTensorSpec& spec) {
  int64_t n = 1;
  for (size_t d = 0; d < spec.placements.size(); ++d) {
    if (spec.placements[d].is_shard()) n *= spec.mesh.size(static_cast<int>(d));
  }
  return n;
}

size_t followed_input(const OpCall& call) {
  size_t best = 0;
  for (size_t i = 1; i < call.inputs.size(); ++i) {
    const int64_t si = num_shards(call.inputs[i]), sb = num_shards(call.inputs[best]);
    if (si > sb || (si == sb && call.inputs[i].meta.shape.size() > call.inputs[best].meta.shape.size())) best = i;
  }
  return best;
}

bool reduce_broadcast_partial(const OpCall& call, size_t i) {
  if (call.outputs.empty() || call.self_input >= 0 || followed_input(call) == i) return false;
  int64_t in = 1, out = 1;
  for (int64_t s : call.inputs[i].meta.shape) in *= s;
  for (int64_t s : call.outputs[0].shape) out *= s;
  return in < out;
}

// Candidates that keep a Partial input Partial (See Note [Partial through
// pointwise ops]). Multiplicative ops with several Partial inputs get one
// candidate per Partial input (that one stays Partial, the others are reduced
// to Replicate): P * P costs one all_reduce, as in PyTorch, not two.
std::vector<DimStrategy> partial_candidates(const OpCall& call, int mesh_dim, Linearity lin) {
  std::vector<size_t> partial;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Placement& p = placement_of(call, i, mesh_dim);
    if (p.is_partial()) partial.push_back(i);
  }
  if (partial.empty() || lin == Linearity::kNone) return {};
  std::vector<DimStrategy> out;
  if (lin == Linearity::kAdditive) {
    const Placement p = placement_of(call, partial[0], mesh_dim);
    if (!linear_partial(p)) return {};
    DimStrategy s;
    for (size_t i = 0; i < call.inputs.size(); ++i) s.inputs.push_back(p);  // all must be Partial
    s.outputs.assign(call.outputs.size(), p);
    out.push_back(std::move(s));
    return out;
  }
  for (size_t kept : partial) {
    if (lin == Linearity::kFirstArgLinear && kept != 0) continue;
    const Placement p = placement_of(call, kept, mesh_dim);
    if (!linear_partial(p)) continue;
    if (reduce_broadcast_partial(call, kept)) continue;  // See Note [Partial through a broadcast]
    DimStrategy s;
    for (size_t i = 0; i < call.inputs.size(); ++i) s.inputs.push_back(i == kept ? p : Replicate());
    s.outputs.assign(call.outputs.size(), p);
    out.push_back(std::move(s));
  }
  return out;
}

DimRule pointwise(Linearity lin) {
  return [lin](const OpCall& call, int mesh_dim) {
    TORCH_CHECK(!call.outputs.empty(), call.describe(), ": pointwise op without outputs");
    Broadcast b{static_cast<int64_t>(call.outputs[0].shape.size()), &call.outputs[0].shape};
    std::vector<DimStrategy> candidates;
    candidates.push_back(detail::all_replicate(call));
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      const Placement& p = placement_of(call, i, mesh_dim);
      if (!p.is_shard()) continue;
      const int64_t in_ndim = static_cast<int64_t>(call.inputs[i].meta.shape.size());
      const int64_t out_dim = p.shard_dim() + (b.out_ndim - in_ndim);
      if (out_dim >= 0 && input_dim_for(call, i, out_dim, b) == p.shard_dim()) {
        candidates.push_back(sharded_on(call, out_dim, b));
      }
    }
    for (DimStrategy& partial : partial_candidates(call, mesh_dim, lin)) candidates.push_back(std::move(partial));
    return candidates;
  };
}

// maximum / minimum keep Partial(max) / Partial(min): max(max_r a_r, b) =
// max_r max(a_r, b). Inputs that are Partial(op) stay, the others become
// Replicate (a Partial of another kind is reduced), as PyTorch's
// partial_preserving_ops do.
std::optional<DimStrategy> preserving_candidate(const OpCall& call, int mesh_dim, ReduceOp op) {
  DimStrategy s;
  bool any = false;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Placement& p = placement_of(call, i, mesh_dim);
    const bool keep = p.is_partial() && p.reduce_op() == op;
    any = any || keep;
    s.inputs.push_back(keep ? p : Replicate());
  }
  if (!any) return std::nullopt;
  s.outputs.assign(call.outputs.size(), Partial(op));
  return s;
}

DimRule preserving(ReduceOp op) {
  DimRule base = pointwise(Linearity::kNone);
  return [base, op](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates = base(call, mesh_dim);
    if (auto c = preserving_candidate(call, mesh_dim, op)) candidates.push_back(*c);
    return candidates;
  };
}

std::vector<std::string> with_inplace(const std::vector<std::string>& names) {
  std::vector<std::string> all = names;
  for (const auto& n : names) all.push_back(n + "_");
  return all;
}

}  // namespace

void register_pointwise_rules(ShardingRegistry& registry) {
  registry.add(with_inplace({"aten::add", "aten::sub"}), per_mesh_dim(pointwise(Linearity::kAdditive)));
  // Not linear (See Note [Partial through pointwise ops]): adding a scalar to
  // every rank's partial value adds it n times; rounding divisions and
  // masked_fill with a value are not linear either. Exact overloads win over
  // the base names above.
  registry.add({"aten::add.Scalar", "aten::add_.Scalar", "aten::add.Scalar_out", "aten::sub.Scalar",
                "aten::sub_.Scalar", "aten::sub.Scalar_out", "aten::rsub", "aten::div.Tensor_mode",
                "aten::div_.Tensor_mode", "aten::div.out_mode", "aten::div.Scalar_mode",
                "aten::div_.Scalar_mode", "aten::div.Scalar_mode_out"},
               per_mesh_dim(pointwise(Linearity::kNone)));
  registry.add(with_inplace({"aten::mul"}), per_mesh_dim(pointwise(Linearity::kMultiplicative)));
  registry.add(with_inplace({"aten::div", "aten::true_divide"}),
               per_mesh_dim(pointwise(Linearity::kFirstArgLinear)));
  registry.add(with_inplace({"aten::neg"}), per_mesh_dim(pointwise(Linearity::kMultiplicative)));
  // Linear in their first (gradient) argument, given the others replicated.
  registry.add({"aten::threshold_backward", "aten::gelu_backward", "aten::silu_backward",
                "aten::sigmoid_backward", "aten::tanh_backward", "aten::hardtanh_backward",
                "aten::leaky_relu_backward", "aten::elu_backward", "aten::softplus_backward"},
               per_mesh_dim(pointwise(Linearity::kFirstArgLinear)));
  registry.add({"aten::masked_fill", "aten::masked_fill_"}, per_mesh_dim(pointwise(Linearity::kNone)));
  registry.add(
      with_inplace({"aten::abs", "aten::relu", "aten::sigmoid", "aten::tanh", "aten::exp",
                    "aten::log", "aten::sqrt", "aten::rsqrt", "aten::sin", "aten::cos",
                    "aten::pow", "aten::addcmul", "aten::addcdiv", "aten::lerp", "aten::clamp",
                    "aten::clamp_min", "aten::clamp_max", "aten::gelu", "aten::silu",
                    "aten::eq", "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge",
                    "aten::logical_not", "aten::logical_and", "aten::logical_or",
                    "aten::reciprocal", "aten::sign", "aten::erf", "aten::log1p", "aten::expm1",
                    "aten::floor", "aten::ceil", "aten::round", "aten::trunc", "aten::fmod",
                    "aten::remainder", "aten::atan2", "aten::hardtanh", "aten::leaky_relu",
                    "aten::elu", "aten::softplus", "aten::nan_to_num", "aten::sgn",
                    "aten::bitwise_and", "aten::bitwise_or", "aten::bitwise_xor",
                    "aten::bitwise_not", "aten::square", "aten::log2", "aten::exp2",
                    "aten::tan", "aten::asin", "aten::acos", "aten::atan", "aten::sinh",
                    "aten::cosh", "aten::frac", "aten::xlogy", "aten::hypot"}),
      per_mesh_dim(pointwise(Linearity::kNone)));
  registry.add({"aten::maximum"}, per_mesh_dim(preserving(ReduceOp::kMax)));
  registry.add({"aten::minimum"}, per_mesh_dim(preserving(ReduceOp::kMin)));
  registry.add({"aten::where", "aten::isnan", "aten::isinf",
                "aten::isfinite", "aten::logical_xor"},
               per_mesh_dim(pointwise(Linearity::kNone)));
}

}  // namespace dtensor
