// The small Transformer of PyTorch's DTensor tests
// (torch/testing/_internal/distributed/_tensor/common_dtensor.py: ModelArgs,
// Attention, FeedForward, TransformerBlock, Transformer) and its
// tensor-parallel plan (Transformer.parallelize), with and without sequence
// parallelism.
//   auto model = examples::Transformer(examples::ModelArgs().dropout_p(0.0));
//   examples::parallelize_transformer(*model, mesh["tp"], /*sequence_parallel=*/true);
//   at::Tensor logits = model->forward(tokens);   // tokens [bsz, seq] int64, plain
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <vector>

#include "core/device_mesh.h"
#include "core/parallel/parallelize.h"

namespace dtensor::examples {

/// PyTorch's ModelArgs, same defaults (weight_tying false as in the issue's
/// parity runs; checkpoint_activations has no LibTorch counterpart).
struct ModelArgs {
  ModelArgs& n_layers(int64_t v) {
    n_layers_ = v;
    return *this;
  }
  ModelArgs& vocab_size(int64_t v) {
    vocab_size_ = v;
    return *this;
  }
  ModelArgs& max_seq_len(int64_t v) {
    max_seq_len_ = v;
    return *this;
  }
  ModelArgs& dim(int64_t v) {
    dim_ = v;
    return *this;
  }
  ModelArgs& n_heads(int64_t v) {
    n_heads_ = v;
    return *this;
  }
  ModelArgs& dropout_p(double v) {
    dropout_p_ = v;
    return *this;
  }
  ModelArgs& use_attn_mask(bool v) {
    use_attn_mask_ = v;
    return *this;
  }
  /// Attention through at::scaled_dot_product_attention on [bsz, n_heads,
  /// seq, head_dim] (as PyTorch's model) instead of bmm/softmax; with it,
  /// dtensor::experimental::context_parallel applies to a sequence-sharded
  /// input. Needs LibTorch 2.x.
  ModelArgs& use_sdpa(bool v) {
    use_sdpa_ = v;
    return *this;
  }
  ModelArgs& weight_tying(bool v) {
    weight_tying_ = v;
    return *this;
  }
  /// Activation checkpointing of blocks (dtensor::nn::checkpoint inside the
  /// block's forward, torchtitan's "selective layer" AC): 0 none, 1 every
  /// block (full AC), n every n-th block (blocks n-1, 2n-1, ...).
  ModelArgs& checkpoint_every(int64_t v) {
    checkpoint_every_ = v;
    return *this;
  }
  /// torchtitan's "selective op" AC: every block through
  /// dtensor::nn::checkpoint with nn::torchtitan_op_policy() (the outputs of
  /// every other matmul kept from the forward, the rest recomputed); takes
  /// precedence over checkpoint_every.
  ModelArgs& checkpoint_ops(bool v) {
    checkpoint_ops_ = v;
    return *this;
  }
  ModelArgs& seed(uint64_t v) {
    seed_ = v;
    return *this;
  }
  /// Where the parameters live (seeded_init's values, moved there after
  /// initialisation). TransformerTrainer sets its mesh's device.
  ModelArgs& device(c10::Device v) {
    device_ = v;
    return *this;
  }

  int64_t n_layers_ = 2;
  int64_t vocab_size_ = 8;
  int64_t max_seq_len_ = 16;
  int64_t dim_ = 16;
  int64_t n_heads_ = 4;
  double dropout_p_ = 0.1;
  bool use_attn_mask_ = true;
  bool use_sdpa_ = false;
  bool weight_tying_ = false;
  int64_t checkpoint_every_ = 0;
  bool checkpoint_ops_ = false;
  uint64_t seed_ = 0;  // seeded_init seed
  c10::Device device_ = c10::kCPU;
};

/// Multi-head self-attention without biases; causal softmax(QK^T/sqrt(d))V
/// written with bmm/softmax (LibTorch 1.13 has no public SDPA), or with
/// scaled_dot_product_attention (ModelArgs::use_sdpa).
/// See Note [Attention heads under tensor parallelism].
class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const ModelArgs& args);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Linear wq{nullptr}, wk{nullptr}, wv{nullptr}, wo{nullptr};
  torch::nn::Dropout resid_dropout{nullptr};

 private:
  int64_t head_dim_;
  double dropout_p_;
  bool use_attn_mask_;
  bool use_sdpa_;
};
TORCH_MODULE(Attention);

