// Neural-network building blocks: embedding and its backward, layer norm and
// its backward, and the random fills (bernoulli_, uniform_, normal_,
// exponential_, geometric_, log_normal_; dropout's native_dropout).
//   embedding(weight [S(1)], idx [R]) -> S(-1), no comm;  embedding(weight [S(0)], idx [R]) -> P(sum), masked
//   native_layer_norm(x [S(0)] f[B,T,H], {H}) -> S(0) x3, no comm
#include <ATen/Functions.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"
#include "core/random.h"

namespace dtensor {
namespace {

using detail::placement_of;

// ---------------------------------------------------------------- embedding

// Note [Row-wise embedding masking]
// With the weight sharded by rows ([S(0)], vocabulary parallel) and the
// indices replicated, each rank looks up only the rows it holds: indices
// outside [offset, offset + rows) produce zeros, and the sum over ranks is the
// full lookup, so the output is Partial(sum), as PyTorch's _MaskPartial (one
// all_reduce or reduce_scatter when it is consumed). The rule names the local
// kernel kMaskedEmbedding (See Note [Local kernels]), which shifts the indices
// to this rank's rows, runs the op on them and zeroes the rows it does not hold.
constexpr const char* kMaskedEmbedding = "dtensor::masked_embedding";

void masked_embedding(const LocalCall& local, std::vector<c10::IValue>* stack) {
  const DTensorSpec weight_spec = local.call.inputs[0].with_placements(local.plan.input_placements[0]);
  const int64_t offset = weight_spec.global_offset()[0];
  const int64_t rows = weight_spec.local_shape()[0];
  const at::Tensor weight = (*stack)[0].toTensor();
  const at::Tensor indices = (*stack)[1].toTensor().sub(offset);
  const at::Tensor outside = indices.lt(0).logical_or_(indices.ge(rows));
  if (rows == 0) {  // this rank holds no rows: every lookup is outside
    auto shape = indices.sizes().vec();
    shape.push_back(weight.size(1));
    *stack = {at::zeros(shape, weight.options())};
    return;
  }
  (*stack)[1] = indices.masked_fill(outside, 0);
  local.call.op->callBoxed(stack);
  (*stack)[0].toTensor().masked_fill_(outside.unsqueeze(-1), 0);
}

DimRule embedding_dim_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t out_last = detail::output_ndim(call, 0) - 1;
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    candidates.push_back({{Shard(1), Replicate()}, {Shard(out_last)}});
    candidates.push_back({{Shard(0), Replicate()}, {Partial()}});
    for (int64_t k = 0; k < detail::input_ndim(call, 1); ++k) {
      candidates.push_back({{Replicate(), Shard(k)}, {Shard(k)}});
    }
    const Placement& w = placement_of(call, 0, mesh_dim);
    if (w.is_partial()) candidates.push_back({{w, Replicate()}, {w}});
    return candidates;
  };
}

ShardingRule embedding_rule() {
  DimRule dim_rule = embedding_dim_rule();
  return [dim_rule](const OpCall& call) {
    ShardingPlan plan = expand_per_mesh_dim(call, dim_rule);
    bool row_sharded = false;
    for (const Placement& p : plan.input_placements[0]) row_sharded = row_sharded || p.is_shard(0);
    if (row_sharded) plan.local_kernel = kMaskedEmbedding;
    return plan;
  };
}

// embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
// scale_grad_by_freq): column-wise -> S(1); batch-sharded grad and indices ->
// Partial(sum) (not with scale_grad_by_freq, whose counts must be global).
DimRule embedding_backward_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t grad_last = detail::input_ndim(call, 0) - 1;
    const bool scale_by_freq = detail::bool_arg(call, 4, false);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    candidates.push_back({{Shard(grad_last), Replicate()}, {Shard(1)}});
    if (!scale_by_freq) {
      for (int64_t k = 0; k < detail::input_ndim(call, 1); ++k) {
        candidates.push_back({{Shard(k), Shard(k)}, {Partial()}});
      }
    }
    const Placement& g = placement_of(call, 0, mesh_dim);
    if (g.is_partial() && g.reduce_op() == ReduceOp::kSum) candidates.push_back({{g, Replicate()}, {g}});
    return candidates;
  };
}

// --------------------------------------------------------------- layer norm

// Input dims before `axis` are outer (batch/sequence) dims that layer norm
// treats independently; dims from `axis` on are normalised together.
int64_t layer_norm_axis(const OpCall& call, size_t input, size_t shape_arg) {
  return detail::input_ndim(call, input) - static_cast<int64_t>(call.arg(shape_arg).toIntVector().size());
}

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd).
DimRule layer_norm_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t axis = layer_norm_axis(call, 0, 1);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (p.is_shard() && p.shard_dim() < axis) {
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = p;
      for (size_t o = 0; o < call.outputs.size(); ++o) {
        if (detail::output_ndim(call, o) > p.shard_dim()) s.outputs[o] = p;
      }
      candidates.push_back(s);
    }
    return candidates;
  };
}

// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd,
// weight?, bias?, output_mask) -> (grad_input, grad_weight, grad_bias). With
// an outer dim sharded, grad_input stays sharded and the parameter gradients
// are partial sums over the local rows. All three are linear in grad_out.
// The outer dim may be the one grad_out, input, mean or rstd is sharded on
// (mean and rstd keep the outer dims: [4, 1] for a [4, 6] input): a
// replicated grad_out and input beside a row-sharded mean slice locally and
// issue nothing, as PyTorch 2.15, where gathering mean and rstd costs two
// all_gathers.
DimRule layer_norm_backward_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t axis = layer_norm_axis(call, 1, 2);
    const int64_t weight = detail::input_at_arg(call, 5), bias = detail::input_at_arg(call, 6);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    auto params_replicated = [&](DimStrategy& s) {
      if (weight >= 0) s.inputs[static_cast<size_t>(weight)] = Replicate();
      if (bias >= 0) s.inputs[static_cast<size_t>(bias)] = Replicate();
    };
    std::vector<int64_t> row_inputs{0, 1, detail::input_at_arg(call, 3), detail::input_at_arg(call, 4)};
    std::vector<int64_t> dims_offered;
    for (int64_t i : row_inputs) {  // an outer dim some row-shaped input is sharded on
      if (i < 0) continue;
      const Placement& p = placement_of(call, static_cast<size_t>(i), mesh_dim);
      if (!p.is_shard() || p.shard_dim() >= axis) continue;
      if (std::find(dims_offered.begin(), dims_offered.end(), p.shard_dim()) != dims_offered.end()) continue;
      dims_offered.push_back(p.shard_dim());
      DimStrategy s = detail::every_tensor_as(call, p);
      params_replicated(s);
      s.outputs.assign(call.outputs.size(), Partial());
      s.outputs[0] = p;
      candidates.push_back(s);
    }
    const Placement& g = placement_of(call, 0, mesh_dim);
    if (g.is_partial() && g.reduce_op() == ReduceOp::kSum) {
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = g;
      s.outputs.assign(call.outputs.size(), g);
      candidates.push_back(s);
    }
    return candidates;
  };
}

// ------------------------------------------------------------------- random

// Note [Random ops on DTensors]
// In-place random fills (bernoulli_, uniform_, normal_, exponential_,
// geometric_, log_normal_; CPU dropout is
// empty_like + bernoulli_) draw this rank's block through the DTensor RNG
// (core/random.h, detail::random_local): replicas get equal values and shards
// are disjoint parts of one random tensor, whatever the placements. Under the
// default RandomMode::kSingleDeviceExact the global tensor does not depend on
// the placements either. A local kernel per fill (See Note [Local kernels])
// writes the block in place of the aten op. A Partial tensor becomes
// Replicate (a random fill is not a partial sum). native_dropout (what
// dropout is on CUDA) draws its mask the same way, in a local kernel of its
// own (LibTorch's would use each rank's generator).
// exponential_, geometric_ and log_normal_ transform the same draws
// (inverse CDF of a uniform; exp of a normal), so they shard alike. Under
// kSingleDeviceExact, uniform_ and normal_ run the op itself on the global
// tensor (detail::exact_fill_local): their values are one device's bit for
// bit, and a rank holding the tensor whole draws straight into its shard.
// Their out= forms (uniform.out, ..., bernoulli.float_out) fill `out` the
// same way, keeping its placements; the functional normal_functional and
// bernoulli(self) (self holds the probabilities) return a new tensor laid
// out like self; bernoulli.out fills `out` from self's probabilities, self
// redistributed to out's layout.
enum class RandomFill { kBernoulli, kUniform, kNormal, kExponential, kGeometric, kLogNormal };

// Which tensor a random op writes: self (the in-place fills), the kwarg-only
// `out` (their out= forms), or a new one laid out like self (functional).
enum class RandomTarget { kSelf, kOut, kNew };

const char* random_fill_name(RandomFill kind) {
  switch (kind) {
    case RandomFill::kBernoulli: return "bernoulli";
    case RandomFill::kUniform: return "uniform";
    case RandomFill::kNormal: return "normal";
    case RandomFill::kExponential: return "exponential";
    case RandomFill::kGeometric: return "geometric";
    case RandomFill::kLogNormal: return "log_normal";
  }
  return "";
}

