// Meta kernels of ops that have rules but no Meta kernel in LibTorch's C++
// (the fused attention kernels, the fused RMSNorm backward, multinomial,
// whose CPU kernel refuses the zero-filled stand-ins shape inference falls
// back to): PyTorch
// registers them from Python (torch/_meta_registrations.py), so a C++ program
// cannot infer these ops' output shapes, and the CUDA-only ones cannot run on
// a solo world's meta tensors. Same output shapes, dtypes and layouts as
// PyTorch's registrations; registered only where the op has no Meta kernel.
//   auto [out, lse, ...] = at::_scaled_dot_product_flash_attention(q_meta, k_meta, v_meta);   // shapes only
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/ops/_to_copy_native.h>
#include <torch/library.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/compat/torch_compat.h"
#include "core/dtensor_impl.h"
#include "core/ops/builtin_rules.h"

namespace dtensor {

namespace {

// Pops the op's arguments off the stack.
std::vector<c10::IValue> take_arguments(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t n = op.schema().arguments().size();
  std::vector<c10::IValue> args(stack->end() - static_cast<std::ptrdiff_t>(n), stack->end());
  torch::jit::drop(*stack, n);
  return args;
}

#if DTENSOR_TORCH_AT_LEAST(2, 3)  // the fused attention ops (uint64 RNG state)
// An empty [B, H, L, D] tensor whose dims are laid out in the query's order
// (PyTorch's alloc_with_matching_layout): a [B, L, H, D] buffer seen through
// transpose(1, 2) when the query is one.
at::Tensor empty_like_layout_of(const at::Tensor& query, const std::vector<int64_t>& shape) {
  std::vector<int64_t> order{0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return query.stride(a) > query.stride(b); });
  std::vector<int64_t> stored(4), inverse(4);
  for (size_t i = 0; i < 4; ++i) {
    stored[i] = shape[static_cast<size_t>(order[i])];
    inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  }
  return at::empty(stored, query.options()).permute(inverse);
}

// An empty [B, H, L, D] tensor stored as [B, L, H, D] (the backwards' gradients).
at::Tensor empty_heads_inner(const at::Tensor& like, int64_t b, int64_t h, int64_t l, int64_t d) {
  return at::empty({b, l, h, d}, like.options()).transpose(1, 2);
}

at::Tensor philox_scalar(const at::Tensor& query) { return at::empty({}, query.options().dtype(at::kLong)); }

// (query, key, value, dropout_p, is_causal, return_debug_mask, *, scale)
// -> (output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, rng_state, unused, debug_attn_mask)
void flash_forward_meta(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto args = take_arguments(op, stack);
  const at::Tensor& q = args[0].toTensor();
  const at::Tensor& k = args[1].toTensor();
  const at::Tensor& v = args[2].toTensor();
  const bool return_debug_mask = args[5].toBool();
  const int64_t b = q.size(0), h = q.size(1), lq = q.size(2), d = q.size(3), lk = k.size(2);
  at::Tensor debug_mask = at::empty({0}, q.options());
  if (return_debug_mask) {
    const int64_t block = d > 64 ? 128 : 256;
    int64_t padded_k = (lq + block - 1) / block;
    if (lk <= 128) {
      padded_k = 128;
    } else if (lk <= 256) {
      padded_k = 256;
    }
    debug_mask = at::empty({b, h, lq, padded_k}, q.options());
  }
  const auto uint64 = q.options().dtype(at::kUInt64);
  torch::jit::push(*stack, empty_like_layout_of(q, {b, h, lq, v.size(-1)}),
                   at::empty({b, h, lq}, q.options().dtype(at::kFloat)), at::Tensor(), at::Tensor(), lq, lk,
                   at::empty({2}, uint64), at::empty({}, uint64), debug_mask);
}

// (query, key, value, attn_bias?, compute_log_sumexp, dropout_p, is_causal, *, scale)
// -> (output, log_sumexp, philox_seed, philox_offset)
void efficient_forward_meta(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto args = take_arguments(op, stack);
  const at::Tensor& q = args[0].toTensor();
  const at::Tensor& v = args[2].toTensor();
  const bool compute_log_sumexp = args[4].toBool();
  const int64_t b = q.size(0), h = q.size(1), m = q.size(2);
  const int64_t lse_len = compute_log_sumexp ? (m + 31) / 32 * 32 : 0;  // padded to the kernel's 32-row blocks
  torch::jit::push(*stack, empty_heads_inner(q, b, h, m, v.size(-1)),
                   at::empty({b, h, lse_len}, q.options().dtype(at::kFloat)), philox_scalar(q), philox_scalar(q));
}

// (query, key, value, attn_bias?, compute_log_sumexp, dropout_p, is_causal, return_debug_mask, *, scale)
// -> (output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, philox_seed, philox_offset, debug_attn_mask)
void cudnn_forward_meta(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto args = take_arguments(op, stack);
  const at::Tensor& q = args[0].toTensor();
  const at::Tensor& k = args[1].toTensor();
  const at::Tensor& v = args[2].toTensor();
  const int64_t b = q.size(0), h = q.size(1), lq = q.size(2), lk = k.size(2);
  torch::jit::push(*stack, empty_like_layout_of(q, {b, h, lq, v.size(-1)}),
                   at::empty({b, h, lq, 1}, q.options().dtype(at::kFloat)), at::Tensor(), at::Tensor(), lq, lk,
                   philox_scalar(q), philox_scalar(q), at::Tensor());
}

// Flash and cuDNN backwards: gradients shaped and laid out like q, k, v
// (arguments 1, 2, 3).
void like_qkv_backward_meta(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto args = take_arguments(op, stack);
  torch::jit::push(*stack, at::empty_like(args[1].toTensor()), at::empty_like(args[2].toTensor()),
                   at::empty_like(args[3].toTensor()));
}

// (grad_out, query, key, value, attn_bias, out, logsumexp, philox_seed,
//  philox_offset, dropout_p, grad_input_mask, is_causal, *, scale)
// -> (grad_query, grad_key, grad_value, grad_attn_bias)
void efficient_backward_meta(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto args = take_arguments(op, stack);
  const at::Tensor& q = args[1].toTensor();
  const at::Tensor& k = args[2].toTensor();
  const at::Tensor& v = args[3].toTensor();
  const at::Tensor bias = args[4].isTensor() ? args[4].toTensor() : at::Tensor();
  const std::vector<bool> mask = args[10].toBoolList().vec();
  const int64_t b = q.size(0);
  at::Tensor grad_bias;
  if (bias.defined() && mask.size() > 3 && mask[3]) {
    std::vector<int64_t> sizes = bias.sizes().vec();
    const int64_t last = sizes.back();
    sizes.back() = (last + 15) / 16 * 16;  // the kernel writes rows aligned to 16
    grad_bias = at::empty(sizes, bias.options()).slice(-1, 0, last);
  }
  torch::jit::push(*stack, empty_heads_inner(q, b, q.size(1), q.size(2), q.size(3)),
                   empty_heads_inner(k, b, k.size(1), k.size(2), q.size(3)),
                   empty_heads_inner(v, b, v.size(1), k.size(2), v.size(3)), grad_bias);
}

// (query, key, value, dropout_p, is_causal, *, attn_mask, scale) -> (output, logsumexp)
void flash_cpu_forward_meta(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto args = take_arguments(op, stack);
  const at::Tensor& q = args[0].toTensor();
  const at::ScalarType lse_type = at::isReducedFloatingType(q.scalar_type()) ? at::kFloat : q.scalar_type();
  torch::jit::push(*stack, at::empty_like(q),
                   at::empty({q.size(0), q.size(2), q.size(1)}, q.options().dtype(lse_type)).transpose(1, 2));
}

// (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask, scale) -> grads
void flash_cpu_backward_meta(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto args = take_arguments(op, stack);
  auto grad_like = [](const at::Tensor& t) { return empty_heads_inner(t, t.size(0), t.size(1), t.size(2), t.size(3)); };
  torch::jit::push(*stack, grad_like(args[1].toTensor()), grad_like(args[2].toTensor()), grad_like(args[3].toTensor()));
}

#endif

// (grad_out, input, normalized_shape, rstd, weight?, output_mask) -> (grad_input, grad_weight)
void rms_norm_backward_meta(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto args = take_arguments(op, stack);
  const std::vector<bool> mask = args[5].toBoolList().vec();
  const at::Tensor weight = args[4].isTensor() ? args[4].toTensor() : at::Tensor();
  torch::jit::push(*stack, mask[0] ? at::empty_like(args[1].toTensor()) : at::Tensor(),
                   mask[1] && weight.defined() ? at::empty_like(weight) : at::Tensor());
}

// (self [*, n], num_samples, replacement, *, generator[, out]) -> long [*, num_samples]
void multinomial_meta(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto args = take_arguments(op, stack);
  const at::Tensor& probs = args[0].toTensor();
  std::vector<int64_t> shape = probs.sizes().vec();
  shape.back() = args[1].toInt();
  if (args.size() > 4 && args[4].isTensor()) {  // multinomial.out: resized as LibTorch's kernel does
    at::Tensor out = args[4].toTensor();
    out.resize_(shape);
    torch::jit::push(*stack, out);
    return;
  }
  torch::jit::push(*stack, at::empty(shape, probs.options().dtype(at::kLong)));
}

// Note [Device arguments on meta DTensors]
// An operator with a device argument dispatches on that device's backend key
// as well as on its tensors' keys, and Meta outranks DTensor's PrivateUse1.
// So on meta tensors (solo mode) aten::_to_copy of a DTensor with the device
// given reached the composite kernel, which returned a plain meta tensor:
// ToCopyBackward does grad.to(self.options()), device included, so
// x.to(dtype)'s backward handed the node before it a plain gradient. This
// Meta kernel sends a DTensor to DTensor's kernel (PrivateUse1) and a plain
// meta tensor to the composite kernel it had.
// (self, *, dtype, layout, device, pin_memory, non_blocking, memory_format) -> Tensor
void to_copy_meta(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t n = op.schema().arguments().size();
  if (is_dtensor((*stack)[stack->size() - n].toTensor())) {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), stack);
    return;
  }
  auto args = take_arguments(op, stack);
  torch::jit::push(*stack, at::native::_to_copy(args[0].toTensor(), args[1].toOptional<at::ScalarType>(),
                                                args[2].toOptional<at::Layout>(), args[3].toOptional<at::Device>(),
                                                args[4].toOptional<bool>(), args[5].toBool(),
                                                args[6].toOptional<at::MemoryFormat>()));
}

