// Context-parallel attention: key/value all-gathered along the sequence, each
// rank attending its own query block (ContextParallelGuard brings it, for its
// scope, as the attention of sequence-sharded DTensors).
#include "core/experimental/context_parallel.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/util/Exception.h>

#include <limits>
#include <vector>

#include "core/compat/torch_compat.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/ops/builtin_rules.h"

namespace dtensor::experimental {
namespace {

// Note [Context parallel attention]
// q, k, v are [..., seq, head_dim] DTensors sharded on the sequence dim
// (seq = ndim - 2) over one or more mesh dims (the CP dims; other mesh dims
// may shard other dims, e.g. the batch). Per rank:
//   k_all = k.redistribute(seq -> Replicate on the CP dims)   one all_gather (v alike)
//   out_local = softmax(q_local k_all^T * scale + mask) v_all  the math path, local
//   out = from_local(out_local, q's placements)
// With is_causal, the mask lets query row r (global position offset + r,
// offset = this rank's first query position) see keys 0 .. offset + r, which
// is the single-device causal mask restricted to this rank's rows. k_all and
// v_all leave the DTensor world with Partial(sum) gradients on the CP dims
// (to_local's grad_placements): each rank's gradient covers only its
// queries' contribution, so the backward of the redistribution is one
// reduce_scatter each for dk and dv; dq stays local. PyTorch's CP (CUDA
// flash/efficient/cuDNN kernels only) merges per-block results by their
// log-sum-exp, gathers k and v as one buffer and re-gathers them in
// backward; this version saves the gathered k and v for backward instead
// (memory O(seq) per rank).

#if DTENSOR_TORCH_AT_LEAST(2, 0)
bool is_seq_shard(const Placement& p, int64_t seq, int64_t ndim) {
  return p.is_shard() && (p.shard_dim() == seq || p.shard_dim() == seq - ndim);
}
#endif

at::Tensor context_parallel_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                      const c10::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                                      c10::optional<double> scale, bool enable_gqa) {
#if DTENSOR_TORCH_AT_LEAST(2, 0)
  TORCH_CHECK(is_dtensor(key) && is_dtensor(value), "context_parallel: scaled_dot_product_attention with a ",
              "sequence-sharded query needs key and value as DTensors with the query's placements");
  const DTensor q(query), k(key), v(value);
  const int64_t ndim = q.dim(), seq = ndim - 2;
  TORCH_CHECK(k.placements() == q.placements() && v.placements() == q.placements(),
              "context_parallel: scaled_dot_product_attention expects key and value sharded like the query (",
              to_string(q.placements()), "), got key ", to_string(k.placements()), " and value ",
              to_string(v.placements()), "; redistribute them to the query's placements");
  TORCH_CHECK(!attn_mask.has_value() || !attn_mask->defined(),
              "context_parallel: scaled_dot_product_attention with attn_mask is not supported; use is_causal, ",
              "or compute attention outside the context_parallel scope");
  TORCH_CHECK(dropout_p == 0.0, "context_parallel: scaled_dot_product_attention with dropout_p=", dropout_p,
              " is not supported (the result would not match one device); pass dropout_p=0");
  TORCH_CHECK(!is_causal || q.size(seq) == k.size(seq), "context_parallel: is_causal needs the same query and ",
              "key sequence lengths, got ", q.size(seq), " and ", k.size(seq));
  Placements gathered = q.placements(), grad_of_gathered = q.placements();
  for (size_t m = 0; m < gathered.size(); ++m) {
    if (!is_seq_shard(gathered[m], seq, ndim)) continue;
    gathered[m] = Replicate();
    grad_of_gathered[m] = Partial();
  }
  const at::Tensor k_all = k.redistribute(gathered).to_local(grad_of_gathered);
  const at::Tensor v_all = v.redistribute(gathered).to_local(grad_of_gathered);
  const at::Tensor q_local = q.to_local();
  c10::optional<at::Tensor> mask;
  if (is_causal) {
    const int64_t offset = q.spec().global_offset()[static_cast<size_t>(seq)];
    const auto index = q_local.options().dtype(at::kLong);
    const at::Tensor rows = at::arange(q_local.size(seq), index).add(offset).unsqueeze(1);
    const at::Tensor allowed = at::arange(k_all.size(seq), index).unsqueeze(0).le(rows);
    // Additive: the math path adds attn_mask to the scores as given (only
    // the public op converts a boolean mask).
    mask = at::zeros(allowed.sizes(), q_local.options())
               .masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
  }
  // Contiguous, with contiguous global strides: the math path may return a
  // transposed layout, and the global strides must describe the local one.
  const at::Tensor out_local = std::get<0>(at::_scaled_dot_product_attention_math(
      q_local, k_all, v_all, mask, /*dropout_p=*/0.0, /*is_causal=*/false, /*dropout_mask=*/c10::nullopt, scale,
      enable_gqa)).contiguous();
  FromLocalOptions options;
  std::vector<int64_t> shape = q.sizes().vec();
  shape.back() = v.size(-1);
  options.shape = shape;
  options.stride = contiguous_strides(shape);
  return DTensor::from_local(out_local, q.device_mesh(), q.placements(), options);
#else
  (void)query, (void)key, (void)value, (void)attn_mask, (void)dropout_p, (void)is_causal, (void)scale,
      (void)enable_gqa;
  TORCH_CHECK(false, "context_parallel needs LibTorch 2.x");
#endif
}

}  // namespace

ContextParallelGuard::ContextParallelGuard()
    : mode_(RuleMode::kContextParallel), attention_(&context_parallel_attention) {
  // 1.13's attention op (_scaled_dot_product_attention) has no hook for it.
  TORCH_CHECK(DTENSOR_TORCH_AT_LEAST(2, 0), "context_parallel needs LibTorch 2.x; this build uses ",
              TORCH_VERSION, ": attention on sequence-sharded inputs would run by plain sharding propagation");
}

}  // namespace dtensor::experimental