// "dtensor::uniform_fill", "dtensor::uniform_fill_out", "dtensor::normal_fill_new".
std::string random_fill_kernel_name(RandomFill kind, RandomTarget target) {
  const char* suffix = target == RandomTarget::kOut ? "_out" : target == RandomTarget::kNew ? "_new" : "";
  return std::string("dtensor::") + random_fill_name(kind) + "_fill" + suffix;
}

// Schema position of the optional generator: bernoulli_.float(self, p, gen),
// exponential_(self, lambd, gen), geometric_(self, p, gen); the others take
// two numbers first (uniform_(self, from, to, gen), ...).
size_t generator_arg(RandomFill kind) {
  return kind == RandomFill::kBernoulli || kind == RandomFill::kExponential || kind == RandomFill::kGeometric ? 2 : 3;
}

// bernoulli with no probability argument (bernoulli(self), bernoulli.out:
// arguments (self, generator, ...)) takes self's values as the
// probabilities; the other fills take numbers after self.
bool probabilities_from_self(RandomFill kind, const std::vector<c10::IValue>& args) {
  return kind == RandomFill::kBernoulli && !(args.size() > 1 && args[1].isDouble());
}

// Fills this rank's block of the written tensor (its spec after the op:
// output 0's placements) and returns it, as the op does. bernoulli with no
// probability argument (bernoulli(self), bernoulli.out) takes self's values
// as the probabilities.
void fill_random_block(const LocalCall& local, std::vector<c10::IValue>& stack, RandomFill kind,
                       RandomTarget target) {
  const OpCall& call = local.call;
  const size_t written_input = target == RandomTarget::kOut ? static_cast<size_t>(call.self_input) : 0;
  // The written (or new) tensor's spec after the op is output 0's: no input
  // spec is read (the rule sets local_kernel_reads_no_specs).
  const DTensorSpec& spec = *local.output_specs[0];
  at::Tensor self;
  if (target == RandomTarget::kNew) {
    self = at::empty_like(stack[0].toTensor());
  } else {
    self = stack[call.positions[written_input].arg_index].toTensor();
  }
  const bool from_self = probabilities_from_self(kind, stack);
  RandomOptions options;
  const size_t gen_arg = from_self ? 1 : generator_arg(kind);
  if (gen_arg < stack.size() && stack[gen_arg].isGenerator()) options.generator = stack[gen_arg].toGenerator();
  const auto distribution = kind == RandomFill::kNormal || kind == RandomFill::kLogNormal
                                ? detail::RandomDistribution::kNormal
                                : detail::RandomDistribution::kUniform;
  if ((kind == RandomFill::kUniform || kind == RandomFill::kNormal) && at::isFloatingType(spec.meta.dtype) &&
      options.mode.value_or(random_mode()) == RandomMode::kSingleDeviceExact) {
    // The op itself on the global tensor: one device's values, drawn into
    // self where this rank holds it whole (uniform_ on a replicated tensor
    // costs one uniform_; issue #38).
    detail::exact_fill_local(distribution, stack[1].toDouble(), stack[2].toDouble(), spec, options,
                             "DTensor random fill", self);
    stack.clear();
    stack.emplace_back(std::move(self));
    return;
  }
  DTensorSpec draw = spec;
  if (!at::isFloatingType(draw.meta.dtype)) draw.meta.dtype = at::kFloat;
  at::Tensor u = detail::random_local(distribution, draw, self.options().dtype(draw.meta.dtype), options,
                                      "DTensor random fill");
  if (kind == RandomFill::kBernoulli) {
    self.copy_(from_self ? u.lt(stack[0].toTensor()) : u.lt(stack[1].toDouble()));
  } else if (kind == RandomFill::kUniform) {
    const double from = stack[1].toDouble(), to = stack[2].toDouble();
    self.copy_(u.mul(to - from).add_(from));
  } else if (kind == RandomFill::kNormal) {
    self.copy_(u.mul(stack[2].toDouble()).add_(stack[1].toDouble()));
  } else if (kind == RandomFill::kExponential) {  // -log(1 - u) / lambda
    self.copy_(u.neg().log1p_().div_(-stack[1].toDouble()));
  } else if (kind == RandomFill::kGeometric) {  // trials to the first success, at least 1
    self.copy_(u.neg().log1p_().div_(std::log1p(-stack[1].toDouble())).ceil_().clamp_min_(1));
  } else {  // log-normal: exp(mean + std * z)
    self.copy_(u.mul(stack[2].toDouble()).add_(stack[1].toDouble()).exp_());
  }
  stack = {self};
}

LocalKernel random_fill_kernel(RandomFill kind, RandomTarget target) {
  return [kind, target](const LocalCall& local, std::vector<c10::IValue>* stack) {
    fill_random_block(local, *stack, kind, target);
  };
}