// True when aten::`name` ("multinomial.out": name.overload) exists in this
// LibTorch and has no Meta kernel yet.
bool lacks_meta_kernel(const std::string& name) {
  const size_t dot = name.find('.');
  const std::string overload = dot == std::string::npos ? "" : name.substr(dot + 1);
  auto op = c10::Dispatcher::singleton().findSchema({"aten::" + name.substr(0, dot), overload});
  return op.has_value() && !op->hasKernelForDispatchKey(c10::DispatchKey::Meta);
}

}  // namespace

void register_missing_meta_kernels() {
  static std::once_flag once;
  static std::unique_ptr<torch::Library> library;
  std::call_once(once, [] {
    library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::Meta, __FILE__,
                                               __LINE__);
    auto add = [](const char* name, torch::CppFunction kernel) {
      if (lacks_meta_kernel(name)) library->impl(name, std::move(kernel));
    };
    using F = torch::CppFunction;
#if DTENSOR_TORCH_AT_LEAST(2, 3)
    add("_scaled_dot_product_flash_attention", F::makeFromBoxedFunction<&flash_forward_meta>());
    add("_scaled_dot_product_efficient_attention", F::makeFromBoxedFunction<&efficient_forward_meta>());
    add("_scaled_dot_product_cudnn_attention", F::makeFromBoxedFunction<&cudnn_forward_meta>());
    add("_scaled_dot_product_flash_attention_backward", F::makeFromBoxedFunction<&like_qkv_backward_meta>());
    add("_scaled_dot_product_cudnn_attention_backward", F::makeFromBoxedFunction<&like_qkv_backward_meta>());
    add("_scaled_dot_product_efficient_attention_backward", F::makeFromBoxedFunction<&efficient_backward_meta>());
    add("_scaled_dot_product_flash_attention_for_cpu", F::makeFromBoxedFunction<&flash_cpu_forward_meta>());
    add("_scaled_dot_product_flash_attention_for_cpu_backward", F::makeFromBoxedFunction<&flash_cpu_backward_meta>());
#endif
    add("_fused_rms_norm_backward", F::makeFromBoxedFunction<&rms_norm_backward_meta>());
    add("multinomial", F::makeFromBoxedFunction<&multinomial_meta>());
    add("multinomial.out", F::makeFromBoxedFunction<&multinomial_meta>());
    add("_to_copy", F::makeFromBoxedFunction<&to_copy_meta>());
  });
}

}  // namespace dtensor
