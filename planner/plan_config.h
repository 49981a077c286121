// What the planner is asked about: a model (the example Transformer or a
// Llama-style decoder), a mesh ("dp=1024,tp=8") and a plan (sequence
// parallelism, micro-batch, optimizer, dtype). Plain values and their parsers.
//   ModelConfig m = parse_model("llama-70b");               // a preset
//   ModelConfig m = parse_model("llama:layers=4,dim=512,ffn=1536,heads=8,vocab=1000,seq=128,batch=16");
//   PlanConfig p = parse_plan(parse_mesh("dp=512,tp=8"), "sp,adam,micro=1");
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtensor::planner {

enum class ModelKind {
  /// examples::Transformer (PyTorch's DTensor test model): LayerNorm, MHA with
  /// a causal mask, GELU FFN of 4 * dim, biases in the FFN, learned positions.
  kExampleTransformer,
  /// A Llama-style decoder (planner/llama_step.h): RMSNorm, grouped-query
  /// attention, SwiGLU FFN of `ffn`, untied output. Built on meta tensors:
  /// any size.
  kLlama,
};

struct ModelConfig {
  ModelKind kind = ModelKind::kLlama;
  int64_t layers = 2;
  int64_t dim = 16;
  int64_t ffn = 64;      // FFN hidden size (the example Transformer: always 4 * dim)
  int64_t heads = 4;
  int64_t kv_heads = 4;  // Llama only (grouped-query attention)
  int64_t vocab = 8;
  int64_t seq = 8;       // tokens per sequence
  int64_t batch = 8;     // global batch, sequences per optimizer step
  std::string dtype = "float32";  // "float32", "bfloat16", "float16", "float64"
  /// Llama only: the rotary position embedding of q and k, as torchtitan
  /// computes it (in float32); false for models written as Llama ones that
  /// have none (MPT's ALiBi, GPT's learned positions).
  bool rope = true;

  /// Parameters of the whole model (closed form, for the report header).
  int64_t parameter_count() const;
  /// Bytes per element of dtype.
  int64_t element_size() const;
  /// "llama:layers=80,dim=8192,..." (parse_model reads it back).
  std::string to_string() const;
};

/// Presets: "llama-70b" (Llama-3 70B: 80 layers, dim 8192, ffn 28672, 64 heads,
/// 8 kv heads, vocab 128256, seq 4096, batch 4096 (16M tokens), bfloat16), "llama-8b",
/// "transformer" (the example Transformer's defaults: 2 layers, dim 16,
/// 4 heads, vocab 8, seq 8, batch 8, float32); a preset may be followed by
/// ":key=value,..." overrides, e.g. "llama-70b:layers=40". Keys: layers, dim,
/// ffn, heads, kv_heads, vocab, seq, batch, dtype, rope (0 or 1). Throws
/// std::invalid_argument naming the key and what is wrong.
ModelConfig parse_model(const std::string& text);

/// A mesh: dim names and sizes, outermost first (the last dim is the
/// innermost, "tp" in the usual layout).
struct MeshConfig {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  int64_t world_size() const;
  /// The size of dim `name`, 1 when absent.
  int64_t size_of(const std::string& name) const;
  /// "dp=1024,tp=8".
  std::string to_string() const;
};

/// "dp=1024,tp=8" (or "tp=4", "dp=2, tp=4": layout/shape_text.h reads it;
/// "pp=8,dp=64,tp=8" with pipeline parallelism; "rep=4,dp=256,tp=8" for
/// HSDP: fsdp shards over dp and replicates the shards over rep). The
/// planner knows the dim names "pp", "rep", "dp" and "tp", in that order
/// (outermost first). Throws
/// std::invalid_argument on a bad entry, an unnamed dim, an unknown name or
/// another order.
MeshConfig parse_mesh(const std::string& text);

enum class Optimizer { kAdam, kSgdMomentum, kSgd };

/// Which part of the model a traced rank holds (Note [Pipeline stages] in
/// planner/estimate.cc): all of it, or one pipeline stage's layers with the
/// embedding (first), the final norm, output and loss (last), or neither.
enum class PipelineStage { kWhole, kFirst, kMiddle, kLast };
/// "adam", "sgd-momentum", "sgd".
const char* optimizer_name(Optimizer o);

struct PlanConfig {
  MeshConfig mesh;
  /// Tensor parallelism over "tp" with sequence parallelism (norms and
  /// residuals sharded over the sequence, all_gather / reduce_scatter instead
  /// of all_reduce).
  bool sequence_parallel = false;
  /// Sequences per forward/backward; the step accumulates gradients over
  /// batch / dp / micro_batch micro-steps.
  int64_t micro_batch = 1;
  Optimizer optimizer = Optimizer::kAdam;
  /// ZeRO stage 1: optimizer state sharded over dp (planner/training_update.h).
  bool zero1 = false;
  /// Fully sharded data parallel over dp (fully_shard on every layer and the
  /// root, core/fsdp/fully_shard.h; with tp: FSDP + TP; with a "rep" mesh
  /// dim: HSDP, the (rep, dp) mesh, shards replicated over rep): parameters,
  /// gradients and optimizer state sharded, each layer's parameters gathered
  /// before its forward and again before its backward, gradients
  /// reduce-scattered.
  bool fsdp = false;
  /// Activation checkpointing of the layers (core/nn/checkpoint.h), as
  /// torchtitan's modes: 0 none; 1 every layer ("full"); n > 1 every n-th
  /// layer ("selective layer"). With checkpoint_ops: every layer with
  /// torchtitan's selective op policy (nn::torchtitan_op_policy).
  int64_t checkpoint_every = 0;
  bool checkpoint_ops = false;
  /// Mixed precision as torchtitan trains: "" (none: parameters, gradients
  /// and optimizer state in the model's dtype), or the model's dtype as
  /// "bf16" / "fp16": parameters, gradients and optimizer state in float32,
  /// fully_shard's MixedPrecisionPolicy gathering them in the model's dtype
  /// for compute and reduce-scattering gradients in float32, and the loss
  /// computed in float32 (torchtitan's cross_entropy_loss upcasts the
  /// logits). Needs fsdp.
  std::string mixed_precision;
  /// Pipeline parallelism over the mesh dim "pp": stages of layers / pp
  /// layers each, run with the 1F1B schedule (virtual_stages 1) or
  /// Megatron's interleaved 1F1B with this many model chunks per rank.
  int64_t virtual_stages = 1;
  /// The stage a step program builds and runs (estimate_plan sets it on the
  /// plans of its per-stage traces, whose mesh has no "pp").
  PipelineStage stage = PipelineStage::kWhole;
  /// "dp=512,tp=8,sp,micro=2,adam,zero1", "dp=512,tp=8,sp,micro=1,adam,fsdp,ac=full".
  std::string to_string() const;
  /// "none", "full", "op" or "every N".
  std::string checkpointing() const;
  /// Whether layer `i` (0-based) is checkpointed.
  bool checkpointed(int64_t i) const {
    return checkpoint_ops || (checkpoint_every > 0 && (i + 1) % checkpoint_every == 0);
  }
};

/// PlanConfig::mixed_precision's name of a model dtype: "bf16" for
/// "bfloat16", "fp16" for "float16", "" for a dtype mixed precision does not
/// compute in.
std::string mixed_precision_name(const std::string& model_dtype);
/// The model dtype mixed precision `name` ("bf16", "fp16") computes in.
std::string mixed_precision_dtype(const std::string& name);

/// Plan options over `mesh`: a comma list of "sp" / "nosp", "adam" /
/// "sgd-momentum" / "sgd", "micro=N", "zero1" / "nozero", "fsdp" / "nofsdp",
/// "ac=none" / "ac=full" / "ac=op" / "ac=N" (every N-th layer), "v=N"
/// (interleaved 1F1B with N chunks per pipeline rank; 1: 1F1B), "mp=bf16" /
/// "mp=fp16" / "mp=none" (PlanConfig::mixed_precision).
/// Example: parse_plan(mesh, "sp,adam,micro=2,zero1").
PlanConfig parse_plan(const MeshConfig& mesh, const std::string& text);

/// Sets `p`'s activation checkpointing from "none", "full", "op" or "N" (as
/// "ac=" in parse_plan). Throws std::invalid_argument otherwise.
void set_checkpointing(PlanConfig& p, const std::string& mode);

/// Checks that `plan` can run `model`: tp divides heads (and kv_heads, dim,
/// ffn, vocab), rep * dp * micro_batch divides batch (rep needs fsdp),
/// sequence parallelism needs
/// tp dividing seq, fsdp is not combined with zero1 (it shards the optimizer
/// state already), pp * virtual_stages divides layers and the step has at
/// least pp micro-batches (a multiple of pp when interleaved) to fill the
/// pipeline. Returns "" when fine, else why not (one line).
std::string plan_problem(const ModelConfig& model, const PlanConfig& plan);

}  // namespace dtensor::planner