// The written tensor keeps its placements (a Partial one becomes Replicate:
// a random fill is not a partial sum); the other inputs stay where they are,
// except probabilities (bernoulli(self), bernoulli.out), laid out as written.
ShardingRule random_fill_rule(RandomFill kind, RandomTarget target = RandomTarget::kSelf) {
  return [kind, target](const OpCall& call) {
    TORCH_CHECK(!(kind == RandomFill::kBernoulli && call.num_args() > 1 && call.arg(1).isTensor()), call.describe(),
                ": bernoulli with a tensor of probabilities `p` has no DTensor rule; pass the probabilities as "
                "self (at::bernoulli(p)), laid out as the result should be");
    ShardingPlan plan;
    const size_t written = target == RandomTarget::kOut ? static_cast<size_t>(call.self_input) : 0;
    Placements out = call.inputs[written].placements;
    for (auto& p : out) {
      if (p.is_partial()) {
        p = Replicate();
        plan.self_placements_change = target != RandomTarget::kNew;
      }
    }
    const bool from_self = probabilities_from_self(kind, *call.args);
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      plan.input_placements.push_back(i == 0 && from_self ? out : call.inputs[i].placements);
    }
    plan.output_placements.assign(call.outputs.size(), out);
    plan.local_kernel = random_fill_kernel_name(kind, target);
    plan.local_kernel_reads_no_specs = true;  // the spec it fills is output 0's
    return plan;
  };
}

// rand_like, randn_like and randint_like (with high, or low and high; their
// generator and out= forms): a new random tensor laid out as self (a Partial
// self gives Replicate: the values are not a partial sum), or filling out,
// kept as laid out. Drawn through the DTensor RNG like the fills above (one
// uniform or normal per element of the global tensor, this rank's block), so
// replicas agree: LibTorch's kernels would draw from each rank's own
// generator. Under kSingleDeviceExact, rand_like and randn_like of a
// floating dtype are one device's values (exact_fill_local); randint_like
// is floor(u * (high - low)) + low of a double uniform u.
enum class RandomLike { kRand, kRandn, kRandint };
const char* kRandomLike[] = {"dtensor::rand_like", "dtensor::randn_like", "dtensor::randint_like"};

// The schema position of argument `name`, or -1.
int64_t argument_position(const OpCall& call, const char* name) {
  const auto& args = call.op->schema().arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].name() == name) return static_cast<int64_t>(i);
  }
  return -1;
}

ShardingRule random_like_rule(RandomLike kind) {
  return [kind](const OpCall& call) {
    const int64_t high = argument_position(call, "high");
    TORCH_CHECK(high < 0 || !call.arg(static_cast<size_t>(high)).isTensor(), call.describe(),
                ": randint_like with a tensor `high` has no DTensor rule (PyTorch 2.15 has none either); pass high "
                "as an int");
    const bool out_form = call.self_input >= 0;
    Placements target = call.inputs[out_form ? static_cast<size_t>(call.self_input) : 0].placements;
    for (Placement& q : target) {
      TORCH_CHECK(!(out_form && q.is_partial()), call.describe(), ": out is laid out as ", to_string(target),
                  ", which cannot hold random values; redistribute it to Replicate first");
      if (q.is_partial()) q = Replicate();
    }
    ShardingPlan plan;
    // self gives only its shape: it stays as it is (its layout has the
    // output's local shapes, a Partial's being a Replicate's).
    for (const DTensorSpec& in : call.inputs) plan.input_placements.push_back(in.placements);
    plan.output_placements.assign(call.outputs.size(), target);
    plan.local_kernel = kRandomLike[static_cast<int>(kind)];
    plan.local_kernel_reads_no_specs = true;  // the block it draws is output 0's
    return plan;
  };
}

LocalKernel random_like_kernel(RandomLike kind) {
  return [kind](const LocalCall& local, std::vector<c10::IValue>* stack) {
    const OpCall& call = local.call;
    const DTensorSpec& spec = *local.output_specs[0];
    RandomOptions options;
    const int64_t gen = argument_position(call, "generator");
    if (gen >= 0 && (*stack)[static_cast<size_t>(gen)].isGenerator()) {
      options.generator = (*stack)[static_cast<size_t>(gen)].toGenerator();
    }
    const at::Tensor self = (*stack)[0].toTensor();
    const int64_t out_arg = argument_position(call, "out");
    at::Tensor result = out_arg >= 0 ? (*stack)[static_cast<size_t>(out_arg)].toTensor()
                                     : at::empty(self.sizes(), self.options().dtype(spec.meta.dtype));
    const auto distribution =
        kind == RandomLike::kRandn ? detail::RandomDistribution::kNormal : detail::RandomDistribution::kUniform;
    if (kind != RandomLike::kRandint && at::isFloatingType(spec.meta.dtype) &&
        options.mode.value_or(random_mode()) == RandomMode::kSingleDeviceExact) {
      detail::exact_fill_local(distribution, 0, 1, spec, options, kRandomLike[static_cast<int>(kind)], result);
    } else {
      DTensorSpec draw = spec;
      draw.meta.dtype = kind == RandomLike::kRandint || !at::isFloatingType(spec.meta.dtype) ? at::kDouble
                                                                                               : spec.meta.dtype;
      at::Tensor u = detail::random_local(distribution, draw, result.options().dtype(draw.meta.dtype), options,
                                          kRandomLike[static_cast<int>(kind)]);
      if (kind == RandomLike::kRandint) {
        const int64_t low_arg = argument_position(call, "low");
        const int64_t low = low_arg >= 0 ? (*stack)[static_cast<size_t>(low_arg)].toInt() : 0;
        const int64_t high = (*stack)[static_cast<size_t>(argument_position(call, "high"))].toInt();
        TORCH_CHECK(low < high, call.describe(), ": randint_like expects low < high, got low=", low, " high=", high);
        u = u.mul_(static_cast<double>(high - low)).floor_().add_(static_cast<double>(low));
      }
      result.copy_(u);
    }
    *stack = {result};
  };
}

