// Autograd kernels for DTensors (dispatch key AutogradPrivateUse1) where
// LibTorch 1.13's own autograd formula or composite cannot work on DTensors:
//  - max.dim / min.dim / topk / sort / kthvalue / mode / median.dim: the 1.13
//    backward scatters into at::zeros(sizes, options), a plain tensor. Ours
//    scatters into a DTensor of zeros laid out like the input.
//  - vector norms: over a sharded dim they decompose into local partial
//    results and one reduction (see Note [Norms of sharded dims]); the
//    backward is LibTorch's norm_backward written in DTensor ops. The
//    _foreach_norm of many shards shares its reductions (Note [Foreach
//    norms]).
//  - full max / min: the out-of-place gradient PyTorch's Python DTensor
//    gets (See Note [Gradient of a full max or min]).
//  - scaled dot-product attention (compat::kAttentionOp): the math path
//    builds its causal mask as a plain tensor; it runs with implicit
//    replication (the mask is Replicate), heads first when heads are sharded
//    (Note [Attention sharded on heads]); inside context_parallel, a query
//    sharded on the sequence takes the installed context-parallel attention
//    (core/experimental/context_parallel.cc); on CUDA ranks, the fused
//    kernel LibTorch picks where it communicates no more than the math path
//    (Note [Fused attention on CUDA ranks]).
// Everything else keeps LibTorch's autograd formulas.
//
// Note [No cycles through backward nodes]
// set_history(out, node) makes out's autograd metadata own `node`. A node
// that keeps `out` itself (a norm's result, a max's value) would then own
// its owner: the cycle is never freed, and with it the DTensorImpl, its
// mesh and the world's groups, once per op and step (LeakSanitizer found it;
// DTensorLifetimeTest counts live impls). Nodes keep detached aliases of
// what they save (a new impl over the same local shard, no history), as
// LibTorch's SavedVariable does for outputs.
#include <ATen/Functions.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/compat/autograd_node.h"
#include "core/compat/torch_compat.h"
#include "core/dispatch/dispatch_mode.h"
#include "core/dispatch/op_name.h"
#include "core/dtensor_impl.h"
#include "core/ops/builtin_rules.h"

namespace dtensor {
namespace {

using torch::autograd::variable_list;

bool needs_grad(const at::Tensor& t) {
  return torch::autograd::GradMode::is_enabled() && t.defined() && t.requires_grad();
}

// A DTensor of zeros with `spec` (contiguous), on the device and dtype of `like`.
at::Tensor zeros_dtensor(DTensorSpec spec, const at::Tensor& like) {
  spec.meta.stride = contiguous_strides(spec.meta.shape);
  spec.meta.dtype = like.scalar_type();
  at::Tensor local = at::zeros(spec.local_shape(), dtensor_impl(like)->local().options());
  return make_dtensor(local, spec);
}

// ------------------------------------------------------- value-selecting ops

struct SelectArgs {
  size_t dim_arg;
  int64_t keepdim_arg;  // -1: the outputs keep every dim
};

const std::unordered_map<std::string, SelectArgs>& value_selecting_ops() {
  static const auto* table = new std::unordered_map<std::string, SelectArgs>{
      {"aten::max.dim", {1, 2}},  {"aten::min.dim", {1, 2}},     {"aten::median.dim", {1, 2}},
      {"aten::mode", {1, 2}},     {"aten::kthvalue", {2, 3}},    {"aten::topk", {2, -1}},
      {"aten::sort", {1, -1}},    {"aten::sort.stable", {2, -1}},
  };
  return *table;
}

// Gradient of (values, indices) = op(self, dim...): zeros like self with the
// gradient scattered at the selected indices.
struct ValueSelectingBackward : torch::autograd::Node {
  DTensorSpec grad_spec;  // self's spec, gathered where scatter needs it
  int64_t dim = 0;
  bool unsqueeze = false;
  at::Tensor indices;
  std::string op_name;
  std::string name() const override { return "dtensor::ValueSelectingBackward(" + op_name + ")"; }
  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {at::Tensor()};
    TORCH_CHECK(is_dtensor(grads[0]), name(), ": the gradient of a DTensor output is a plain tensor");
    at::Tensor g = grads[0], idx = indices;
    if (unsqueeze) {
      g = g.unsqueeze(dim);
      idx = idx.unsqueeze(dim);
    }
    return {zeros_dtensor(grad_spec, g).scatter(dim, idx, g)};
  }
};

void value_selecting_autograd(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = full_op_name(op.operator_name());
  const SelectArgs& spec = value_selecting_ops().at(name);
  const size_t first = stack->size() - op.schema().arguments().size();
  const at::Tensor self = (*stack)[first].toTensor();
  const int64_t ndim = self.dim();
  const int64_t raw_dim = (*stack)[first + spec.dim_arg].toInt();
  const int64_t dim = ndim == 0 ? 0 : (raw_dim < 0 ? raw_dim + ndim : raw_dim);
  const bool keepdim = spec.keepdim_arg < 0 || (*stack)[first + static_cast<size_t>(spec.keepdim_arg)].toBool();
  const bool grad = needs_grad(self) && is_dtensor(self);
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.callBoxed(stack);
  }
  if (!grad) return;
  at::Tensor values = (*stack)[stack->size() - 2].toTensor();
  auto node = compat::make_autograd_node<ValueSelectingBackward>();
  node->op_name = name;
  node->grad_spec = dtensor_impl(self)->spec();
  for (auto& p : node->grad_spec.placements) {
    if (p.is_partial() || p.is_shard(dim)) p = Replicate();
  }
  node->dim = dim;
  node->unsqueeze = !keepdim && ndim > 0;
  node->indices = (*stack)[stack->size() - 1].toTensor();
  node->set_next_edges(torch::autograd::collect_next_edges(self));
  torch::autograd::set_history(values, node);
  (*stack)[stack->size() - 2] = values;
}

