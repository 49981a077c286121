// Replacing a module's registered parameters and buffers (by DTensors, say)
// so that parameters(), optimizers, state dicts *and* the module's C++ member
// tensors (LinearImpl::weight, ...) all see the new tensors.
//   distribute_parameter(*linear, "weight", mesh, {Shard(0)});   // linear->weight is now a DTensor
//   register_member_binder<MyBlockImpl>({{"w", &MyBlockImpl::w}});  // for your own modules
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <functional>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

#include "core/device_mesh.h"
#include "core/dtensor.h"

namespace dtensor {

// Note [Member tensors of C++ modules]
// A torch::nn module keeps each parameter twice: in its registry (what
// parameters(), named_parameters(), optimizers and serialization read) and,
// for built-ins and most user modules, in a C++ member handle that forward()
// reads (LinearImpl::weight). The two are separate at::Tensor handles to one
// TensorImpl. A DTensor is a different TensorImpl, so replacing a parameter by
// a DTensor must update both, and only the module knows its members. Hence:
// - set_parameter / set_buffer replace the registry entry, then run the
//   *member binder* registered for the module's dynamic type, which re-reads
//   the members from the registry. Binders for torch::nn::Linear, Embedding
//   and LayerNorm are built in.
// - A user module either (a) keeps its tensors only in the registry and reads
//   them by name in forward (`param(*this, "w")` below), needing nothing, or
//   (b) registers a binder once: register_member_binder<MyImpl>({{"w", &MyImpl::w}}).
// - A module without a binder whose old tensor is still referenced after the
//   replacement (a member, most likely) gets a warning naming the module type
//   and the parameter: its forward would otherwise silently keep using the
//   old plain tensor.

/// Re-reads a module's C++ member tensors from its registry.
using MemberBinder = std::function<void(torch::nn::Module& module)>;

/// Registers `binder` for modules whose dynamic type is `type` (replacing an
/// earlier one). Thread-safe; call it once, before distributing.
void register_member_binder(std::type_index type, MemberBinder binder);

/// Typed form: register_member_binder<MyImpl>([](MyImpl& m) { m.w = param(m, "w"); }).
template <typename Impl>
void register_member_binder(std::function<void(Impl&)> binder) {
  register_member_binder(std::type_index(typeid(Impl)), [binder](torch::nn::Module& m) {
    binder(dynamic_cast<Impl&>(m));  // Module is a virtual base
  });
}

/// Table form: each registered name (parameter or buffer) -> the member that
/// mirrors it; a name the module has not registered (e.g. `bias` of a
/// bias-free Linear) leaves its member alone. Example:
///   register_member_binder<AttentionImpl>({{"wq", &AttentionImpl::wq}, {"wo", &AttentionImpl::wo}});
template <typename Impl>
void register_member_binder(std::vector<std::pair<std::string, at::Tensor Impl::*>> members);

/// True when a binder is registered for `module`'s dynamic type.
bool has_member_binder(const torch::nn::Module& module);

/// The registered parameter or buffer `name` of `module` itself (not of a
/// child); throws naming the module's registered names when absent.
at::Tensor param(const torch::nn::Module& module, const std::string& name);

/// Replaces the registered parameter `name` of `module` itself by `value`
/// (kept as given: set requires_grad before) and rebinds the module's
/// members. Precondition: `name` is registered. Example:
///   set_parameter(*lin, "weight", DTensor::from_local(w_local, mesh, {Shard(0)}).requires_grad_());
void set_parameter(torch::nn::Module& module, const std::string& name, at::Tensor value);

/// The same for a registered buffer.
void set_buffer(torch::nn::Module& module, const std::string& name, at::Tensor value);

/// Replaces parameter `name` by distribute_tensor(old, mesh, placements,
/// options), keeping requires_grad, and returns it. When it already is a
/// DTensor with these placements on this mesh (a tied weight) it is returned
/// as it is; a DTensor laid out otherwise throws. Example:
///   distribute_parameter(*emb, "weight", mesh, {Shard(1)});
DTensor distribute_parameter(torch::nn::Module& module, const std::string& name, const DeviceMesh& mesh,
                             Placements placements, const DistributeOptions& options = {});

/// The same for a buffer (never requires grad).
DTensor distribute_buffer(torch::nn::Module& module, const std::string& name, const DeviceMesh& mesh,
                          Placements placements, const DistributeOptions& options = {});

/// Wraps parameter `name`, which must already be identical on every rank, as
/// a replicated DTensor through from_local: no communication (PyTorch's
/// SequenceParallel does the same). Keeps requires_grad.
DTensor replicate_parameter(torch::nn::Module& module, const std::string& name, const DeviceMesh& mesh);

/// Builds a replicated DTensor of `plain` on `like`'s mesh when `like` is a
/// DTensor (no communication: every rank must hold the same `plain`), else
/// returns `plain`. For constants inside a forward that may run on DTensors,
/// e.g. an attention mask: `scores + replicate_like(mask, scores)`.
at::Tensor replicate_like(const at::Tensor& plain, const at::Tensor& like);

// ---- implementation of the template above ----

template <typename Impl>
void register_member_binder(std::vector<std::pair<std::string, at::Tensor Impl::*>> members) {
  register_member_binder<Impl>(std::function<void(Impl&)>([members](Impl& m) {
    const auto params = m.named_parameters(/*recurse=*/false);
    const auto buffers = m.named_buffers(/*recurse=*/false);
    for (const auto& [name, member] : members) {
      if (const at::Tensor* p = params.find(name)) {
        m.*member = *p;
      } else if (const at::Tensor* b = buffers.find(name)) {
        m.*member = *b;
      }
    }
  }));
}

}  // namespace dtensor
