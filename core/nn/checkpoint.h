// Activation checkpointing: torch.utils.checkpoint for LibTorch, which has
// none (its saved-tensor hooks take Python objects). A function's forward
// runs without building a graph, so none of its activations are kept; its
// backward runs it again, with the RNG state of the first run, and
// backpropagates through the recomputation.
//   at::Tensor TransformerBlockImpl::forward(const at::Tensor& x) {
//     return dtensor::nn::checkpoint([this](const nn::TensorList& in) { return body(in[0]); }, {x});
//   }
// Put it inside a fully_shard module's forward (as torchtitan wraps a block
// before fully_shard): FSDP's hooks at the module boundary gather the
// parameters before the recomputation runs, so it adds no all-gather. The
// recomputed forward runs in backward: its modules (through nn::call) are
// traced as forward scopes of phase backward, and the collectives it issues
// (a TP module's) are backward's.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>

#include "core/nn/module_call.h"

namespace dtensor::nn {

/// Runs fn(inputs) keeping only `inputs` for backward, which runs fn again.
/// `fn` must compute the same thing both times (deterministic, or drawing
/// from LibTorch's default CPU generator, whose state is restored; in a fake
/// world the rank threads share that generator, so dropout masks differ
/// there anyway: Note [Dropout in the examples]). Inputs may be DTensors.
/// With grad mode off, or nothing requiring grad, it is fn(inputs).
at::Tensor checkpoint(const std::function<at::Tensor(const TensorList&)>& fn, const TensorList& inputs);

}  // namespace dtensor::nn