// ------------------------------------------------------- full max and min

// Note [Gradient of a full max or min]
// LibTorch's evenly_distribute_backward fills zeros in place (masked_fill_)
// unless a tensor is "subclass-like" (a Python subclass); ours are not, so
// the zeros are replicated and the mask, sharded like self, is gathered.
// PyTorch's Python DTensor takes the out-of-place form, which keeps the
// gradient sharded like self (issue #18's differential test): this is it,
// mask * (grad / mask.sum()) with NaNs matching NaNs.
struct EvenlyDistributeBackward : torch::autograd::Node {
  at::Tensor input, value;  // detached: Note [No cycles through backward nodes]
  std::string op_name;
  std::string name() const override { return "dtensor::EvenlyDistributeBackward(" + op_name + ")"; }
  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {at::Tensor()};
    const at::Tensor mask = input.eq(value).logical_or(input.isnan().logical_and(value.isnan()));
    return {mask.mul(grads[0].div(mask.sum()))};
  }
};

void evenly_distribute_autograd(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const at::Tensor self = stack->back().toTensor();  // max(self) / min(self): one argument
  const bool grad = needs_grad(self) && is_dtensor(self);
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.callBoxed(stack);
  }
  if (!grad) return;
  at::Tensor out = stack->back().toTensor();
  auto node = compat::make_autograd_node<EvenlyDistributeBackward>();
  node->op_name = full_op_name(op.operator_name());
  node->input = self.detach();
  node->value = out.detach();
  node->set_next_edges(torch::autograd::collect_next_edges(self));
  torch::autograd::set_history(out, node);
  stack->back() = out;
}

// -------------------------------------------------------------------- norms

struct NormArgs {
  double ord = 2.0;
  std::vector<int64_t> dims;  // sorted, distinct, wrapped
  bool keepdim = false;
  c10::optional<c10::ScalarType> dtype;
};

NormArgs norm_args(const std::string& name, const torch::jit::Stack& stack, size_t first, int64_t ndim) {
  NormArgs a;
  const c10::IValue& ord = stack[first + 1];
  if (!ord.isNone()) a.ord = ord.toScalar().toDouble();
  c10::IValue dims;
  if (name == "aten::linalg_vector_norm") {
    dims = stack[first + 2];
    a.keepdim = stack[first + 3].toBool();
    if (!stack[first + 4].isNone()) a.dtype = stack[first + 4].toScalarType();
  } else if (name == "aten::norm.ScalarOpt_dim") {
    dims = stack[first + 2];
    a.keepdim = stack[first + 3].toBool();
  }
  if (dims.isIntList()) {
    for (int64_t d : dims.toIntVector()) a.dims.push_back(d < 0 ? d + std::max<int64_t>(ndim, 1) : d);
  }
  if (a.dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) a.dims.push_back(d);
  }
  std::sort(a.dims.begin(), a.dims.end());
  a.dims.erase(std::unique(a.dims.begin(), a.dims.end()), a.dims.end());
  return a;
}

