// The update half of a planner step: gradient averaging over "dp" and the
// optimizer, either DDP-style (every rank averages all gradients with one
// all_reduce and keeps the whole optimizer state) or ZeRO stage 1 (gradients
// reduce-scattered over dp, each rank keeps and updates 1/dp of the
// flattened parameters' optimizer state, then the parameters are
// all-gathered). Both step programs use it.
//   TrainingUpdate update(*model, mesh["dp"], plan);
//   update.warm_up();  ... forward/backward ...;  update.step();
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <vector>

#include "core/device_mesh.h"
#include "planner/plan_config.h"

namespace dtensor::planner {

class TrainingUpdate {
 public:
  /// `dp_mesh`: the 1-D data-parallel mesh (size 1: no averaging).
  TrainingUpdate(torch::nn::Module& model, const DeviceMesh& dp_mesh, const PlanConfig& plan);
  ~TrainingUpdate();

  /// Gives every parameter a zero gradient and runs one step, so that
  /// gradients and optimizer state exist before the traced step; gradients
  /// stay allocated afterwards (See Note [Planner step]).
  void warm_up();
  /// Averages gradients over dp and steps the optimizer (ZeRO-1: on this
  /// rank's shard, then all-gathers the parameters; fsdp: the optimizer on
  /// the sharded parameters, whose gradients backward reduce-scattered).
  void step();
  /// The optimizer whose state this rank holds (ZeRO-1: over the flat shard).
  torch::optim::Optimizer& optimizer() { return *optimizer_; }

 private:
  void zero1_step();

  torch::nn::Module& model_;
  DeviceMesh dp_mesh_;
  bool zero1_;
  bool fsdp_;  // fully_shard reduced the gradients in backward: the optimizer only
  std::vector<at::Tensor> locals_;  // local shards of the parameters (ZeRO-1)
  at::Tensor shard_;                // this rank's 1/dp of the flat parameters (ZeRO-1)
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace dtensor::planner
