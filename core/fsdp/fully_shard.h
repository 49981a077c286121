// Fully sharded data parallelism on DTensor: PyTorch's fully_shard (FSDP2)
// for LibTorch modules.
//   auto mesh = DeviceMesh::init(c10::kCPU, {4}, {"dp"});
//   for (auto& layer : model->layers) fully_shard(*layer, mesh);   // one group per layer
//   FSDPModule root = fully_shard(*model, mesh);                    // the rest
//   torch::optim::Adam opt(model->parameters(), 1e-3);              // sharded DTensor parameters
//   at::Tensor loss = dtensor::nn::call(model, tokens) ...;        // gathers, frees
//   loss.backward();                                                // gathers, reduce-scatters
//   opt.step();
// Parameters become DTensors Shard(0) on the 1-D data-parallel mesh (HSDP:
// (Replicate(), Shard(0)) on a 2-D (replicate, shard) mesh). Before a
// module's forward its group is all-gathered (one all_gather), after it the
// full parameters are freed (reshard_after_forward), before its backward they
// are gathered again, and after it the gradients are reduce-scattered (one
// reduce_scatter, averaged over the mesh) into the sharded parameters'
// .grad(). Modules are seen at their boundaries: call them through
// dtensor::nn::call or ModuleScope (core/nn/module_call.h), the root too.
// See Note [FSDP parameters] (core/fsdp/param_group.h) and
// Note [FSDP hooks] (core/fsdp/fully_shard.cc).
#pragma once

#include <c10/core/ScalarType.h>
#include <torch/nn/module.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/device_mesh.h"

namespace dtensor {

/// PyTorch's MixedPrecisionPolicy.
struct MixedPrecisionPolicy {
  /// The dtype parameters are all-gathered in and forward computes in
  /// (default: the parameters' own).
  std::optional<c10::ScalarType> param_dtype;
  /// The dtype gradients are reduce-scattered in (default: param_dtype);
  /// the result is cast to the sharded parameter's dtype.
  std::optional<c10::ScalarType> reduce_dtype;
  /// Floating-point outputs of the module's forward are cast to it.
  std::optional<c10::ScalarType> output_dtype;
  /// Floating-point inputs of the module's forward are cast to param_dtype.
  bool cast_forward_inputs = true;
};

/// PyTorch's CPUOffloadPolicy: the sharded parameters, their gradients and
/// so the optimizer's step live in host memory; each unshard copies this
/// rank's shards to the device before the all_gather, each reduce_scatter's
/// result is copied back. Only for CUDA ranks (fully_shard refuses it on
/// others, where it would move nothing).
struct CPUOffloadPolicy {
  /// Page-locked host memory (faster copies, as PyTorch's default).
  bool pin_memory = true;
};

struct FullyShardOptions {
  /// Free the gathered parameters after forward and gather them again for
  /// backward (less memory, one more all_gather per module). Unset (PyTorch's
  /// default None): every module but the root (the first whose forward runs),
  /// whose parameters backward needs at once; true: the root too; false: none.
  std::optional<bool> reshard_after_forward;
  /// PyTorch's int reshard_after_forward, when > 0 (it then replaces the
  /// bool): after forward each rank keeps its piece of the parameters over
  /// groups of this many consecutive ranks (the mesh's ranks row-major, viewed
  /// as (-1, n)), so backward gathers over n ranks only (the ranks of a node,
  /// say): more memory than true, a smaller all_gather. A divisor of the
  /// shard dim's size; 1 means false and that size means true, as in PyTorch.
  int64_t reshard_after_forward_to = 0;
  MixedPrecisionPolicy mp_policy;
  /// PyTorch's offload_policy=CPUOffloadPolicy(); unset: parameters stay on
  /// the device (OffloadPolicy()).
  std::optional<CPUOffloadPolicy> offload_policy;
};

namespace fsdp {
struct FsdpState;
}

/// The handle fully_shard returns (PyTorch's FSDPModule methods). Copies
/// share one state, which lives as long as the module's hooks.
class FSDPModule {
 public:
  explicit FSDPModule(std::shared_ptr<fsdp::FsdpState> state) : state_(std::move(state)) {}

  torch::nn::Module& module() const;
  const DeviceMesh& mesh() const;
  /// All-gathers the module's parameters now; the module registers the full
  /// tensors until reshard() (or the next reshard FSDP does itself).
  void unshard();
  /// Frees the gathered parameters; the module registers the sharded ones.
  void reshard();
  /// false: backward keeps accumulating full gradients instead of
  /// reduce-scattering them (gradient accumulation); the first backward with
  /// true reduces what accumulated. With `recurse`, every fully_shard module
  /// below this one too.
  void set_requires_gradient_sync(bool sync, bool recurse = true);
  /// Changes FullyShardOptions::reshard_after_forward (with `recurse`, of
  /// every fully_shard module below this one too); it also clears
  /// reshard_after_forward_to, as PyTorch's bool replaces an int.
  void set_reshard_after_forward(bool reshard, bool recurse = true);
  /// Explicit forward prefetch (PyTorch's set_modules_to_forward_prefetch):
  /// this module's pre-forward gathers `modules` right after its own group,
  /// before their forwards need them.
  void set_modules_to_forward_prefetch(const std::vector<FSDPModule>& modules);
  /// Explicit backward prefetch: this module's pre-backward gathers `modules`
  /// instead of the implicit choice (the module whose forward ran just before).
  void set_modules_to_backward_prefetch(const std::vector<FSDPModule>& modules);
  /// The parameters this call manages, by name from the module
  /// ("layers.0.weight"), in all-gather order.
  std::vector<std::string> managed_parameter_names() const;
  /// True while the full parameters are registered.
  bool is_unsharded() const;

 private:
  // This module's state, or (recurse) those of every fully_shard module below it too.
  std::vector<std::shared_ptr<fsdp::FsdpState>> states(bool recurse) const;

  std::shared_ptr<fsdp::FsdpState> state_;
};

/// Shards `module`'s parameters that no fully_shard call below it manages
/// (apply it to children first, as PyTorch) over the 1-D `mesh`, or, HSDP,
/// over the last dim of a 2-D (replicate, shard) mesh, replicated over the
/// first (gradients are then all-reduced over the replicas), and hooks
/// its forward and backward. Every rank must hold the same parameter values;
/// nothing is communicated here. `module` must be owned by a shared_ptr (a
/// TORCH_MODULE holder). Example: fully_shard(*model->layers[0], mesh).
FSDPModule fully_shard(torch::nn::Module& module, const DeviceMesh& mesh,
                       const FullyShardOptions& options = {});

/// The handle of a module fully_shard was applied to, else nullopt.
std::optional<FSDPModule> fsdp_module_of(const torch::nn::Module& module);

}  // namespace dtensor