bool reduces_a_shard(const at::Tensor& self, const std::vector<int64_t>& dims) {
  DTensorImpl* impl = dtensor_impl(self);
  if (impl == nullptr) return false;
  for (const Placement& p : impl->spec().placements) {
    if (p.is_shard() && std::find(dims.begin(), dims.end(), p.shard_dim()) != dims.end()) return true;
  }
  return false;
}

at::Tensor unsqueeze_dims(at::Tensor t, const NormArgs& a, int64_t ndim) {
  if (a.keepdim || ndim == 0) return t;
  for (int64_t d : a.dims) t = t.unsqueeze(d);
  return t;
}

// The p-norm from DTensor ops: local partial results, one reduction.
at::Tensor decomposed_norm(const at::Tensor& x, const NormArgs& a) {
  const double p = a.ord;
  if (std::isinf(p)) return p > 0 ? x.abs().amax(a.dims, a.keepdim) : x.abs().amin(a.dims, a.keepdim);
  if (p == 0) return x.ne(0).sum(a.dims, a.keepdim).to(x.scalar_type());
  if (p == 1) return x.abs().sum(a.dims, a.keepdim);
  return x.abs().pow(p).sum(a.dims, a.keepdim).pow(1.0 / p);
}

// LibTorch's norm_backward (FunctionsManual.cpp, 1.13), in DTensor ops.
struct NormBackward : torch::autograd::Node {
  NormArgs args;
  at::Tensor self, result;
  c10::ScalarType input_dtype = at::kFloat;
  std::string name() const override { return "dtensor::NormBackward"; }
  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {at::Tensor()};
    const double p = args.ord;
    const int64_t ndim = self.dim();
    at::Tensor g = unsqueeze_dims(grads[0], args, ndim);
    at::Tensor norm = unsqueeze_dims(result, args, ndim);
    at::Tensor out;
    if (p == 0) {
      out = self.mul(0);
    } else if (p == 1) {
      out = self.sgn().mul(g);
    } else if (p == 2) {
      out = g.mul(self.div(norm).masked_fill(norm.eq(0), 0));
    } else if (std::isinf(p)) {
      at::Tensor is_max = self.abs().eq(norm).to(norm.scalar_type());
      at::Tensor count = unsqueeze_dims(is_max.sum(args.dims, args.keepdim), args, ndim);
      out = self.sgn().mul(is_max).mul(g.div(count));
    } else if (p < 1) {
      at::Tensor scaled = self.sgn().mul(self.abs().pow(p - 1).masked_fill(self.eq(0), 0));
      out = scaled.mul(g).mul(norm.pow(1 - p));
    } else {
      at::Tensor scaled = p < 2 ? self.sgn().mul(self.abs().pow(p - 1)) : self.mul(self.abs().pow(p - 2));
      out = scaled.mul(g.div(norm.pow(p - 1)).masked_fill(norm.eq(0), 0));
    }
    return {out.to(input_dtype)};
  }
};

// Forward: the op itself when no sharded dim is reduced (the rule keeps the
// shards), else decomposed_norm. Backward: NormBackward either way, since
// this kernel shadows LibTorch's autograd kernel for DTensors.
void norm_autograd(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = full_op_name(op.operator_name());
  const size_t first = stack->size() - op.schema().arguments().size();
  const at::Tensor self = (*stack)[first].toTensor();
  const NormArgs a = norm_args(name, *stack, first, self.dim());
  const bool grad = needs_grad(self);
  at::Tensor result;
  if (reduces_a_shard(self, a.dims)) {
    torch::autograd::AutoGradMode no_grad(false);
    at::Tensor x = a.dtype ? self.detach().to(*a.dtype) : self.detach();
    result = decomposed_norm(x, a);
    stack->erase(stack->begin() + static_cast<std::ptrdiff_t>(first), stack->end());
  } else {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.callBoxed(stack);
    result = stack->back().toTensor();
    stack->pop_back();
  }
  if (grad) {
    auto node = compat::make_autograd_node<NormBackward>();
    node->args = a;
    {
      torch::autograd::AutoGradMode no_grad(false);
      node->self = a.dtype ? self.detach().to(*a.dtype) : self.detach();
    }
    node->result = result.detach();  // Note [No cycles through backward nodes]
    node->input_dtype = self.scalar_type();
    node->set_next_edges(torch::autograd::collect_next_edges(self));
    torch::autograd::set_history(result, node);
  }
  stack->push_back(result);
}

