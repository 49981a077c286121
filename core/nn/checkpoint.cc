// checkpoint: forward without a graph, recomputation in backward.
#include "core/nn/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <mutex>
#include <utility>
#include <vector>

#include "core/compat/autograd_node.h"

namespace dtensor::nn {
namespace {

// The default CPU generator's state.
at::Tensor cpu_rng_state() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

// Sets the default CPU generator's state; returns the one it had.
at::Tensor exchange_cpu_rng_state(const at::Tensor& state) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  at::Tensor before = generator.get_state();
  generator.set_state(state);
  return before;
}

// The recomputation. Inputs of the node are the gradients of the output;
// its outputs are the gradients of `inputs` (next edges in the same order).
struct CheckpointBackward : torch::autograd::Node {
  std::function<at::Tensor(const TensorList&)> fn;
  TensorList inputs;               // detached
  std::vector<bool> requires_grad;  // of each input
  at::Tensor rng_state;            // of the default CPU generator before the first run

  std::string name() const override { return "dtensor::CheckpointBackward"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    TORCH_CHECK(fn, "checkpoint: backward ran twice; the recomputation is freed after the "
                "first (call backward with retain_graph only outside checkpointed regions)");
    TensorList again;
    again.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      at::Tensor x = inputs[i].defined() ? inputs[i].detach() : inputs[i];
      if (x.defined() && requires_grad[i]) x.set_requires_grad(true);
      again.push_back(x);
    }
    const at::Tensor state_now = exchange_cpu_rng_state(rng_state);
    at::Tensor out;
    {
      at::AutoGradMode enable(true);
      out = fn(again);
    }
    exchange_cpu_rng_state(state_now);
    if (out.requires_grad() && grads[0].defined()) {
      // Every leaf accumulates: the parameters, and the detached inputs,
      // whose gradients are this node's outputs.
      torch::autograd::backward({out}, {grads[0]});
    }
    torch::autograd::variable_list result;
    for (size_t i = 0; i < again.size(); ++i) {
      result.push_back(again[i].defined() && requires_grad[i] ? again[i].grad() : at::Tensor());
    }
    inputs.clear();
    fn = nullptr;
    return result;
  }
};

}  // namespace

at::Tensor checkpoint(const std::function<at::Tensor(const TensorList&)>& fn, const TensorList& inputs) {
  if (!at::GradMode::is_enabled()) return fn(inputs);
  auto node = compat::make_autograd_node<CheckpointBackward>();
  node->rng_state = cpu_rng_state();
  at::Tensor out;
  {
    at::NoGradGuard no_grad;
    out = fn(inputs);
  }
  // Whether anything needs a gradient is known only from a graph: parameters
  // inside fn may require grad with no input doing so. Keep the node always.
  node->fn = fn;
  for (const at::Tensor& x : inputs) {
    node->inputs.push_back(x.defined() ? x.detach() : x);
    node->requires_grad.push_back(x.defined() && x.requires_grad());
  }
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  at::Tensor result;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    result = out.alias();
  }
  torch::autograd::set_history(result, node);
  return result;
}

}  // namespace dtensor::nn
