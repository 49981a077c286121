// The DTensor operator dispatcher: one boxed kernel, registered at the
// PrivateUse1 dispatch key for every aten operator that has no
// CompositeImplicitAutograd kernel. See DESIGN.md, decision 2. It finds rules
// in ShardingRegistry::global() and knows none itself: dtensor::init()
// (core/init.h) registers the built-in rules and then calls this.
//   dtensor::register_dtensor_kernel();   // done by dtensor::init()
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <cstdint>
#include <vector>

#include "core/device_mesh.h"

namespace dtensor {

struct PropagationResult;

/// Registers the DTensor kernel for every aten operator known now, and a
/// fallback that names operators registered later. Idempotent and
/// thread-safe. Call dtensor::init() rather than this: the kernel without
/// rules refuses every op.
void register_dtensor_kernel();

namespace detail {

/// The boxed DTensor kernel (arguments on `stack` in, results out); the
/// unboxed kernels of core/dispatch/fast_kernels.cc box and call it for
/// every call their fast path does not take.
void dtensor_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);

/// Markers of Note [Sharding cache key] that the unboxed fast path writes
/// itself: a tensor (keyed by its spec), and an int list, written as
/// kKeyIntList, its values, -kKeyIntList.
constexpr int64_t kKeyTensor = 8;
constexpr int64_t kKeyIntList = 3;

/// Appends what a non-tensor argument contributes to the sharding cache key
/// (a tensor: kKeyTensor). Note [Sharding cache key].
void append_arg_key(const c10::IValue& v, std::vector<int64_t>* key);

/// Output `output` of a decision, this rank's `local` wrapped as a DTensor
/// on `mesh` (the decision's shared spec when `mesh` is its mesh object).
at::Tensor wrap_local_output(const at::Tensor& local, const DeviceMesh& mesh, const PropagationResult& result,
                             size_t output);

}  // namespace detail

}  // namespace dtensor