// Note [Foreach norms]
// _foreach_norm(xs, ord, dtype) is what gradient clipping calls on all
// gradients at once. Elements with no sharded dim run the op as it is
// (below autograd when nothing needs a gradient). With grad, each element is
// a linalg_vector_norm (norm_autograd above: its backward). Without, sharded
// elements decompose as decomposed_norm does, but their reductions are
// shared: the local sums of |x|^p of elements sharded over the same mesh
// dims (whatever their tensor dims) are stacked and reduced together, one
// all_reduce per such mesh dim for the group where a norm each would issue
// one per element (on a 1-D mesh: one for all, as PyTorch's clip_grad_norm_
// issues when it reduces its stacked _NormPartials). ord 0, 1 and +-inf need no
// root, so their results stay Partial (sum, max or min: exact, and nothing
// is sent, as PyTorch 2.15's _NormPartial).
bool has_shard(const at::Tensor& t) {
  DTensorImpl* impl = dtensor_impl(t);
  if (impl == nullptr) return false;
  for (const Placement& p : impl->spec().placements) {
    if (p.splits_dim()) return true;
  }
  return false;
}

void foreach_norm_autograd(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t first = stack->size() - op.schema().arguments().size();
  const std::vector<at::Tensor> xs = (*stack)[first].toTensorVector();
  const c10::Scalar ord = (*stack)[first + 1].toScalar();
  // dtype (LibTorch 2.x; 1.13's overload has only self and ord).
  const bool has_dtype = op.schema().arguments().size() > 2 && !(*stack)[first + 2].isNone();
  const c10::optional<c10::ScalarType> dtype =
      has_dtype ? c10::optional<c10::ScalarType>((*stack)[first + 2].toScalarType()) : c10::nullopt;
  const bool grad = std::any_of(xs.begin(), xs.end(), needs_grad);
  if (!grad && std::none_of(xs.begin(), xs.end(), has_shard)) {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.callBoxed(stack);
    return;
  }
  std::vector<at::Tensor> norms(xs.size());
  if (grad) {
    for (size_t i = 0; i < xs.size(); ++i) {
      norms[i] = at::linalg_vector_norm(xs[i], ord, c10::nullopt, false, dtype);
    }
  } else {
    torch::autograd::AutoGradMode no_grad(false);
    const double p = ord.toDouble();
    const bool needs_root = !(p == 0 || p == 1 || std::isinf(p));
    // Element indices by where their powered sums are Partial(sum) (the
    // mesh dims that shard them), each group reduced once.
    auto partial_dims = [](const at::Tensor& x) {
      std::vector<bool> dims;
      for (const Placement& q : dtensor_impl(x)->spec().placements) dims.push_back(q.splits_dim());
      return dims;
    };
    std::vector<std::vector<size_t>> groups;
    for (size_t i = 0; i < xs.size(); ++i) {
      auto same_reduction = [&](const std::vector<size_t>& g) {
        const at::Tensor& other = xs[g.front()];
        return has_shard(other) && dtensor_impl(other)->spec().mesh == dtensor_impl(xs[i])->spec().mesh &&
               partial_dims(other) == partial_dims(xs[i]);
      };
      auto it = needs_root && has_shard(xs[i]) ? std::find_if(groups.begin(), groups.end(), same_reduction)
                                               : groups.end();
      if (it != groups.end()) {
        it->push_back(i);
      } else {
        groups.push_back({i});
      }
    }
    NormArgs a;
    a.ord = p;
    a.dtype = dtype;
    for (const std::vector<size_t>& g : groups) {
      if (g.size() == 1 || !needs_root) {
        for (size_t i : g) {
          const at::Tensor x = dtype ? xs[i].to(*dtype) : xs[i];
          a.dims.clear();
          for (int64_t d = 0; d < x.dim(); ++d) a.dims.push_back(d);
          norms[i] = decomposed_norm(x, a);
        }
        continue;
      }
      std::vector<at::Tensor> powered;
      for (size_t i : g) {
        const at::Tensor x = dtype ? xs[i].to(*dtype) : xs[i];
        powered.push_back(x.abs().pow(p).sum());
      }
      const std::vector<at::Tensor> roots = at::stack(powered).pow(1.0 / p).unbind(0);
      for (size_t k = 0; k < g.size(); ++k) norms[g[k]] = roots[k];
    }
  }
  stack->erase(stack->begin() + static_cast<std::ptrdiff_t>(first), stack->end());
  stack->emplace_back(at::TensorList(norms));
}