// Note [Multinomial on DTensors]
// multinomial(probs [*, n], num_samples, replacement, generator) draws
// num_samples category indices per row. Rows are independent, so every dim
// but the last (the categories) shards, as PyTorch 2.15's strategy; the
// categories are gathered. LibTorch's kernel draws from each rank's own
// generator, which would give replicas different samples and make the
// samples depend on the placements; so the draw goes through the DTensor RNG
// (detail::random_local) instead, with the same distribution: with
// replacement, one uniform per sample inverted through the row's CDF;
// without, one uniform per category and the num_samples largest keys
// log(u) / p (Efraimidis and Spirakis' weighted sampling without
// replacement; a category of probability 0 is never drawn while others
// remain). The samples are the same whatever the placements, for a seed.
const char* kMultinomial = "dtensor::multinomial";

ShardingRule multinomial_rule() {
  return [](const OpCall& call) {
    const int64_t last = detail::input_ndim(call, 0) - 1;
    Placements p = call.inputs[0].placements;
    for (Placement& q : p) {
      if (q.is_partial() || (q.splits_dim() && q.normalized(last + 1).shard_dim() == last) || q.is_strided_shard()) {
        q = Replicate();
      }
    }
    if (call.self_input >= 0) {
      // multinomial.out: the probabilities' rows move to out's layout (as
      // PyTorch 2.15 does), which must keep each row's samples whole.
      const Placements& out = call.inputs[static_cast<size_t>(call.self_input)].placements;
      for (const Placement& q : out) {
        TORCH_CHECK(!q.is_partial() && !q.is_strided_shard() && !(q.splits_dim() && q.normalized(last + 1).shard_dim() == last),
                    call.describe(), ": out is laid out as ", to_string(out), ", which splits a row's samples or ",
                    "holds a Partial result; lay out out by rows (Shard of a dim but the last) or Replicate");
      }
      p = out;
    }
    ShardingPlan plan;
    plan.input_placements.push_back(p);
    for (size_t i = 1; i < call.inputs.size(); ++i) plan.input_placements.push_back(call.inputs[i].placements);
    plan.output_placements.assign(call.outputs.size(), p);
    plan.local_kernel = kMultinomial;
    return plan;
  };
}

// multinomial(self, num_samples, replacement, *, generator[, out]).
void multinomial_kernel(const LocalCall& local, std::vector<c10::IValue>* stack) {
  const OpCall& call = local.call;
  const at::Tensor probs = (*stack)[0].toTensor();
  const int64_t samples = (*stack)[1].toInt();
  const bool replacement = (*stack)[2].toBool();
  RandomOptions options;
  if ((*stack)[3].isGenerator()) options.generator = (*stack)[3].toGenerator();
  const at::Tensor p = probs.to(at::kDouble);
  const at::Tensor sums = p.sum(-1, /*keepdim=*/true);
  TORCH_CHECK(p.numel() == 0 || (p.ge(0).all().item<bool>() && p.isfinite().all().item<bool>() &&
                                 sums.gt(0).all().item<bool>()),
              call.describe(), " on rank ", call.mesh.global_rank(),
              ": every probability must be finite and >= 0, and every row must have a positive sum");
  TORCH_CHECK(replacement || samples <= p.size(-1), call.describe(), ": cannot draw ", samples,
              " samples without replacement from ", p.size(-1), " categories");
  const at::Tensor rows = p / sums;
  at::Tensor indices;
  if (replacement) {
    DTensorSpec draw = call.inputs[0].with_placements(local.plan.output_placements[0]);
    draw.meta = local.output_metas[0];
    draw.meta.dtype = at::kDouble;
    const at::Tensor u = detail::random_local(detail::RandomDistribution::kUniform, draw, p.options(), options,
                                              "DTensor multinomial");
    const at::Tensor cdf = rows.cumsum(-1).contiguous();
    indices = at::searchsorted(cdf, u.contiguous(), /*out_int32=*/false, /*right=*/true).clamp_max_(p.size(-1) - 1);
  } else {
    DTensorSpec draw = call.inputs[0].with_placements(local.plan.input_placements[0]);
    draw.meta.dtype = at::kDouble;
    const at::Tensor u = detail::random_local(detail::RandomDistribution::kUniform, draw, p.options(), options,
                                              "DTensor multinomial");
    indices = std::get<1>(at::topk(u.log().div(rows), samples, -1));
  }
  const size_t out_arg = call.self_input >= 0 ? call.positions[static_cast<size_t>(call.self_input)].arg_index : 0;
  if (call.self_input >= 0) {
    at::Tensor out = (*stack)[out_arg].toTensor();
    out.copy_(indices);
    *stack = {out};
  } else {
    *stack = {indices};
  }
}

