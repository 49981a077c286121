// Pointwise operators with broadcasting: a sharded dim of any input shards the
// output; Partial survives where the op commutes with its reduction.
//   [S(0)] + [R] (broadcast row) -> S(0);  P(sum) + P(sum) -> P(sum);  P * R -> P;
//   floor(P(max)) -> P(max);  P(avg) + R -> P(avg)
#include <c10/util/Exception.h>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

// Note [Pointwise ops split no dim smaller than the group]
// PyTorch 2.15 filters its pointwise strategies with is_tensor_shardable: an
// input is never redistributed onto a shard of a dim with fewer elements
// than the ranks that split it, while an input already laid out so keeps
// its layout (`detail::tensor_shardable` with allow_uneven). Without the
// filter, sub of [1, 5] Replicate and [1, 5] S(0) on 4 ranks split the
// Replicate operand (1, 0, 0, 0 rows) and its gradient was gathered later
// (v18_0223); with it, 260 more corpus programs are identical to 2.15's
// records and 3 open ones close.
ShardingRule shardable_pointwise(DimRule rule) {
  return per_mesh_dim(std::move(rule), [](const OpCall& call, const std::vector<Placements>& inputs) {
    return detail::tensor_shardable(call, inputs, /*allow_uneven=*/true);
  });
}

using detail::placement_of;

// Note [Partial through pointwise ops]
// Which Partial placements an op carries through, as rows of PyTorch 2.15's
// single-dim pointwise rules (_ops/_pointwise_ops.py): {out, in_0, in_1, ...}.
//   linear:    sum_r(a_r) + sum_r(b_r) = sum_r(a_r + b_r), c * sum_r(a_r) = sum_r(c * a_r);
//              avg behaves like sum; a Replicate operand of an add would be
//              added n times under P(sum), once under P(avg|max|min).
//   monotone:  f(max_r a_r) = max_r f(a_r) for f non-decreasing on its whole
//              domain (floor, exp, tanh, ...); non-increasing f swaps max and min.
//   max/min:   max(max_r a_r, b) = max_r max(a_r, b), and max distributes over min.
// A row applies when every Partial it names for an input is that input's
// current placement, or Replicate made Partial locally (R -> P(sum|avg)); the
// other inputs are redistributed to the row's placements. Ops with no row
// (relu of a P(sum), ...) reduce their Partial inputs first.
using PartialRow = std::vector<Placement>;
using PartialRows = std::vector<PartialRow>;

const Placement kR = Replicate();
const Placement kSum = Partial(ReduceOp::kSum);
const Placement kAvg = Partial(ReduceOp::kAvg);
const Placement kMax = Partial(ReduceOp::kMax);
const Placement kMin = Partial(ReduceOp::kMin);

PartialRows with(PartialRows rows, const PartialRows& more) {
  rows.insert(rows.end(), more.begin(), more.end());
  return rows;
}

// One unary input (also a binary op with a scalar operand, as mul.Scalar).
const PartialRows kUnaryLinear = {{kSum, kSum}, {kAvg, kAvg}};
const PartialRows kAdditive = {{kSum, kSum, kSum}, {kAvg, kAvg, kAvg}, {kAvg, kAvg, kR},
                               {kMax, kMax, kR},   {kMin, kMin, kR},   {kAvg, kR, kAvg}};
const PartialRows kMultiplicative =
    with(kUnaryLinear, {{kSum, kSum, kR}, {kAvg, kAvg, kR}, {kSum, kR, kSum}, {kAvg, kR, kAvg}});
const PartialRows kFirstArgLinear = with(kUnaryLinear, {{kSum, kSum, kR}, {kAvg, kAvg, kR}});
const PartialRows kNonDecreasing = {{kMax, kMax}, {kMin, kMin}};
const PartialRows kNonIncreasing = {{kMin, kMax}, {kMax, kMin}};
const PartialRows kNegation = with(kUnaryLinear, {{kMin, kMax}, {kMax, kMin}});
const PartialRows kMonotoneBinary = {{kMax, kMax, kR}, {kMax, kR, kMax}, {kMin, kMin, kR}, {kMin, kR, kMin}};

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