// ------------------------------------------------------------ attention

// Note [Attention sharded on heads]
// The math path multiplies [batch, heads, L, D] tensors with bmm, which first
// merges batch and heads into one dim. A shard of heads (an inner dim of that
// merge) cannot survive it and would be gathered; a shard of the leading dim
// can. So when heads are sharded, attention runs on [heads, batch, L, D]
// views (transpose(0, 1), free) and the results are transposed back.
bool heads_sharded(const at::Tensor& t) {
  DTensorImpl* impl = t.defined() && t.dim() == 4 ? dtensor_impl(t) : nullptr;
  if (impl == nullptr) return false;
  for (const Placement& p : impl->spec().placements) {
    if (p.is_shard(1) || p.is_shard(-3)) return true;
  }
  return false;
}

at::Tensor heads_first(const at::Tensor& t) {
  if (!t.defined() || t.dim() < 3) return t;  // [L, S] masks broadcast over batch and heads
  at::Tensor four = t.dim() == 3 ? t.unsqueeze(0) : t;
  return four.transpose(0, 1);
}

bool any_heads_sharded(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value) {
  return query.dim() == 4 && key.dim() == 4 && value.dim() == 4 &&
         (heads_sharded(query) || heads_sharded(key) || heads_sharded(value));
}

c10::optional<at::Tensor> mask_heads_first(const c10::optional<at::Tensor>& attn_mask) {
  c10::optional<at::Tensor> mask;
  if (attn_mask && attn_mask->defined()) mask = heads_first(*attn_mask);
  return mask;
}


#if DTENSOR_TORCH_AT_LEAST(2, 0)
// True when `query` is a DTensor sharded on its sequence dim (-2).
bool sequence_sharded(const at::Tensor& query) {
  DTensorImpl* impl = query.defined() && query.dim() >= 2 ? dtensor_impl(query) : nullptr;
  if (impl == nullptr) return false;
  for (const Placement& p : impl->spec().placements) {
    if (p.is_shard(query.dim() - 2) || p.is_shard(-2)) return true;
  }
  return false;
}

#if DTENSOR_TORCH_AT_LEAST(2, 5)
// Note [Fused attention on CUDA ranks]
// For plain CUDA tensors at::scaled_dot_product_attention runs a fused kernel
// (flash, memory-efficient or cuDNN) chosen by at::_fused_sdp_choice; a
// DTensor's PrivateUse1 key hides the device from that choice. So on CUDA
// ranks the choice is made here from this rank's local tensors and the fused
// op runs on the DTensors, through its rule (core/ops/attention_rules.cc:
// heads or batch sharded, no communication) and its own fused backward. Only
// where the math path communicates nothing either, so that a program issues
// the same collectives on CUDA and CPU ranks: query, key and value placed
// alike, on Shard(0) (batch), Shard(1) (heads) or Replicate on every mesh
// dim; no mask, no dropout (the fused kernels draw their own dropout), no
// GQA, and a head dim the flash kernel takes unpadded (a multiple of 8).
// Everything else takes the math path. The kernels are called as
// LibTorch's composite calls them (scale computed from the head dim, log-sum-
// exp only when a gradient is wanted), so a rank's output equals one GPU's.
enum class SdpBackend : int64_t { kMath = 0, kFlash = 1, kEfficient = 2, kCudnn = 3 };  // sdp::SDPBackend

