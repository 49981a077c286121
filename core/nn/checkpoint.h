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

#include <cstdint>
#include <functional>
#include <string>

#include "core/nn/module_call.h"

namespace dtensor::nn {

/// Runs fn(inputs) keeping only `inputs` for backward, which runs fn again.
/// `fn` must compute the same thing both times (deterministic, or drawing
/// from LibTorch's default CPU generator, whose state is restored; in a fake
/// world the rank threads share that generator, so dropout masks differ
/// there anyway: Note [Dropout in the examples]). Inputs may be DTensors.
/// With grad mode off, or nothing requiring grad, it is fn(inputs).
at::Tensor checkpoint(const std::function<at::Tensor(const TensorList&)>& fn, const TensorList& inputs);

/// Which operator outputs a selective checkpoint keeps from the forward
/// (PyTorch's create_selective_checkpoint_contexts policy): asked for each
/// operator the checkpointed function dispatches (on plain tensors and
/// DTensors alike), with its full name ("aten::mm", "aten::max.dim") and how
/// many calls of that name came before in this run, and for each collective
/// it issues itself (a redistribution at a TP module's boundary, not one
/// inside an operator or FSDP's) under PyTorch's functional-collective name
/// ("_c10d_functional::reduce_scatter_tensor", "::all_gather_into_tensor",
/// "::all_reduce", "::all_to_all_single"). true: the forward keeps
/// its outputs and the recomputation returns them instead of running it
/// (PyTorch's MUST_SAVE: no kernel, and on DTensors no collective); false:
/// recomputed (PREFER_RECOMPUTE). Operators that write to their inputs or
/// return views of them are always recomputed. See Note [Selective
/// checkpoint].
using SavePolicy = std::function<bool(const std::string& op, int64_t index)>;

/// torchtitan's "selective op" activation checkpointing: keep aten::mm
/// (every other one: the 1st, 3rd, ...), the attention kernels, the full
/// aten::max and the reduce-scatters the function issues itself (a row-wise
/// layer's output under sequence parallelism); recompute the rest.
SavePolicy torchtitan_op_policy();

/// checkpoint(fn, inputs) that keeps what `save` selects from the forward
/// (torchtitan's "selective op" AC with torchtitan_op_policy()). The
/// recomputation must dispatch the same operators in the same order (true
/// of deterministic code); it fails naming the operator where it does not.
at::Tensor checkpoint(const std::function<at::Tensor(const TensorList&)>& fn, const TensorList& inputs,
                      const SavePolicy& save);

}  // namespace dtensor::nn