/// w2(gelu(w1(x))) then dropout; w1: dim -> 4 dim, both with bias.
class FeedForwardImpl : public torch::nn::Module {
 public:
  FeedForwardImpl(int64_t dim, int64_t hidden_dim, double dropout_p);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Linear w1{nullptr};
  torch::nn::GELU gelu{nullptr};
  torch::nn::Linear w2{nullptr};
  torch::nn::Dropout resid_dropout{nullptr};
};
TORCH_MODULE(FeedForward);

/// h = x + attention(attention_norm(x)); out = h + feed_forward(ffn_norm(h)).
class TransformerBlockImpl : public torch::nn::Module {
 public:
  explicit TransformerBlockImpl(const ModelArgs& args, bool checkpointed = false);
  /// The block; when checkpointed, through dtensor::nn::checkpoint (its
  /// activations are recomputed in backward).
  at::Tensor forward(const at::Tensor& x);
  bool checkpointed() const { return checkpointed_; }

  torch::nn::LayerNorm attention_norm{nullptr};
  Attention attention{nullptr};
  torch::nn::LayerNorm ffn_norm{nullptr};
  FeedForward feed_forward{nullptr};

 private:
  at::Tensor body(const at::Tensor& x);
  bool checkpointed_;
  bool selective_ops_;  // ModelArgs::checkpoint_ops
};
TORCH_MODULE(TransformerBlock);

/// Token + position embeddings, dropout, n_layers blocks, final LayerNorm,
/// output Linear (no bias; tied to tok_embeddings when weight_tying).
/// Parameters come from seeded_init(args.seed) (in float; convert with
/// ->to(kDouble) before parallelizing), on args.device (the same values on
/// every device). Tokens must be on that device too. The logits keep the model's dtype
/// (PyTorch's model ends in .float(), which would cut float64 runs to float32).
class TransformerImpl : public torch::nn::Module {
 public:
  explicit TransformerImpl(const ModelArgs& args = {});
  /// tokens: [bsz, seq_len] int64 (plain, the same on every tp rank).
  /// Returns logits [bsz, seq_len, vocab_size].
  at::Tensor forward(const at::Tensor& tokens);
  const ModelArgs& args() const { return args_; }

  torch::nn::Embedding tok_embeddings{nullptr};
  torch::nn::Embedding pos_embeddings{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::ModuleList layers{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear output{nullptr};

 private:
  ModelArgs args_;
  std::vector<TransformerBlock> blocks_;  // the entries of `layers`, typed
};
TORCH_MODULE(Transformer);

/// PyTorch's Transformer.parallelize as one plan with wildcards
/// ("layers.*.attention.wq"). Without sequence parallelism: embeddings
/// RowwiseParallel (R in, R out), wq/wk/wv ColwiseParallel (DTensor out),
/// wo/w2 RowwiseParallel, w1 ColwiseParallel, output ColwiseParallel (R
/// out). With it: embedding outputs S(1) / S(0), norms SequenceParallel,
/// attention PrepareModuleInput(S(1) -> R), w1 input S(1), wo/w2 output S(1),
/// output input S(1). `local_output_for_attn` makes wq/wk/wv return local
/// tensors (PyTorch's option of the same name); the attention then works on
/// this rank's heads only (see Note [Attention heads under tensor parallelism]).
ParallelizePlan transformer_tp_plan(bool sequence_parallel, bool local_output_for_attn = false);

/// Applies transformer_tp_plan on the 1-D `tp_mesh`, then re-ties
/// output.weight to tok_embeddings.weight when args.weight_tying (both are
/// S(0) over the vocabulary), as PyTorch does. Example:
///   parallelize_transformer(*model, mesh["tp"], /*sequence_parallel=*/true);
void parallelize_transformer(TransformerImpl& model, const DeviceMesh& tp_mesh, bool sequence_parallel,
                             bool local_output_for_attn = false, const ParallelizeOptions& options = {});

}  // namespace dtensor::examples
