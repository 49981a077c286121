// DTensorImpl: the TensorImpl behind a DTensor. It reports the global shape
// and stride, holds this rank's local tensor and the DTensorSpec, and has no
// storage. See Note [DTensor dispatch keys].
//   at::Tensor t = make_dtensor(local, spec);   is_dtensor(t);   dtensor_impl(t)->local();
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/TensorImpl.h>

#include <memory>
#include <utility>

#include "backends/communicator.h"
#include "core/dtensor_spec.h"
#include "core/nn/module_boundary.h"

namespace dtensor {

// Note [DTensor dispatch keys]
// A DTensor carries PrivateUse1 (our boxed kernel, registered for every aten
// operator by dtensor::init()), AutogradPrivateUse1 (so LibTorch's autograd
// kernels run above us, as they run above __torch_dispatch__ in Python) and
// ADInplaceOrView (version counters and view tracking). device() is the local
// tensor's device, so code that asks a DTensor for its device gets the place
// where its shard lives. The local tensor never requires grad: autograd lives
// on the DTensor only.
class DTensorImpl final : public c10::TensorImpl {
 public:
  DTensorImpl(at::Tensor local, DTensorSpec spec);
  /// Shares `spec` (immutable) with whoever else holds it: the dispatcher
  /// wraps every output of a cached decision with the same spec object
  /// (Note [Shared output specs] in core/dispatch/sharding_propagator.h).
  DTensorImpl(at::Tensor local, std::shared_ptr<const DTensorSpec> spec);
  ~DTensorImpl() override;

  /// This rank's shard. After an async redistribution the first call orders
  /// the caller's stream after its collectives (Note [Async redistribution]).
  const at::Tensor& local() const {
    if (pending_) wait_pending();
    return local_;
  }
  const DTensorSpec& spec() const { return *spec_; }
  /// The spec object itself: its identity keys Note [Identity fast path].
  const std::shared_ptr<const DTensorSpec>& shared_spec() const { return spec_; }

  /// The work local() waits for once before the shard is first read (an
  /// async redistribution's end); shallow copies share it.
  void set_pending(WorkPtr work) { pending_ = std::move(work); }
  /// True until local() has waited for the pending work.
  bool has_pending() const { return pending_ != nullptr; }

  /// The module boundary this parameter belongs to (a parallelized module's
  /// parameter), or nullptr; shallow copies do not carry it. See Note
  /// [Skipped boundaries] in core/nn/module_call.cc.
  const nn::ModuleBoundary* boundary() const { return boundary_.get(); }
  void set_boundary(std::shared_ptr<const nn::ModuleBoundary> boundary) { boundary_ = std::move(boundary); }

  /// Replaces local tensor and spec (used by in-place ops that change both).
  void set_local_and_spec(at::Tensor local, DTensorSpec spec);

  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(
      const c10::VariableVersion& version_counter, bool allow_tensor_metadata_change) const override;
  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(
      c10::VariableVersion&& version_counter, bool allow_tensor_metadata_change) const override;
  void shallow_copy_from(const c10::intrusive_ptr<c10::TensorImpl>& impl) override;

 private:
  const char* tensorimpl_type_name() const override { return "DTensorImpl"; }
  void refresh_from_spec();
  void wait_pending() const;

  at::Tensor local_;
  std::shared_ptr<const DTensorSpec> spec_;  // never null; shared, never changed in place
  std::shared_ptr<const nn::ModuleBoundary> boundary_;
  mutable WorkPtr pending_;  // mutable: waiting is part of reading the shard
};

/// Wraps `local` (this rank's shard, no autograd history) as a DTensor.
at::Tensor make_dtensor(at::Tensor local, DTensorSpec spec);
at::Tensor make_dtensor(at::Tensor local, std::shared_ptr<const DTensorSpec> spec);

/// How many DTensorImpls are alive in this process, over all threads. A
/// program that has released its DTensors is back where it started; a
/// number that grows step after step is a leak (e.g. a reference cycle
/// through an autograd node: Note [No cycles through backward nodes]).
int64_t live_dtensor_impls();

/// True when `t` is a DTensor.
bool is_dtensor(const at::Tensor& t);

/// The impl of a DTensor, or nullptr for any other tensor.
DTensorImpl* dtensor_impl(const at::Tensor& t);

}  // namespace dtensor
