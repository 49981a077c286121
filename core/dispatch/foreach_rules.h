// Rules for `_foreach_*` overloads, derived element by element from the
// per-tensor functional overload's rule: `_foreach_add.List(xs, ys)` shards
// each (xs[i], ys[i]) as `aten::add.Tensor` would.
//   auto rule = derive_foreach_rule(op, ShardingRegistry::global());   // nullopt: none applies
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>

#include "core/dispatch/sharding_registry.h"

namespace dtensor {

// Note [Foreach rules]
// PyTorch's optimizers and gradient clipping call `_foreach_*` ops on lists
// of parameters (135 overloads PyTorch 2.15 shards). Each is the per-tensor
// op applied to the i-th element of every list argument (a Tensor[] or
// Scalar[]) and to the other arguments as they are. The per-tensor overload
// is found by argument types (`_foreach_add.Scalar(Tensor[] self, Scalar
// scalar)` -> `aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1)`,
// the rest taking their defaults; a `scalars` Tensor holding one value per
// element, as `_foreach_addcdiv_.Tensor`'s, stands for the per-tensor op's
// Scalar and must be Replicate; `_foreach_norm.Scalar` maps its arguments
// onto `linalg_vector_norm`'s by a table); its rule runs once per element on a call
// with that element's arguments, and the plans are joined: every element
// chooses its own placements, as PyTorch's per-element strategies do. An
// in-place `_foreach_*_` keeps every written element's placements (each
// element call keeps its self). Elements that want one shared Replicate
// tensor argument (a 0-d `other`) laid out differently each get it so, as
// PyTorch redistributes it per element: a Replicate tensor reaches any
// layout by local slicing (collectives::slice_of_full), and the plan's local
// kernel (kForeachByElement) runs the per-tensor op element by element.
// Refused with a clear error: elements that want different placements of a
// shared argument that is not Replicate, and element plans that run a local
// kernel or override arguments (written for one element's arguments).

/// The per-tensor overload `op`'s elements take their rule from
/// ("aten::add.Tensor" for "aten::_foreach_add.List" and its in-place form),
/// or nullopt when `op` is no `_foreach_*` op or none matches.
std::optional<std::string> foreach_element_overload(const c10::OperatorHandle& op);

/// The joined rule of Note [Foreach rules], or nullopt when the per-tensor
/// overload has no rule in `registry`.
std::optional<ShardingRule> derive_foreach_rule(const c10::OperatorHandle& op, const ShardingRegistry& registry);

/// Registers the local kernel of foreach plans run element by element
/// (ShardingPlan::element_input_placements) in `registry`.
void register_foreach_kernels(ShardingRegistry& registry);

}  // namespace dtensor