// Note [Partial through a broadcast]
// c * sum_r(a_r) stays Partial for free, but when a is broadcast (a [2]
// times c [6, 6, 2]) the pending reduction grows from a's bytes to the
// output's (g18_00595: pow's backward multiplies a Partial exponent by the
// base's log, and where() then reduces the 576-byte product). PyTorch 2.11's
// pointwise strategy kept the Partial only when it followed that operand
// (the one with the most shards, then the most dims), and so did we; PyTorch
// 2.15's single-dim rows keep it whatever the shapes (g18_01511: mul of a
// P(avg) [6, 1] by [6, 5], no collective), and so do we now: over the corpus
// 1,592 -> 1,601 programs identical to 2.15's records, 18 -> 13 with an open
// difference (against 2.11: 10 fewer identical, all explained by rows).

// Whether input `i`, now `current`, may take `wanted` for a row: the same
// placement, or a Replicate made P(sum|avg) locally; for an op that writes
// its result into a tensor, also a shard zero-filled into P(sum) (Note
// [Written tensors zero-fill a sharded operand] in sharding_registry.cc).
bool row_accepts(const Placement& current, const Placement& wanted, bool writes) {
  if (!wanted.is_partial()) return true;  // Replicate: redistributed to it
  if (current == wanted) return true;
  if (writes && current.is_shard() && wanted.reduce_op() == ReduceOp::kSum) return true;
  return current.is_replicate() && (wanted.reduce_op() == ReduceOp::kSum || wanted.reduce_op() == ReduceOp::kAvg);
}

// Candidates that keep Partial inputs Partial: the rows of `rows` with one
// placement per input that keep at least one current Partial (See Note
// [Partial through pointwise ops]).
std::vector<DimStrategy> partial_candidates(const OpCall& call, int mesh_dim, const PartialRows& rows) {
  std::vector<DimStrategy> out;
  const bool writes = call.self_input >= 0 || call.out_placements != nullptr;
  for (const PartialRow& row : rows) {
    if (row.size() != call.inputs.size() + 1) continue;
    bool keeps = false, accepted = true;
    for (size_t i = 0; i < call.inputs.size() && accepted; ++i) {
      const Placement& current = placement_of(call, i, mesh_dim);
      const Placement& wanted = row[i + 1];
      accepted = row_accepts(current, wanted, writes);
      keeps = keeps || (wanted.is_partial() && current == wanted);
    }
    // A broadcast Partial operand stays Partial too: Note [Partial through a broadcast].
    if (!accepted || !keeps) continue;
    DimStrategy s;
    s.inputs.assign(row.begin() + 1, row.end());
    s.outputs.assign(call.outputs.size(), row[0]);
    out.push_back(std::move(s));
  }
  return out;
}

DimRule pointwise(PartialRows rows = {}) {
  return [rows = std::move(rows)](const OpCall& call, int mesh_dim) {
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
    // An out= call's out tensor shards the output where no input does: PyTorch
    // offers every dim (Note [Derived rules: out= and in-place overloads]).
    if (call.out_placements != nullptr) {
      const Placement& out = (*call.out_placements)[static_cast<size_t>(mesh_dim)];
      if (out.is_shard() && out.shard_dim() < b.out_ndim) candidates.push_back(sharded_on(call, out.shard_dim(), b));
    }
    for (DimStrategy& partial : partial_candidates(call, mesh_dim, rows)) candidates.push_back(std::move(partial));
    return candidates;
  };
}

std::vector<std::string> with_inplace(const std::vector<std::string>& names) {
  std::vector<std::string> all = names;
  for (const auto& n : names) all.push_back(n + "_");
  return all;
}