// Note [Randomized leaky ReLU]
// rrelu_with_noise(self, noise!, lower, upper, training, generator) (what
// rrelu calls), its functional form (noise returned, not written) and its
// out= form. Pointwise: every tensor is laid out alike, as the tensor the op
// writes (out, else noise; the functional form: self, a Partial reduced
// first, the op not being linear). In eval mode the slope is the fixed
// (lower + upper) / 2, noise is not written (but must be shaped like self,
// so it is laid out alike) and the op runs on the shards. In training mode each
// negative element takes a slope drawn from U(lower, upper), which the
// noise records: drawn here through the DTensor RNG (one uniform per
// element of the global tensor, this rank's block), so replicas agree and
// the result does not depend on the placements; LibTorch's kernel draws
// from each rank's own generator, one per negative element, so PyTorch
// 2.15 (pointwise) gives replicas different slopes. The values are not one
// device's rrelu for the same seed (it draws only for negative elements).
const char* kRreluWithNoise = "dtensor::rrelu_with_noise";

// rrelu_with_noise writes noise in training (LibTorch 2.x says so in its
// schema, 1.13's kernel does it unannounced); its out= form noise and out;
// the functional form, which returns the noise, neither.
bool writes_noise(const OpCall& call) { return call.op->schema().returns().size() == 1; }
bool has_out(const OpCall& call) { return call.op->schema().arguments().back().name() == "out"; }

ShardingRule rrelu_with_noise_rule() {
  return [](const OpCall& call) {
    const bool training = call.arg(4).toBool();
    std::vector<size_t> written;  // inputs the op writes (in training): noise, out
    size_t noise = call.inputs.size();
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      const size_t arg = call.positions[i].arg_index;
      if (arg == 1) noise = i;
      if ((arg == 1 && training && writes_noise(call)) || call.op->schema().arguments()[arg].name() == "out") {
        written.push_back(i);
      }
    }
    // The layout of everything: the written tensor's; with none written,
    // per mesh dim a shard self or noise has (self's first), else Replicate
    // (a Partial self reduced: the op is not linear).
    Placements target = call.inputs[written.empty() ? 0 : written.back()].placements;
    for (size_t d = 0; d < target.size(); ++d) {
      Placement& p = target[d];
      TORCH_CHECK(written.empty() || !p.is_partial(), call.describe(), ": it writes a tensor laid out as ",
                  to_string(target), ", which cannot hold a Partial result; redistribute it to Replicate first");
      const Placement& q = noise < call.inputs.size() ? call.inputs[noise].placements[d] : p;
      if (written.empty() && !p.splits_dim()) p = q.splits_dim() ? q : Replicate();
    }
    for (size_t i : written) {
      TORCH_CHECK(call.inputs[i].placements == target, call.describe(), ": it writes both noise and out, laid out ",
                  "as ", to_string(call.inputs[i].placements), " and ", to_string(target),
                  "; lay them out alike (each element's slope is stored where its result is)");
    }
    ShardingPlan plan;
    plan.input_placements.assign(call.inputs.size(), target);
    plan.output_placements.assign(call.outputs.size(), target);
    // In eval mode noise is only checked to be shaped like self: it is laid
    // out like self too, taking that layout if it had another (its values
    // are unchanged; the kernel writes it only in training).
    plan.self_placements_change = !training && noise < call.inputs.size() && call.self_input == static_cast<int64_t>(noise) &&
                                  call.inputs[noise].placements != target;
    plan.local_kernel = kRreluWithNoise;
    return plan;
  };
}

