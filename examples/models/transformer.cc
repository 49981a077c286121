// The test Transformer: modules, forward through dtensor::nn::call, TP plan.
#include "examples/models/transformer.h"

#include <ATen/Functions.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/compat/torch_compat.h"
#include "core/nn/checkpoint.h"
#include "core/nn/module_call.h"
#include "core/parallel/module_params.h"
#include "examples/models/seeded_init.h"

namespace dtensor::examples {

// Note [Attention heads under tensor parallelism]
// PyTorch's Attention views the projections as [bsz, seq, n_heads, head_dim].
// Under TP, wq/wk/wv are column-sharded: each rank computes dim / tp output
// features, i.e. n_heads / tp whole heads (heads are contiguous blocks of
// head_dim features; n_heads % tp == 0 keeps them whole). With
// use_local_output=false (PyTorch's default plan, and ours) the projections
// are DTensors with *global* shapes: the view with the global n_heads is
// right and sharding propagation carries S(2) of [b, s, dim] to the heads
// dim. Only when the projections are made local (use_local_output=true,
// PyTorch's local_output_for_attn) does the view see dim / tp features, and
// PyTorch then sets layer.attention.n_heads = n_heads // tp. Here the head
// count is derived from the projection (q.size(-1) / head_dim), which is
// right in both cases, so nothing is adjusted after parallelizing.
// Heads are moved to the front ([h, b, s, hd] -> [h*b, s, hd]) before bmm,
// so the flatten keeps the sharded heads as its outer dim: a shard of an
// inner dim of a flatten cannot follow the data and would be all-gathered.
// (PyTorch calls SDPA, which has its own sharding rule.)

AttentionImpl::AttentionImpl(const ModelArgs& args)
    : head_dim_(args.dim_ / args.n_heads_),
      dropout_p_(args.dropout_p_),
      use_attn_mask_(args.use_attn_mask_),
      use_sdpa_(args.use_sdpa_) {
  TORCH_CHECK(args.dim_ % args.n_heads_ == 0, "Attention: dim ", args.dim_, " is not a multiple of n_heads ",
              args.n_heads_);
  auto linear = [&](const char* name) {
    return register_module(name, torch::nn::Linear(torch::nn::LinearOptions(args.dim_, args.dim_).bias(false)));
  };
  wq = linear("wq");
  wk = linear("wk");
  wv = linear("wv");
  wo = linear("wo");
  resid_dropout = register_module("resid_dropout", torch::nn::Dropout(args.dropout_p_));
}

at::Tensor AttentionImpl::forward(const at::Tensor& x) {
  const int64_t bsz = x.size(0), seq_len = x.size(1);
  at::Tensor q = nn::call(wq, x), k = nn::call(wk, x), v = nn::call(wv, x);
  const int64_t n_heads = q.size(-1) / head_dim_;  // See Note [Attention heads under tensor parallelism]
  if (use_sdpa_) {  // [bsz, n_heads, seq, head_dim], as PyTorch's model
    auto heads = [&](const at::Tensor& t) { return t.view({bsz, seq_len, n_heads, head_dim_}).transpose(1, 2); };
    at::Tensor out = compat::scaled_dot_product_attention(heads(q), heads(k), heads(v), use_attn_mask_,
                                                          /*attn_mask=*/{}, is_training() ? dropout_p_ : 0.0);
    out = out.transpose(1, 2).contiguous().view({bsz, seq_len, n_heads * head_dim_});
    return nn::call(resid_dropout, nn::call(wo, out));
  }
  auto heads_first = [&](const at::Tensor& t) {
    return t.view({bsz, seq_len, n_heads, head_dim_})
        .permute({2, 0, 1, 3})
        .reshape({n_heads * bsz, seq_len, head_dim_});
  };
  q = heads_first(q);
  k = heads_first(k);
  v = heads_first(v);
  at::Tensor scores = at::bmm(q, k.transpose(1, 2)).mul(1.0 / std::sqrt(static_cast<double>(head_dim_)));
  if (use_attn_mask_) {
    at::Tensor causal = at::ones({seq_len, seq_len}, x.options().dtype(at::kBool)).triu(1);
    scores = scores.masked_fill(replicate_like(causal, scores), -std::numeric_limits<double>::infinity());
  }
  at::Tensor attn = at::dropout(at::softmax(scores, -1), dropout_p_, is_training());
  at::Tensor out = at::bmm(attn, v)
                       .view({n_heads, bsz, seq_len, head_dim_})
                       .permute({1, 2, 0, 3})
                       .reshape({bsz, seq_len, n_heads * head_dim_});
  return nn::call(resid_dropout, nn::call(wo, out));
}

FeedForwardImpl::FeedForwardImpl(int64_t dim, int64_t hidden_dim, double dropout_p) {
  w1 = register_module("w1", torch::nn::Linear(dim, hidden_dim));
  gelu = register_module("gelu", torch::nn::GELU());
  w2 = register_module("w2", torch::nn::Linear(hidden_dim, dim));
  resid_dropout = register_module("resid_dropout", torch::nn::Dropout(dropout_p));
}

at::Tensor FeedForwardImpl::forward(const at::Tensor& x) {
  return nn::call(resid_dropout, nn::call(w2, nn::call(gelu, nn::call(w1, x))));
}

TransformerBlockImpl::TransformerBlockImpl(const ModelArgs& args, bool checkpointed)
    : checkpointed_(checkpointed || args.checkpoint_ops_), selective_ops_(args.checkpoint_ops_) {
  attention_norm =
      register_module("attention_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({args.dim_})));
  attention = register_module("attention", Attention(args));
  ffn_norm = register_module("ffn_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({args.dim_})));
  feed_forward = register_module("feed_forward", FeedForward(args.dim_, 4 * args.dim_, args.dropout_p_));
}

at::Tensor TransformerBlockImpl::forward(const at::Tensor& x) {
  if (!checkpointed_) return body(x);
  const auto fn = [this](const nn::TensorList& in) { return body(in[0]); };
  return selective_ops_ ? nn::checkpoint(fn, {x}, nn::torchtitan_op_policy()) : nn::checkpoint(fn, {x});
}

at::Tensor TransformerBlockImpl::body(const at::Tensor& x) {
  at::Tensor h = x + nn::call(attention, nn::call(attention_norm, x));
  return h + nn::call(feed_forward, nn::call(ffn_norm, h));
}

TransformerImpl::TransformerImpl(const ModelArgs& args) : args_(args) {
  tok_embeddings = register_module("tok_embeddings", torch::nn::Embedding(args.vocab_size_, args.dim_));
  pos_embeddings = register_module("pos_embeddings", torch::nn::Embedding(args.max_seq_len_, args.dim_));
  dropout = register_module("dropout", torch::nn::Dropout(args.dropout_p_));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < args.n_layers_; ++i) {
    const int64_t every = args.checkpoint_every_;
    blocks_.emplace_back(args, /*checkpointed=*/every > 0 && (i + 1) % every == 0);
    layers->push_back(blocks_.back());
  }
  norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({args.dim_})));
  output = register_module(
      "output", torch::nn::Linear(torch::nn::LinearOptions(args.dim_, args.vocab_size_).bias(false)));
  seeded_init(*this, args.seed_);
  if (args.device_ != c10::Device(c10::kCPU)) to(args.device_);
  if (args.weight_tying_) set_parameter(*output, "weight", tok_embeddings->weight);
}

