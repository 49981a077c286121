// DTensorImpl: global sizes/strides over a local shard, shallow copies that
// keep the shard. See Note [DTensor dispatch keys].
#include "core/dtensor_impl.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <typeinfo>

namespace dtensor {
namespace {

// Relaxed: a count for leak checks, ordered by nothing else.
std::atomic<int64_t> g_live_impls{0};

c10::DispatchKeySet dtensor_key_set() {
  return c10::DispatchKeySet({c10::DispatchKey::PrivateUse1, c10::DispatchKey::AutogradPrivateUse1,
                              c10::DispatchKey::ADInplaceOrView});
}

at::Tensor without_autograd(at::Tensor local) {
  TORCH_INTERNAL_ASSERT(!is_dtensor(local), "a DTensor must never wrap another DTensor");
  // A local tensor with history would let autograd see through the wrapper.
  if (local.requires_grad() || local.grad_fn()) return local.detach();
  return local;
}

}  // namespace

DTensorImpl::DTensorImpl(at::Tensor local, DTensorSpec spec)
    : DTensorImpl(std::move(local), std::make_shared<const DTensorSpec>(std::move(spec))) {}

DTensorImpl::DTensorImpl(at::Tensor local, std::shared_ptr<const DTensorSpec> spec)
    : c10::TensorImpl(dtensor_key_set(), local.dtype(), local.device()),
      local_(without_autograd(std::move(local))),
      spec_(std::move(spec)) {
  TORCH_INTERNAL_ASSERT(spec_ != nullptr);
  set_storage_access_should_throw();
  refresh_from_spec();
  g_live_impls.fetch_add(1, std::memory_order_relaxed);
}

DTensorImpl::~DTensorImpl() { g_live_impls.fetch_sub(1, std::memory_order_relaxed); }

int64_t live_dtensor_impls() { return g_live_impls.load(std::memory_order_relaxed); }

void DTensorImpl::refresh_from_spec() {
  TORCH_INTERNAL_ASSERT(spec_->meta.shape.size() == spec_->meta.stride.size());
  set_sizes_and_strides(spec_->meta.shape, spec_->meta.stride);
}

void DTensorImpl::wait_pending() const {
  // Cleared first: a wait that throws (a failed collective) is reported
  // once, and the next read does not wait again on a broken work.
  WorkPtr work = std::move(pending_);
  pending_ = nullptr;
  work->wait();
}

void DTensorImpl::set_local_and_spec(at::Tensor local, DTensorSpec spec) {
  pending_ = nullptr;  // the new shard does not come from the pending work
  local_ = without_autograd(std::move(local));
  spec_ = std::make_shared<const DTensorSpec>(std::move(spec));
  refresh_from_spec();
}

c10::intrusive_ptr<c10::TensorImpl> DTensorImpl::shallow_copy_and_detach(
    const c10::VariableVersion& version_counter, bool allow_tensor_metadata_change) const {
  auto impl = c10::make_intrusive<DTensorImpl>(local_, spec_);
  impl->pending_ = pending_;
  copy_tensor_metadata(this, impl.get(), version_counter, allow_tensor_metadata_change);
  impl->refresh_numel();
  impl->refresh_contiguous();
  return impl;
}

c10::intrusive_ptr<c10::TensorImpl> DTensorImpl::shallow_copy_and_detach(
    c10::VariableVersion&& version_counter, bool allow_tensor_metadata_change) const {
  auto impl = c10::make_intrusive<DTensorImpl>(local_, spec_);
  impl->pending_ = pending_;
  copy_tensor_metadata(this, impl.get(), std::move(version_counter), allow_tensor_metadata_change);
  impl->refresh_numel();
  impl->refresh_contiguous();
  return impl;
}

void DTensorImpl::shallow_copy_from(const c10::intrusive_ptr<c10::TensorImpl>& impl) {
  auto* other = dynamic_cast<DTensorImpl*>(impl.get());
  TORCH_CHECK(other != nullptr, "cannot set the data of a DTensor to a plain tensor; assign a DTensor");
  copy_tensor_metadata(other, this, version_counter(), allow_tensor_metadata_change());
  local_ = other->local_;
  spec_ = other->spec_;
  pending_ = other->pending_;
  refresh_numel();
  refresh_contiguous();
}

at::Tensor make_dtensor(at::Tensor local, DTensorSpec spec) {
  TORCH_CHECK(local.defined(), "make_dtensor: the local tensor is undefined");
  return at::Tensor(c10::make_intrusive<DTensorImpl>(std::move(local), std::move(spec)));
}

at::Tensor make_dtensor(at::Tensor local, std::shared_ptr<const DTensorSpec> spec) {
  TORCH_CHECK(local.defined(), "make_dtensor: the local tensor is undefined");
  return at::Tensor(c10::make_intrusive<DTensorImpl>(std::move(local), std::move(spec)));
}

DTensorImpl* dtensor_impl(const at::Tensor& t) {
  if (!t.defined()) return nullptr;
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (!impl->key_set().has_backend(c10::BackendComponent::PrivateUse1Bit)) return nullptr;
  // DTensorImpl is final: comparing the dynamic type is exact and cheaper
  // than a dynamic_cast on every argument of every call.
  return typeid(*impl) == typeid(DTensorImpl) ? static_cast<DTensorImpl*>(impl) : nullptr;
}

bool is_dtensor(const at::Tensor& t) { return dtensor_impl(t) != nullptr; }

}  // namespace dtensor