// (self, noise, lower, upper, training, generator[, out]).
void rrelu_with_noise_kernel(const LocalCall& local, std::vector<c10::IValue>* stack) {
  const OpCall& call = local.call;
  if (!(*stack)[4].toBool()) {  // eval: a fixed slope, no draw
    call.op->callBoxed(stack);
    return;
  }
  const at::Tensor self = (*stack)[0].toTensor();
  const double lower = (*stack)[2].toScalar().toDouble(), upper = (*stack)[3].toScalar().toDouble();
  RandomOptions options;
  if ((*stack)[5].isGenerator()) options.generator = (*stack)[5].toGenerator();
  DTensorSpec draw = call.inputs[0].with_placements(local.plan.input_placements[0]);
  if (!at::isFloatingType(draw.meta.dtype)) draw.meta.dtype = at::kFloat;
  const at::Tensor u = detail::random_local(detail::RandomDistribution::kUniform, draw,
                                            self.options().dtype(draw.meta.dtype), options, "DTensor rrelu");
  const at::Tensor slopes =
      at::where(self.ge(0), at::ones_like(u), u.mul(upper - lower).add_(lower)).to(self.scalar_type());
  const at::Tensor result = self.mul(slopes);
  if (!writes_noise(call)) {
    *stack = {result, slopes};
    return;
  }
  (*stack)[1].toTensor().copy_(slopes);
  if (has_out(call)) {
    at::Tensor out = stack->back().toTensor();
    out.copy_(result);
    *stack = {out};
  } else {
    *stack = {result};
  }
}

// native_dropout(input, p, train) -> (out, mask) and its out= form (outs
// out0, out1): see Note [Random ops on DTensors]. Everything is laid out as
// the input (out= form: as out0), a Partial reduced first (dropout is not
// linear in a partial sum's terms), as PyTorch 2.15. In training the mask
// is the DTensor RNG's bernoulli(1 - p) draw of the whole tensor, this
// rank's block (CPU dropout, empty_like + bernoulli_, draws the same mask
// for the same seed), so replicas agree; LibTorch's kernel would draw from
// each rank's generator, and on an empty shard it returns a mask of the
// input's dtype, not bool.
const char* kNativeDropout = "dtensor::native_dropout";

bool native_dropout_trains(const OpCall& call) { return call.arg(2).isNone() || detail::bool_arg(call, 2, true); }

ShardingRule native_dropout_rule() {
  return [](const OpCall& call) {
    const bool out_form = call.self_input >= 0;
    Placements target = call.inputs[out_form ? 1 : 0].placements;
    for (Placement& q : target) {
      TORCH_CHECK(!(out_form && q.is_partial()), call.describe(), ": out is laid out as ", to_string(target),
                  ", which cannot hold dropout's result; redistribute it to Replicate first");
      if (q.is_partial()) q = Replicate();
    }
    TORCH_CHECK(!out_form || call.inputs[2].placements == target, call.describe(), ": the outs are laid out as ",
                to_string(target), " and ", to_string(call.inputs[2].placements),
                "; lay them out alike (each element's mask is stored where its result is)");
    ShardingPlan plan;
    plan.input_placements.assign(call.inputs.size(), target);
    plan.output_placements.assign(call.outputs.size(), target);
    if (native_dropout_trains(call)) {
      plan.local_kernel = kNativeDropout;
      plan.local_kernel_reads_no_specs = true;  // the block it draws is output 0's
    }
    return plan;
  };
}

// (input, p, train[, out0, out1]).
void native_dropout_kernel(const LocalCall& local, std::vector<c10::IValue>* stack) {
  const OpCall& call = local.call;
  const at::Tensor input = (*stack)[0].toTensor();
  const double p = (*stack)[1].toDouble();
  DTensorSpec draw = *local.output_specs[0];
  if (!at::isFloatingType(draw.meta.dtype)) draw.meta.dtype = at::kFloat;
  const at::Tensor u = detail::random_local(detail::RandomDistribution::kUniform, draw,
                                            input.options().dtype(draw.meta.dtype), RandomOptions{},
                                            "DTensor native_dropout");
  const at::Tensor mask = u.lt(1 - p);
  const double scale = p >= 1 ? 0.0 : 1.0 / (1 - p);  // LibTorch's: all dropped when p == 1
  const at::Tensor result = input.mul(mask).mul_(scale);
  if (call.self_input < 0) {
    *stack = {result, mask};
    return;
  }
  at::Tensor out = (*stack)[3].toTensor(), out_mask = (*stack)[4].toTensor();
  out.copy_(result);
  out_mask.copy_(mask);
  *stack = {out, out_mask};
}

// native_dropout_backward(grad, mask, scale): pointwise, linear in grad.
DimRule dropout_backward_rule() {
  return [](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      const Placement& p = placement_of(call, i, mesh_dim);
      if (p.is_shard()) candidates.push_back(detail::every_tensor_as(call, p));
    }
    const Placement& g = placement_of(call, 0, mesh_dim);
    if (g.is_partial()) candidates.push_back({{g, Replicate()}, {g}});
    return candidates;
  };
}

}  // namespace