at::Tensor TransformerImpl::forward(const at::Tensor& tokens) {
  TORCH_CHECK(tokens.dim() == 2, "Transformer: tokens must be [bsz, seq_len], got ", tokens.sizes());
  const int64_t seq_len = tokens.size(1);
  TORCH_CHECK(seq_len <= args_.max_seq_len_, "Transformer: seq_len ", seq_len, " > max_seq_len ",
              args_.max_seq_len_);
  at::Tensor h = nn::call(tok_embeddings, tokens);
  // Positions are the same on every rank; a replicated DTensor when the
  // tokens are one (plain calls on DTensor inputs).
  at::Tensor pos = replicate_like(at::arange(seq_len, tokens.options().dtype(at::kLong)), tokens);
  h = h + nn::call(pos_embeddings, pos);
  h = nn::call(dropout, h);
  for (TransformerBlock& block : blocks_) h = nn::call(block, h);
  h = nn::call(norm, h);
  return nn::call(output, h);
}

ParallelizePlan transformer_tp_plan(bool sequence_parallel, bool local_output_for_attn) {
  const bool sp = sequence_parallel;
  ParallelizePlan plan;
  plan.push_back({"tok_embeddings",
                  RowwiseParallel().input_layouts(Replicate()).output_layouts(sp ? Shard(1) : Replicate())});
  // Positions are [seq_len, dim]: the sequence is dim 0.
  plan.push_back({"pos_embeddings",
                  RowwiseParallel().input_layouts(Replicate()).output_layouts(sp ? Shard(0) : Replicate())});
  if (sp) {
    plan.push_back({"norm", SequenceParallel()});
    plan.push_back({"layers.*.attention",
                    PrepareModuleInput().input_layouts({Shard(1)}).desired_input_layouts({Replicate()})});
    plan.push_back({"layers.*.attention_norm", SequenceParallel()});
    plan.push_back({"layers.*.ffn_norm", SequenceParallel()});
  }
  for (const char* w : {"wq", "wk", "wv"}) {
    plan.push_back(
        {std::string("layers.*.attention.") + w, ColwiseParallel().use_local_output(local_output_for_attn)});
  }
  plan.push_back(
      {"layers.*.attention.wo", sp ? RowwiseParallel().output_layouts(Shard(1)) : RowwiseParallel()});
  plan.push_back(
      {"layers.*.feed_forward.w1", sp ? ColwiseParallel().input_layouts(Shard(1)) : ColwiseParallel()});
  plan.push_back(
      {"layers.*.feed_forward.w2", sp ? RowwiseParallel().output_layouts(Shard(1)) : RowwiseParallel()});
  plan.push_back(
      {"output", ColwiseParallel().input_layouts(sp ? Shard(1) : Replicate()).output_layouts(Replicate())});
  return plan;
}

void parallelize_transformer(TransformerImpl& model, const DeviceMesh& tp_mesh, bool sequence_parallel,
                             bool local_output_for_attn, const ParallelizeOptions& options) {
  parallelize_module(model, tp_mesh, transformer_tp_plan(sequence_parallel, local_output_for_attn), options);
  // Both are [vocab, dim] sharded S(0): the tied weight keeps one layout.
  if (model.args().weight_tying_) set_parameter(*model.output, "weight", model.tok_embeddings->weight);
}

}  // namespace dtensor::examples
