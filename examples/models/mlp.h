// The MLP of PyTorch's DTensor tests (MLPModule: Linear(10, 16) -> ReLU ->
// Linear(16, 10)) and its tensor-parallel plans.
//   auto mlp = examples::MLP(examples::MLPOptions().seed(5));
//   parallelize_module(*mlp, mesh, examples::mlp_tp_plan(/*sequence_parallel=*/false));
//   at::Tensor y = mlp->forward(x);   // x plain, y plain (replicated)
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

#include "core/parallel/parallelize.h"

namespace dtensor::examples {

struct MLPOptions {
  MLPOptions& in_features(int64_t v) {
    in_features_ = v;
    return *this;
  }
  MLPOptions& hidden(int64_t v) {
    hidden_ = v;
    return *this;
  }
  MLPOptions& bias(bool v) {
    bias_ = v;
    return *this;
  }
  MLPOptions& seed(uint64_t v) {
    seed_ = v;
    return *this;
  }
  /// Children through dtensor::nn::call (true: parallel styles apply at their
  /// boundaries) or plain calls (false: sharding propagation only).
  MLPOptions& module_calls(bool v) {
    module_calls_ = v;
    return *this;
  }
  /// Where the parameters live (seeded_init's values, moved there).
  MLPOptions& device(c10::Device v) {
    device_ = v;
    return *this;
  }

  int64_t in_features_ = 10;
  int64_t hidden_ = 16;
  bool bias_ = true;
  uint64_t seed_ = 5;
  bool module_calls_ = true;
  c10::Device device_ = c10::kCPU;
};

/// net2(relu(net1(x))), parameters from seeded_init(seed) on options.device
/// (the same values on every device). Build it, then
/// `->to(torch::kDouble)` if wanted, *before* parallelizing.
class MLPImpl : public torch::nn::Module {
 public:
  explicit MLPImpl(const MLPOptions& options = {});
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Linear net1{nullptr};
  torch::nn::ReLU relu{nullptr};
  torch::nn::Linear net2{nullptr};

 private:
  bool module_calls_;
};
TORCH_MODULE(MLP);

/// {"net1": ColwiseParallel, "net2": RowwiseParallel}; with sequence
/// parallelism the input is sharded on dim 0 (net1 input_layouts S(0)) and
/// the output reduce-scattered back to S(0) (net2 output_layouts S(0)), as in
/// PyTorch's test_tp_examples.
ParallelizePlan mlp_tp_plan(bool sequence_parallel);

}  // namespace dtensor::examples