void register_nn_rules(ShardingRegistry& registry) {
  registry.add({"aten::embedding"}, embedding_rule());
  registry.add_local_kernel(kMaskedEmbedding, masked_embedding);
  registry.add({"aten::embedding_dense_backward"}, per_mesh_dim(embedding_backward_rule()));
  registry.add({"aten::native_layer_norm"}, per_mesh_dim(layer_norm_rule()));
  registry.add({"aten::native_layer_norm_backward"}, per_mesh_dim(layer_norm_backward_rule()));
  registry.add({"aten::bernoulli_.float"}, random_fill_rule(RandomFill::kBernoulli));
  registry.add({"aten::uniform_"}, random_fill_rule(RandomFill::kUniform));
  registry.add({"aten::normal_"}, random_fill_rule(RandomFill::kNormal));
  registry.add({"aten::exponential_"}, random_fill_rule(RandomFill::kExponential));
  registry.add({"aten::geometric_"}, random_fill_rule(RandomFill::kGeometric));
  registry.add({"aten::log_normal_"}, random_fill_rule(RandomFill::kLogNormal));
  registry.add({"aten::bernoulli.float_out"}, random_fill_rule(RandomFill::kBernoulli, RandomTarget::kOut));
  registry.add({"aten::uniform.out"}, random_fill_rule(RandomFill::kUniform, RandomTarget::kOut));
  registry.add({"aten::normal.out"}, random_fill_rule(RandomFill::kNormal, RandomTarget::kOut));
  registry.add({"aten::exponential.out"}, random_fill_rule(RandomFill::kExponential, RandomTarget::kOut));
  registry.add({"aten::geometric.out"}, random_fill_rule(RandomFill::kGeometric, RandomTarget::kOut));
  registry.add({"aten::log_normal.out"}, random_fill_rule(RandomFill::kLogNormal, RandomTarget::kOut));
  registry.add({"aten::bernoulli.out"}, random_fill_rule(RandomFill::kBernoulli, RandomTarget::kOut));
  registry.add({"aten::bernoulli"}, random_fill_rule(RandomFill::kBernoulli, RandomTarget::kNew));
  registry.add({"aten::normal_functional"}, random_fill_rule(RandomFill::kNormal, RandomTarget::kNew));
  for (RandomFill kind : {RandomFill::kBernoulli, RandomFill::kUniform, RandomFill::kNormal, RandomFill::kExponential,
                          RandomFill::kGeometric, RandomFill::kLogNormal}) {
    for (RandomTarget target : {RandomTarget::kSelf, RandomTarget::kOut, RandomTarget::kNew}) {
      registry.add_local_kernel(random_fill_kernel_name(kind, target), random_fill_kernel(kind, target));
    }
  }
  registry.add({"aten::multinomial", "aten::multinomial.out"}, multinomial_rule());
  registry.add_local_kernel(kMultinomial, multinomial_kernel);
  registry.add({"aten::native_dropout", "aten::native_dropout.out"}, native_dropout_rule());
  // The *_like draws (not randint_like's Tensor-high forms: PyTorch 2.15 shards none).
  registry.add({"aten::rand_like", "aten::rand_like.generator", "aten::rand_like.out", "aten::rand_like.generator_out"},
               random_like_rule(RandomLike::kRand));
  registry.add({"aten::randn_like", "aten::randn_like.generator", "aten::randn_like.out",
                "aten::randn_like.generator_out"},
               random_like_rule(RandomLike::kRandn));
  registry.add({"aten::randint_like", "aten::randint_like.generator", "aten::randint_like.low_dtype",
                "aten::randint_like.low_generator_dtype", "aten::randint_like.out", "aten::randint_like.generator_out",
                "aten::randint_like.low_dtype_out", "aten::randint_like.low_generator_dtype_out"},
               random_like_rule(RandomLike::kRandint));
  for (RandomLike kind : {RandomLike::kRand, RandomLike::kRandn, RandomLike::kRandint}) {
    registry.add_local_kernel(kRandomLike[static_cast<int>(kind)], random_like_kernel(kind));
  }
  registry.add_local_kernel(kNativeDropout, native_dropout_kernel);
  registry.add({"aten::rrelu_with_noise", "aten::rrelu_with_noise.out", "aten::rrelu_with_noise_functional"},
               rrelu_with_noise_rule());
  registry.add_local_kernel(kRreluWithNoise, rrelu_with_noise_kernel);
  registry.add({"aten::native_dropout_backward"}, per_mesh_dim(dropout_backward_rule()));
}

}  // namespace dtensor