bool fused_kernel_communicates_nothing(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value) {
  DTensorImpl* q = dtensor_impl(query);
  DTensorImpl* k = dtensor_impl(key);
  DTensorImpl* v = dtensor_impl(value);
  if (q == nullptr || k == nullptr || v == nullptr || query.dim() != 4 || key.dim() != 4 || value.dim() != 4) {
    return false;
  }
  const Placements& placements = q->spec().placements;
  if (k->spec().placements != placements || v->spec().placements != placements) return false;
  return std::all_of(placements.begin(), placements.end(), [](const Placement& p) {
    return p.is_replicate() || p.is_shard(0) || p.is_shard(1);
  });
}

c10::optional<at::Tensor> fused_cuda_attention(const at::Tensor& query, const at::Tensor& key,
                                               const at::Tensor& value, const c10::optional<at::Tensor>& attn_mask,
                                               double dropout_p, bool is_causal, c10::optional<double> scale,
                                               bool enable_gqa) {
  if ((attn_mask && attn_mask->defined()) || dropout_p != 0.0 || enable_gqa ||
      !fused_kernel_communicates_nothing(query, key, value)) {
    return c10::nullopt;
  }
  const at::Tensor& q = dtensor_impl(query)->local();
  const at::Tensor& k = dtensor_impl(key)->local();
  const at::Tensor& v = dtensor_impl(value)->local();
  if (!q.is_cuda() || q.size(-1) % 8 != 0 || v.size(-1) % 8 != 0) return c10::nullopt;
  const auto backend = static_cast<SdpBackend>(at::_fused_sdp_choice(q, k, v, {}, 0.0, is_causal, scale, false));
  const bool log_sumexp = at::GradMode::is_enabled() &&
                          (query.requires_grad() || key.requires_grad() || value.requires_grad());
  switch (backend) {
    case SdpBackend::kFlash: {
      const double softmax_scale = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
      return std::get<0>(at::_scaled_dot_product_flash_attention(query, key, value, 0.0, is_causal,
                                                                 /*return_debug_mask=*/false, softmax_scale));
    }
    case SdpBackend::kEfficient:
      return std::get<0>(at::_scaled_dot_product_efficient_attention(query, key, value, /*attn_bias=*/{}, log_sumexp,
                                                                     0.0, is_causal, scale));
    case SdpBackend::kCudnn:
      return std::get<0>(at::_scaled_dot_product_cudnn_attention(query, key, value, /*attn_bias=*/{}, log_sumexp, 0.0,
                                                                 is_causal, /*return_debug_mask=*/false, scale));
    default:
      return c10::nullopt;  // math (or no kernel): the math path below
  }
}
#endif

// aten::scaled_dot_product_attention: on CUDA ranks the fused kernel LibTorch
// picks where it communicates nothing (Note [Fused attention on CUDA ranks]);
// else the math decomposition, whatever fused kernel LibTorch would pick for
// the local tensors; inside context_parallel, a sequence-sharded query takes
// the context-parallel attention.
at::Tensor sdpa_with_implicit_replication(const at::Tensor& query, const at::Tensor& key,
                                          const at::Tensor& value, const c10::optional<at::Tensor>& attn_mask,
                                          double dropout_p, bool is_causal, c10::optional<double> scale,
                                          bool enable_gqa) {
  if (RuleModeGuard::active(RuleMode::kContextParallel) && sequence_sharded(query)) {
    ContextParallelAttention attention = ContextParallelAttentionScope::current();
    TORCH_INTERNAL_ASSERT(attention != nullptr,
                          "RuleMode::kContextParallel is active without a ContextParallelAttentionScope");
    return attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa);
  }
#if DTENSOR_TORCH_AT_LEAST(2, 5)
  if (auto fused = fused_cuda_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)) {
    return *fused;
  }
