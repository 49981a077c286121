// The Llama-style step program. See llama_step.h.
#include "planner/llama_step.h"

#include <ATen/Functions.h>
#include <torch/nn/functional/loss.h>

#include <cmath>
#include <optional>
#include <string>

#include "core/dtensor.h"
#include "core/factories.h"
#include "core/fsdp/fully_shard.h"
#include "core/parallel/module_params.h"
#include "core/nn/checkpoint.h"
#include "core/nn/module_call.h"
#include "planner/training_update.h"

namespace dtensor::planner {
namespace {

// A module that only holds parameters; forward is written by its parent
// inside a ModuleScope so that tracing sees the module boundaries.
struct Params : torch::nn::Module {
  at::Tensor add(const std::string& name, at::Tensor value) { return register_parameter(name, std::move(value)); }
};

// Note [Planner parameters by name]
// The step reads each parameter from its module when it uses it, not from a
// handle kept at build time: under fully_shard (PlanConfig::fsdp) a module
// registers its sharded parameters between forwards and the unsharded ones
// inside them (core/fsdp/param_group.h), and the computation must see the
// latter.
at::Tensor param(const std::shared_ptr<Params>& owner, const char* name) {
  return owner->named_parameters(/*recurse=*/false)[name];
}

struct Layer {
  std::shared_ptr<Params> block, attention_norm, attention, ffn_norm, feed_forward;
};

struct Llama {
  std::shared_ptr<Params> root, tok_embeddings, norm, output;
  std::vector<Layer> layers;
};

bool has_embedding(PipelineStage stage) { return stage == PipelineStage::kWhole || stage == PipelineStage::kFirst; }
bool has_head(PipelineStage stage) { return stage == PipelineStage::kWhole || stage == PipelineStage::kLast; }

// The model, or one pipeline stage's part of it (Note [Pipeline stages] in
// planner/estimate.cc): m.layers layers, with the embedding and the head
// (final norm, output) as the stage holds them.
Llama build(const ModelConfig& m, const DeviceMesh& tp, c10::ScalarType dtype, PipelineStage stage) {
  // Params mirrors no parameter in a C++ member (Note [Planner parameters by
  // name]): nothing to rebind when fully_shard swaps them.
  static const bool bound = [] {
    register_member_binder<Params>([](Params&) {});
    return true;
  }();
  (void)bound;
  const at::TensorOptions opts = at::TensorOptions().dtype(dtype).requires_grad(true);
  auto add = [&](const std::shared_ptr<Params>& owner, const char* name, std::vector<int64_t> shape, Placement p) {
    owner->add(name, empty(shape, tp, {p}, opts));
  };
  const int64_t kv_dim = m.dim / m.heads * m.kv_heads;
  Llama l;
  l.root = std::make_shared<Params>();
  if (has_embedding(stage)) {
    l.tok_embeddings = l.root->register_module("tok_embeddings", std::make_shared<Params>());
    add(l.tok_embeddings, "weight", {m.vocab, m.dim}, Shard(0));
  }
  auto layers = l.root->register_module("layers", std::make_shared<Params>());
  for (int64_t i = 0; i < m.layers; ++i) {
    Layer y;
    y.block = layers->register_module(std::to_string(i), std::make_shared<Params>());
    y.attention_norm = y.block->register_module("attention_norm", std::make_shared<Params>());
    y.attention = y.block->register_module("attention", std::make_shared<Params>());
    y.ffn_norm = y.block->register_module("ffn_norm", std::make_shared<Params>());
    y.feed_forward = y.block->register_module("feed_forward", std::make_shared<Params>());
    add(y.attention_norm, "weight", {m.dim}, Replicate());
    add(y.attention, "wq", {m.dim, m.dim}, Shard(1));
    add(y.attention, "wk", {m.dim, kv_dim}, Shard(1));
    add(y.attention, "wv", {m.dim, kv_dim}, Shard(1));
    add(y.attention, "wo", {m.dim, m.dim}, Shard(0));
    add(y.ffn_norm, "weight", {m.dim}, Replicate());
    add(y.feed_forward, "w1", {m.dim, m.ffn}, Shard(1));
    add(y.feed_forward, "w3", {m.dim, m.ffn}, Shard(1));
    add(y.feed_forward, "w2", {m.ffn, m.dim}, Shard(0));
    l.layers.push_back(y);
  }
  if (has_head(stage)) {
    l.norm = l.root->register_module("norm", std::make_shared<Params>());
    add(l.norm, "weight", {m.dim}, Replicate());
    l.output = l.root->register_module("output", std::make_shared<Params>());
    add(l.output, "weight", {m.dim, m.vocab}, Shard(1));
  }
  return l;
}

// Grouped-query attention on [b, s, dim] (tp-sharded on dim when tp > 1)
// through the fused causal attention kernel, as torchtitan runs SDPA on a GPU
// (flash): k and v heads repeated to the query heads (torchtitan's
// repeat_kv), [b, heads, s, hd], heads sharded over tp. The kernel keeps
// its output and logsumexp for backward, not the [s, s] scores: activation
// memory grows with s, not s^2 (on meta tensors through the meta kernels of
// core/ops/meta_kernels.cc).
// With ModelConfig::rope, q and k take torchtitan's rotary embedding first
// (apply_rotary_emb: upcast to float32, one complex multiply by the
// precomputed frequencies, back to the model's dtype). The planner needs its
// kernels' traffic and memory, not its values: `freqs` is a float32
// [s, 1, hd] tensor (the frequencies' hd / 2 complex numbers as pairs),
// broadcast over the heads by one mul.
at::Tensor attention(const ModelConfig& m, const at::Tensor& x, const Layer& y, const at::Tensor& freqs) {
  const int64_t b = x.size(0), s = x.size(1), hd = m.dim / m.heads, kvh = m.kv_heads, rep = m.heads / m.kv_heads;
  auto heads_first = [&](const at::Tensor& t, int64_t heads) { return t.view({b, s, heads, hd}).transpose(1, 2); };
  auto repeat_kv = [&](const at::Tensor& t) {
    if (rep == 1) return t;
    return t.view({b, s, kvh, 1, hd}).expand({b, s, kvh, rep, hd}).reshape({b, s, kvh * rep * hd});
  };
  auto rotary = [&](const at::Tensor& t, int64_t heads) {
    if (!freqs.defined()) return t;
    return (t.view({b, s, heads, hd}).to(at::kFloat) * freqs).to(t.scalar_type()).view({b, s, heads * hd});
  };
  const at::Tensor q = heads_first(rotary(at::matmul(x, param(y.attention, "wq")), m.heads), m.heads);
  const at::Tensor k = heads_first(repeat_kv(rotary(at::matmul(x, param(y.attention, "wk")), kvh)), m.heads);
  const at::Tensor v = heads_first(repeat_kv(at::matmul(x, param(y.attention, "wv"))), m.heads);
  // The CPU's flash kernel is its own op (a solo world on CPU tensors runs it).
  const at::Tensor out = DTensor(q).local_tensor().device().is_cpu()
                             ? std::get<0>(at::_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true))
                             : std::get<0>(at::_scaled_dot_product_flash_attention(q, k, v, 0.0, /*is_causal=*/true));
  return at::matmul(out.transpose(1, 2).reshape({b, s, m.dim}), param(y.attention, "wo"));  // Partial over tp
}

// Note [Embedding on meta tensors]
// LibTorch's C++ build has no meta kernel for index_select (Python registers
// one in torch/_meta_registrations.py), so a vocab-parallel lookup cannot run
// on meta tensors. On meta, the lookup's result is made as what it is: a
// Partial(sum) [b, s, dim] tensor over tp (each rank's rows, zeros
// elsewhere). Its collectives (the all_reduce or reduce_scatter that consumes
// it) and its output bytes are traced as they are; the backward's scatter
// into the weight's gradient (local: no comm; the gradient itself exists from
// the warm-up, see Note [Planner step]) is not.
at::Tensor embedding_lookup(const at::Tensor& weight, const at::Tensor& tokens, int64_t dim) {
  const at::Tensor w = DTensor(weight).local_tensor();
  if (w.device().type() != c10::kMeta) return at::embedding(weight, tokens);
  const DTensor t(tokens);
  at::Tensor local = at::empty({t.size(0), t.size(1), dim}, w.options());
  return DTensor::from_local(local, t.device_mesh(), {Partial()});
}

// RMSNorm as eager PyTorch computes it without a fused kernel (Llama's
// reference code): x * rsqrt(mean(x^2) + eps) * weight.
at::Tensor norm(const at::Tensor& x, const at::Tensor& w) {
  return x * at::rsqrt(x.pow(2).mean({-1}, /*keepdim=*/true) + 1e-5) * w;
}

// The input of a tensor-parallel region (attention, FFN, output): replicated
// over tp. Without sequence parallelism the gradients the region's column-
// parallel matmuls return are Partial; the boundary sums them with one
// all_reduce (Megatron's "f", PyTorch's ColwiseParallel input handling)
// instead of letting each reach the norm's backward. With it, the input is
// all-gathered from sequence shards and its backward is one reduce_scatter.
at::Tensor region_input(const at::Tensor& x, bool sp) {
  const DTensor d(x);
  if (sp) return d.redistribute({Replicate()});
  return DTensor::from_local(d.to_local(Placements{Replicate()}), d.device_mesh(), {Replicate()});
}

}  // namespace

