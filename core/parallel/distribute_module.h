// distribute_module: turns every parameter and buffer of a module tree into a
// DTensor (replicated unless partition_fn shards it) and attaches input and
// output transforms at the module's boundary, like PyTorch's distribute_module.
//   distribute_module(*mlp, mesh, [](const std::string& name, torch::nn::Module& m, const DeviceMesh& mesh) {
//     if (name == "net1") distribute_parameter(m, "weight", mesh, {Shard(0)});
//   });
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <functional>
#include <optional>
#include <string>

#include "core/device_mesh.h"
#include "core/dtensor.h"
#include "core/nn/module_boundary.h"
#include "core/nn/module_call.h"
#include "core/parallel/module_params.h"

namespace dtensor {

/// Called once per module of the tree (root first, then named_modules()
/// order) with its path ("" for the root, "layers.0.attention" ...). It
/// distributes what it wants with distribute_parameter / distribute_buffer /
/// set_parameter; what it leaves plain is then replicated.
using PartitionFn =
    std::function<void(const std::string& name, torch::nn::Module& module, const DeviceMesh& mesh)>;
/// Transforms the module's tensor inputs at every dtensor::nn::call of it.
using InputFn =
    std::function<nn::TensorList(torch::nn::Module& module, nn::TensorList inputs, const DeviceMesh& mesh)>;
/// Transforms the module's output at every dtensor::nn::call of it.
using OutputFn =
    std::function<at::Tensor(torch::nn::Module& module, at::Tensor output, const DeviceMesh& mesh)>;

struct DistributeModuleOptions {
  /// Where the replicated parameters' values come from: rank src_data_rank
  /// broadcasts them (PyTorch's default), or nullopt: every rank keeps its own
  /// (no communication; they must already be equal).
  std::optional<int64_t> src_data_rank = 0;
  /// When input_fn or output_fn is given: what happens when an op uses a
  /// parameter of the module while its forward runs without
  /// dtensor::nn::call / ModuleScope (the conversions skipped); see Note
  /// [Skipped boundaries] in core/nn/module_call.cc. kError for tests.
  nn::SkippedBoundary skipped_boundary = nn::SkippedBoundary::kWarn;
  /// The module and style those messages name (parallelize_module passes
  /// the plan path and the style); empty: the module's type name and
  /// "distribute_module input_fn / output_fn".
  std::string module_name;
  std::string style_name;
};

/// Distributes `module`'s parameters and buffers over `mesh`: partition_fn (if
/// any) runs on each submodule, then every parameter and buffer that is still
/// a plain tensor becomes a replicated DTensor (distribute_tensor with
/// Replicate on every mesh dim). Registries and C++ members are both updated
/// (see Note [Member tensors of C++ modules]), so parameters(), optimizers and
/// forward() see the DTensors. A parameter shared by several modules (tied
/// weights) becomes one DTensor. input_fn / output_fn are registered as
/// forward (pre-)hooks of `module` and run only when it is called through
/// dtensor::nn::call or a ModuleScope (see core/nn/module_call.h).
///
/// Preconditions: `module` is owned by a shared_ptr (a ModuleHolder), its
/// tensors are on the mesh's device; a parameter distributed earlier (a
/// DTensor already) is left as it is. Example:
///   distribute_module(*model, mesh);   // everything replicated
///   distribute_module(*model, mesh, nullptr,
///                     [](torch::nn::Module&, nn::TensorList in, const DeviceMesh& mesh) {
///                       in[0] = distribute_tensor(in[0], mesh, {Shard(0)});
///                       return in;
///                     });
void distribute_module(torch::nn::Module& module, const DeviceMesh& mesh,
                       const PartitionFn& partition_fn = nullptr, const InputFn& input_fn = nullptr,
                       const OutputFn& output_fn = nullptr, const DistributeModuleOptions& options = {});

}  // namespace dtensor