// The rest of PyTorch 2.15's pointwise lists (_pointwise_ops.py), each with
// 2.15's Partial rows; the in-place forms by name, the out= forms derived
// (Note [Derived rules: out= and in-place overloads]).
void register_more_pointwise_rules(ShardingRegistry& registry) {
  registry.add(with_inplace({"aten::asinh", "aten::deg2rad", "aten::rad2deg", "aten::threshold"}),
               shardable_pointwise(pointwise(kNonDecreasing)));
  registry.add({"aten::hardshrink", "aten::special_modified_bessel_i1"}, shardable_pointwise(pointwise(kNonDecreasing)));
  registry.add({"aten::erfc", "aten::erfc_", "aten::special_erfcx"}, shardable_pointwise(pointwise(kNonIncreasing)));
  registry.add({"aten::logaddexp", "aten::logaddexp2"}, shardable_pointwise(pointwise(kMonotoneBinary)));
  registry.add({"aten::fmax"}, shardable_pointwise(pointwise(with(kMonotoneBinary, {{kMax, kMax, kMax}}))));
  registry.add({"aten::fmin"}, shardable_pointwise(pointwise(with(kMonotoneBinary, {{kMin, kMin, kMin}}))));
  // Non-increasing on x > 0 only: a P(min) input's smallest piece stays in
  // the domain, a P(max)'s may not (2.15's positive-domain rows).
  registry.add({"aten::special_modified_bessel_k0", "aten::special_modified_bessel_k1",
                "aten::special_scaled_modified_bessel_k0", "aten::special_scaled_modified_bessel_k1"},
               shardable_pointwise(pointwise({{kMax, kMin}})));
  // xlog1py(x, y) = x * log1p(y): linear in x with y replicated.
  registry.add({"aten::special_xlog1py", "aten::special_xlog1py.other_scalar"},
               shardable_pointwise(pointwise(kFirstArgLinear)));
  // No Partial survives these: a Partial input is reduced first.
  registry.add(with_inplace({"aten::acosh", "aten::atanh", "aten::celu", "aten::copysign", "aten::digamma",
                             "aten::erfinv", "aten::gcd", "aten::lcm", "aten::hardsigmoid", "aten::heaviside",
                             "aten::i0", "aten::igamma", "aten::igammac", "aten::ldexp", "aten::lgamma",
                             "aten::log10", "aten::logit", "aten::mish", "aten::mvlgamma", "aten::nextafter",
                             "aten::polygamma", "aten::sinc", "aten::bitwise_left_shift",
                             "aten::bitwise_right_shift"}),
               shardable_pointwise(pointwise()));
  registry.add({"aten::angle", "aten::frexp", "aten::isneginf", "aten::isposinf", "aten::logit_backward",
                "aten::signbit", "aten::softshrink", "aten::__lshift__", "aten::__rshift__",
                "aten::__ilshift__", "aten::__irshift__", "aten::special_airy_ai", "aten::special_bessel_j0",
                "aten::special_bessel_j1", "aten::special_bessel_y0", "aten::special_bessel_y1",
                "aten::special_chebyshev_polynomial_t", "aten::special_chebyshev_polynomial_u",
                "aten::special_chebyshev_polynomial_v", "aten::special_chebyshev_polynomial_w",
                "aten::special_entr", "aten::special_hermite_polynomial_h", "aten::special_hermite_polynomial_he",
                "aten::special_i0e", "aten::special_i1", "aten::special_i1e", "aten::special_laguerre_polynomial_l",
                "aten::special_legendre_polynomial_p", "aten::special_log_ndtr",
                "aten::special_modified_bessel_i0", "aten::special_ndtri",
                "aten::special_shifted_chebyshev_polynomial_t", "aten::special_shifted_chebyshev_polynomial_u",
                "aten::special_shifted_chebyshev_polynomial_v", "aten::special_shifted_chebyshev_polynomial_w",
                "aten::special_spherical_bessel_j0", "aten::special_xlog1py.self_scalar", "aten::special_zeta"},
               shardable_pointwise(pointwise()));
}

}  // namespace