StepProgram llama_step_program() {
  return [](World& world, c10::DeviceType device, const ModelConfig& m, const PlanConfig& plan,
            StepRecorder& recorder) {
    (void)world;
    const int64_t rep = plan.mesh.size_of("rep"), dp = plan.mesh.size_of("dp"), tp = plan.mesh.size_of("tp");
    DeviceMesh mesh = rep > 1 ? DeviceMesh::init(device, {rep, dp, tp}, {"rep", "dp", "tp"})
                              : DeviceMesh::init(device, {dp, tp}, {"dp", "tp"});
    DeviceMesh tp_mesh = mesh["tp"], dp_mesh = mesh["dp"];
    // HSDP: fully_shard over (rep, dp), the shards replicated over rep.
    const DeviceMesh fsdp_mesh = rep > 1 ? mesh[{"rep", "dp"}] : dp_mesh;
    const c10::ScalarType dtype = m.dtype == "bfloat16" ? at::kBFloat16
                                  : m.dtype == "float16" ? at::kHalf
                                  : m.dtype == "float64" ? at::kDouble
                                                         : at::kFloat;
    // Mixed precision: float32 parameters (and so gradients and optimizer
    // state), gathered in the model's dtype (PlanConfig::mixed_precision).
    const bool mixed = !plan.mixed_precision.empty();
    Llama l = build(m, tp_mesh, mixed ? at::kFloat : dtype, plan.stage);
    // FSDP (+ TP): one group per layer, then the root's (embedding, final
    // norm, output), as torchtitan applies fully_shard.
    if (plan.fsdp) {
      FullyShardOptions options;
      if (mixed) options.mp_policy = MixedPrecisionPolicy{dtype, at::kFloat, std::nullopt, true};
      for (const Layer& y : l.layers) fully_shard(*y.block, fsdp_mesh, options);
      fully_shard(*l.root, fsdp_mesh, options);
    }
    TrainingUpdate update(*l.root, dp_mesh, plan);
    update.warm_up();
    recorder.record_static(*l.root, update.optimizer());

    const bool sp = plan.sequence_parallel && tp > 1;
    const Placement stream = sp ? Placement(Shard(1)) : Placement(Replicate());
    const int64_t b = plan.micro_batch, s = m.seq;
    const at::TensorOptions longs = at::TensorOptions().dtype(at::kLong);
    // The rotary embedding's frequencies: one buffer for every layer, as torchtitan's freqs_cis.
    const at::Tensor freqs =
        m.rope ? ones({s, 1, m.dim / m.heads}, tp_mesh, {Replicate()}, at::TensorOptions().dtype(at::kFloat)) : at::Tensor();
    // One forward + backward (gradients accumulate; See Note [Planner step]).
    auto micro_step = [&] {
      at::Tensor tokens = zeros({b, s}, tp_mesh, {Replicate()}, longs);
      at::Tensor targets = zeros({b * s}, tp_mesh, {Replicate()}, longs);
      // A later pipeline stage's input: the previous stage's activations,
      // received (their gradient is what this stage sends back).
      at::Tensor h = l.tok_embeddings ? at::Tensor()
                                      : zeros({b, s, m.dim}, tp_mesh, {stream},
                                              at::TensorOptions().dtype(dtype).requires_grad(true));
      // fully_shard's root sees the model's (or stage's) boundary (its other
      // modules are seen at theirs below).
      std::optional<nn::ModuleScope> root;
      if (plan.fsdp) {
        root.emplace(*l.root, nn::TensorList{h.defined() ? h : tokens});
        if (h.defined()) h = root->inputs()[0];
      }
      if (l.tok_embeddings) {
        nn::ModuleScope scope(*l.tok_embeddings, {tokens});
        h = scope.output(
            DTensor(embedding_lookup(param(l.tok_embeddings, "weight"), tokens, m.dim)).redistribute({stream}));
      }
      for (size_t i = 0; i < l.layers.size(); ++i) {
        const Layer& y = l.layers[i];
        nn::ModuleScope block(*y.block, {h});
        // The block's body, checkpointed as the plan says (inside the block's
        // boundary, as torchtitan wraps the block before fully_shard).
        const auto body = [&](const nn::TensorList& in) {
          at::Tensor h = in[0], x;
          {
            nn::ModuleScope scope(*y.attention_norm, {h});
            x = scope.output(norm(h, param(y.attention_norm, "weight")));
          }
          {
            nn::ModuleScope scope(*y.attention, {x});
            at::Tensor xa = region_input(x, sp);
            h = h + scope.output(DTensor(attention(m, xa, y, freqs)).redistribute({stream}));
          }
          {
            nn::ModuleScope scope(*y.ffn_norm, {h});
            x = scope.output(norm(h, param(y.ffn_norm, "weight")));
          }
          {
            nn::ModuleScope scope(*y.feed_forward, {x});
            at::Tensor xf = region_input(x, sp);
            const std::shared_ptr<Params>& ff = y.feed_forward;
            at::Tensor g = at::silu(at::matmul(xf, param(ff, "w1"))) * at::matmul(xf, param(ff, "w3"));
            h = h + scope.output(DTensor(at::matmul(g, param(ff, "w2"))).redistribute({stream}));
          }
          return h;
        };
        // The block's inputs after its pre-forward hooks: fully_shard's
        // post-backward hook hangs on them, so the layer's gradients are
        // reduce-scattered and its parameters resharded right after its
        // backward (the original `h` would bypass it, keeping every layer's
        // unsharded parameters and gradients to the end of backward).
        const nn::TensorList& in = block.inputs();
        if (plan.checkpoint_ops) {
          h = nn::checkpoint(body, in, nn::torchtitan_op_policy());
        } else if (plan.checkpointed(static_cast<int64_t>(i))) {
          h = nn::checkpoint(body, in);
        } else {
          h = body(in);
        }
        h = block.output(h);
      }
      if (!l.output) {
        // Not the last pipeline stage: the activations go to the next stage,
        // whose gradient comes back.
        if (root) h = root->output(h);
        recorder.forward_done();
        h.backward(ones({b, s, m.dim}, tp_mesh, {stream}, at::TensorOptions().dtype(dtype)));
        return;
      }
      {
        nn::ModuleScope scope(*l.norm, {h});
        h = scope.output(norm(h, param(l.norm, "weight")));
      }
      at::Tensor logits;
      {
        nn::ModuleScope scope(*l.output, {h});
        at::Tensor xo = region_input(h, sp);
        logits = scope.output(DTensor(at::matmul(xo, param(l.output, "weight"))).redistribute({Replicate()}));
      }
      if (root) logits = root->output(logits);
      // torchtitan's loss upcasts the logits.
      if (mixed) logits = logits.to(at::kFloat);
      at::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({b * s, m.vocab}), targets);
      recorder.forward_done();
      loss.backward();
    };
    {
      auto guard = recorder.trace_forward_backward(*l.root, "Llama");
      micro_step();
    }
    {
      auto guard = recorder.trace_update();
      update.step();
    }
  };
}

}  // namespace dtensor::planner
