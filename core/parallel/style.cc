// ParallelStyle::apply, ColwiseParallel and RowwiseParallel (the sharded
// Linear / Embedding pair). See Note [Parallel styles at C++ module boundaries].
#include "core/parallel/style.h"

#include <c10/util/Exception.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "core/dtensor_impl.h"
#include "core/parallel/internal/layouts.h"

namespace dtensor {
namespace {

enum class ShardedKind { kLinear, kEmbedding };

ShardedKind sharded_kind(torch::nn::Module& module, const char* style) {
  if (dynamic_cast<torch::nn::LinearImpl*>(&module) != nullptr) return ShardedKind::kLinear;
  if (dynamic_cast<torch::nn::EmbeddingImpl*>(&module) != nullptr) return ShardedKind::kEmbedding;
  TORCH_CHECK(false, style, " supports torch::nn::Linear and torch::nn::Embedding, got ", module.name(),
              "; shard other modules with distribute_module and a partition_fn, or lay out their inputs "
              "and outputs with PrepareModuleInput / PrepareModuleOutput");
}

DistributeOptions distribute_options(const DistributeModuleOptions& options) {
  DistributeOptions out;
  out.src_data_rank = options.src_data_rank;
  return out;
}

// Distributes the root module's parameters with `weight` / `bias`
// placements (a sharded module has no children).
PartitionFn partition_weight_bias(Placement weight, Placement bias, const DistributeModuleOptions& options) {
  return [weight, bias, options](const std::string& name, torch::nn::Module& m, const DeviceMesh& mesh) {
    if (!name.empty()) return;
    const auto params = m.named_parameters(/*recurse=*/false);
    distribute_parameter(m, "weight", mesh, {weight}, distribute_options(options));
    if (params.contains("bias")) distribute_parameter(m, "bias", mesh, {bias}, distribute_options(options));
  };
}

InputFn first_input_fn(Placement input_layout, Placement desired, std::string who) {
  return [input_layout, desired, who](torch::nn::Module&, nn::TensorList inputs, const DeviceMesh& mesh) {
    TORCH_CHECK(!inputs.empty(), who, ": the module was called without a tensor input");
    inputs[0] = detail::prepare_input(inputs[0], mesh, input_layout, desired, who + " (input)");
    return inputs;
  };
}

OutputFn sharded_output_fn(Placement desired, bool use_local_output, std::string who) {
  return [desired, use_local_output, who](torch::nn::Module&, at::Tensor output, const DeviceMesh&) {
    return detail::output_with_layout(output, desired, use_local_output, who + " (output)");
  };
}

std::string bool_name(bool b) { return b ? "true" : "false"; }

}  // namespace

void ParallelStyle::apply(torch::nn::Module& module, const DeviceMesh& mesh,
                          const DistributeModuleOptions& options) const {
  detail::check_tp_mesh(mesh, to_string());
  apply_impl(module, mesh, options);
}

// ---- ColwiseParallel ----

ColwiseParallel& ColwiseParallel::input_layouts(Placement layout) {
  input_layouts_ = layout;
  return *this;
}
ColwiseParallel& ColwiseParallel::output_layouts(Placement layout) {
  output_layouts_ = layout;
  return *this;
}
ColwiseParallel& ColwiseParallel::use_local_output(bool value) {
  use_local_output_ = value;
  return *this;
}

std::string ColwiseParallel::to_string() const {
  return "ColwiseParallel(input_layouts=" + input_layouts_.to_string() +
         ", output_layouts=" + output_layouts_.to_string() +
         ", use_local_output=" + bool_name(use_local_output_) + ")";
}

void ColwiseParallel::apply_impl(torch::nn::Module& module, const DeviceMesh& mesh,
                                 const DistributeModuleOptions& options) const {
  const ShardedKind kind = sharded_kind(module, "ColwiseParallel");
  const std::string who = "ColwiseParallel on " + module.name();
  // Linear: weight [out, in] -> out features; Embedding: weight [num, dim] -> dims.
  PartitionFn partition = kind == ShardedKind::kLinear ? partition_weight_bias(Shard(0), Shard(0), options)
                                                       : partition_weight_bias(Shard(1), Shard(0), options);
  distribute_module(module, mesh, partition, first_input_fn(input_layouts_, Replicate(), who),
                    sharded_output_fn(output_layouts_, use_local_output_, who), options);
}

// ---- RowwiseParallel ----

RowwiseParallel& RowwiseParallel::input_layouts(Placement layout) {
  input_layouts_ = layout;
  return *this;
}
RowwiseParallel& RowwiseParallel::output_layouts(Placement layout) {
  output_layouts_ = layout;
  return *this;
}
RowwiseParallel& RowwiseParallel::use_local_output(bool value) {
  use_local_output_ = value;
  return *this;
}

std::string RowwiseParallel::to_string() const {
  return "RowwiseParallel(input_layouts=" + input_layouts_.to_string() +
         ", output_layouts=" + output_layouts_.to_string() +
         ", use_local_output=" + bool_name(use_local_output_) + ")";
}

void RowwiseParallel::apply_impl(torch::nn::Module& module, const DeviceMesh& mesh,
                                 const DistributeModuleOptions& options) const {
  const ShardedKind kind = sharded_kind(module, "RowwiseParallel");
  const std::string who = "RowwiseParallel on " + module.name();
  // Linear: weight [out, in] -> in features (the input must be sharded on its
  // last dim); Embedding: weight [num, dim] -> rows (the indices replicated).
  const bool linear = kind == ShardedKind::kLinear;
  PartitionFn partition = linear ? partition_weight_bias(Shard(1), Replicate(), options)
                                 : partition_weight_bias(Shard(0), Replicate(), options);
  const Placement desired_input = linear ? Shard(-1) : Replicate();
  distribute_module(module, mesh, partition, first_input_fn(input_layouts_, desired_input, who),
                    sharded_output_fn(output_layouts_, use_local_output_, who), options);
}

}  // namespace dtensor