#endif
  ImplicitReplicationGuard replicate_plain_tensors;
  if (any_heads_sharded(query, key, value)) {
    // Heads first turns heads into the batch dim, where GQA's head broadcast
    // would not apply.
    TORCH_CHECK(!enable_gqa, "aten::scaled_dot_product_attention with enable_gqa=True and heads sharded (",
                "query ", query.sizes(), ", key ", key.sizes(), "): not supported; shard the batch dim, ",
                "or repeat the key/value heads (repeat_interleave) and pass enable_gqa=False");
    at::Tensor out = std::get<0>(at::_scaled_dot_product_attention_math(
        heads_first(query), heads_first(key), heads_first(value), mask_heads_first(attn_mask), dropout_p,
        is_causal, /*dropout_mask=*/c10::nullopt, scale, enable_gqa));
    return out.transpose(0, 1);
  }
  return std::get<0>(at::_scaled_dot_product_attention_math(query, key, value, attn_mask, dropout_p, is_causal,
                                                            /*dropout_mask=*/c10::nullopt, scale, enable_gqa));
}
#else
// aten::_scaled_dot_product_attention (1.13): output and attention weights.
std::tuple<at::Tensor, at::Tensor> sdpa_with_implicit_replication(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const c10::optional<at::Tensor>& attn_mask, double dropout_p, bool need_attn_weights, bool is_causal) {
  ImplicitReplicationGuard replicate_plain_tensors;
  if (any_heads_sharded(query, key, value)) {
    auto [out, weights] = at::_scaled_dot_product_attention_math(heads_first(query), heads_first(key),
                                                                  heads_first(value), mask_heads_first(attn_mask),
                                                                  dropout_p, need_attn_weights, is_causal);
    return {out.transpose(0, 1), weights.defined() && weights.dim() == 4 ? weights.transpose(0, 1) : weights};
  }
  return at::_scaled_dot_product_attention_math(query, key, value, attn_mask, dropout_p, need_attn_weights,
                                                is_causal);
}
#endif



// Note [Selective checkpoint] (core/nn/checkpoint.cc): a selective
// checkpoint adds the PrivateUse3 backend key, which then also picks the
// autograd kernel (AutogradPrivateUse3, the generic one). For the operators
// above, that kernel drops the key again, so DTensors reach their override.
void below_selective_checkpoint_key(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                                    torch::jit::Stack* stack) {
  op.redispatchBoxed(keys.remove_backend(c10::BackendComponent::PrivateUse3Bit), stack);
}

}  // namespace

void register_autograd_overrides() {
  static std::once_flag once;
  static std::unique_ptr<torch::Library> library, under_selective_checkpoint;
  std::call_once(once, [] {
    library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten",
                                               c10::DispatchKey::AutogradPrivateUse1, __FILE__, __LINE__);
    under_selective_checkpoint = std::make_unique<torch::Library>(
        torch::Library::IMPL, "aten", c10::DispatchKey::AutogradPrivateUse3, __FILE__, __LINE__);
    std::vector<std::string> overridden;
    for (const auto& [name, args] : value_selecting_ops()) {
      (void)args;
      overridden.push_back(name.substr(6));
      library->impl(overridden.back().c_str(),
                    torch::CppFunction::makeFromBoxedFunction<&value_selecting_autograd>());
    }
    for (const char* name : {"max", "min"}) {
      overridden.push_back(name);
      library->impl(name, torch::CppFunction::makeFromBoxedFunction<&evenly_distribute_autograd>());
    }
    for (const char* name : {"linalg_vector_norm", "norm.ScalarOpt_dim", "norm.Scalar"}) {
      overridden.push_back(name);
      library->impl(name, torch::CppFunction::makeFromBoxedFunction<&norm_autograd>());
    }
    if (c10::Dispatcher::singleton().findSchema({"aten::_foreach_norm", "Scalar"})) {
      overridden.push_back("_foreach_norm.Scalar");
      library->impl("_foreach_norm.Scalar", torch::CppFunction::makeFromBoxedFunction<&foreach_norm_autograd>());
    }
    overridden.push_back(compat::kAttentionOp);
    library->impl(compat::kAttentionOp, TORCH_FN(sdpa_with_implicit_replication));
    for (const std::string& name : overridden) {
      under_selective_checkpoint->impl(name.c_str(),
                                       torch::CppFunction::makeFromBoxedFunction<&below_selective_checkpoint_key>());
    }
  });
}

}  // namespace dtensor