void register_pointwise_rules(ShardingRegistry& registry) {
  registry.add(with_inplace({"aten::add", "aten::sub"}), shardable_pointwise(pointwise(kAdditive)));
  // Not linear (See Note [Partial through pointwise ops]): adding a scalar to
  // every rank's partial value adds it n times; rounding divisions and
  // masked_fill with a value are not linear either. Exact overloads win over
  // the base names above.
  registry.add({"aten::add.Scalar", "aten::add_.Scalar", "aten::add.Scalar_out", "aten::sub.Scalar",
                "aten::sub_.Scalar", "aten::sub.Scalar_out", "aten::rsub", "aten::div.Tensor_mode",
                "aten::div_.Tensor_mode", "aten::div.out_mode", "aten::div.Scalar_mode",
                "aten::div_.Scalar_mode", "aten::div.Scalar_mode_out"},
               shardable_pointwise(pointwise()));
  registry.add(with_inplace({"aten::mul"}), shardable_pointwise(pointwise(kMultiplicative)));
  registry.add(with_inplace({"aten::div", "aten::true_divide"}), shardable_pointwise(pointwise(kFirstArgLinear)));
  registry.add(with_inplace({"aten::neg"}), shardable_pointwise(pointwise(kNegation)));
  // Linear in their first (gradient) argument, given the others replicated.
  registry.add({"aten::threshold_backward", "aten::gelu_backward", "aten::silu_backward",
                "aten::sigmoid_backward", "aten::tanh_backward", "aten::hardtanh_backward",
                "aten::leaky_relu_backward", "aten::elu_backward", "aten::softplus_backward"},
               shardable_pointwise(pointwise(kFirstArgLinear)));
  registry.add({"aten::masked_fill", "aten::masked_fill_"}, shardable_pointwise(pointwise()));
  // Non-decreasing on their whole domain (not log, sqrt, asin, ...: a
  // P(max)'s smaller values may leave the domain).
  registry.add(with_inplace({"aten::relu", "aten::sigmoid", "aten::tanh", "aten::exp", "aten::sign",
                             "aten::erf", "aten::expm1", "aten::floor", "aten::ceil", "aten::round",
                             "aten::trunc", "aten::nan_to_num", "aten::sgn", "aten::exp2",
                             "aten::atan", "aten::sinh"}),
               shardable_pointwise(pointwise(kNonDecreasing)));
  registry.add(
      with_inplace({"aten::abs", "aten::log", "aten::sqrt", "aten::rsqrt", "aten::sin", "aten::cos",
                    "aten::pow", "aten::addcmul", "aten::addcdiv", "aten::lerp", "aten::clamp",
                    "aten::clamp_min", "aten::clamp_max", "aten::gelu", "aten::silu",
                    "aten::eq", "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge",
                    "aten::logical_not", "aten::logical_and", "aten::logical_or",
                    "aten::reciprocal", "aten::log1p", "aten::fmod",
                    "aten::remainder", "aten::atan2", "aten::hardtanh", "aten::leaky_relu",
                    "aten::elu", "aten::softplus",
                    "aten::bitwise_and", "aten::bitwise_or", "aten::bitwise_xor",
                    "aten::bitwise_not", "aten::square", "aten::log2",
                    "aten::tan", "aten::asin", "aten::acos", "aten::cosh", "aten::frac",
                    "aten::xlogy", "aten::hypot"}),
      shardable_pointwise(pointwise()));
  // Monotone in both arguments: clamp_min/clamp_max by a tensor, maximum, minimum.
  registry.add({"aten::maximum", "aten::clamp_min.Tensor", "aten::clamp_min_.Tensor"},
               shardable_pointwise(pointwise(with(kMonotoneBinary, {{kMax, kMax, kMax}}))));
  registry.add({"aten::minimum", "aten::clamp_max.Tensor", "aten::clamp_max_.Tensor"},
               shardable_pointwise(pointwise(with(kMonotoneBinary, {{kMin, kMin, kMin}}))));
  registry.add({"aten::where", "aten::isnan", "aten::isinf",
                "aten::isfinite", "aten::logical_xor"},
               shardable_pointwise(pointwise()));
  register_more_pointwise_rules(registry);
}

}  // namespace dtensor
