// distribute_module: partition pass, replicate pass (keeping tied parameters
// tied) and boundary hooks.
#include "core/parallel/distribute_module.h"

#include <c10/util/intrusive_ptr.h>

#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/dtensor_impl.h"
#include "core/redistribution_origin.h"

namespace dtensor {
namespace {

using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

// Old tensor -> the DTensor that replaced it, so that a parameter registered
// in several modules (tied weights) is replaced by one DTensor everywhere.
// The weak references keep the old impls' addresses from being reused
// without counting as users (see the stale-member check in module_params.cc).
class Replacements {
 public:
  void record(const at::Tensor& old, const at::Tensor& replacement) {
    if (!old.defined() || is_dtensor(old)) return;
    entries_.emplace(old.unsafeGetTensorImpl(), Entry{WeakImpl(old.getIntrusivePtr()), replacement});
  }
  const at::Tensor* find(const at::Tensor& old) const {
    auto it = entries_.find(old.unsafeGetTensorImpl());
    return it == entries_.end() ? nullptr : &it->second.replacement;
  }

 private:
  struct Entry {
    WeakImpl keep_address;
    at::Tensor replacement;
  };
  std::unordered_map<const c10::TensorImpl*, Entry> entries_;
};

std::vector<std::pair<std::string, WeakImpl>> weak_entries(
    const torch::OrderedDict<std::string, at::Tensor>& dict) {
  std::vector<std::pair<std::string, WeakImpl>> out;
  for (const auto& item : dict) {
    if (item.value().defined() && !is_dtensor(item.value())) {
      out.emplace_back(item.key(), WeakImpl(item.value().getIntrusivePtr()));
    }
  }
  return out;
}

// Points this module's entries that were replaced in another module at the
// same replacement.
void apply_ties(torch::nn::Module& module, const Replacements& done) {
  for (const auto& item : module.named_parameters(/*recurse=*/false)) {
    if (const at::Tensor* r = done.find(item.value())) set_parameter(module, item.key(), *r);
  }
  for (const auto& item : module.named_buffers(/*recurse=*/false)) {
    if (const at::Tensor* r = done.find(item.value())) set_buffer(module, item.key(), *r);
  }
}

void record(const std::vector<std::pair<std::string, WeakImpl>>& before,
            const torch::OrderedDict<std::string, at::Tensor>& now, Replacements& done) {
  for (const auto& [name, weak] : before) {
    at::Tensor old = at::Tensor(weak.lock());
    const at::Tensor* current = now.find(name);
    if (old.defined() && current != nullptr && is_dtensor(*current)) done.record(old, *current);
  }
}

void replicate_rest(torch::nn::Module& module, const DeviceMesh& mesh, const DistributeOptions& options) {
  const Placements replicate(static_cast<size_t>(mesh.ndim()), Replicate());
  for (const auto& item : module.named_parameters(/*recurse=*/false)) {
    if (!is_dtensor(item.value())) distribute_parameter(module, item.key(), mesh, replicate, options);
  }
  for (const auto& item : module.named_buffers(/*recurse=*/false)) {
    if (!is_dtensor(item.value())) distribute_buffer(module, item.key(), mesh, replicate, options);
  }
}

// Attaches `module`'s boundary to every DTensor parameter of its tree; a
// parameter that already belongs to another module (tied weights, or a
// child's own style) keeps that owner too. See Note [Skipped boundaries].
void attach_boundary(torch::nn::Module& module, const DistributeModuleOptions& options) {
  nn::ModuleBoundary::Owner owner{&module, options.module_name.empty() ? module.name() : options.module_name,
                                  options.style_name.empty() ? "distribute_module input_fn / output_fn"
                                                             : options.style_name};
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    DTensorImpl* impl = dtensor_impl(item.value());
    if (impl == nullptr) continue;
    auto boundary = std::make_shared<nn::ModuleBoundary>();
    if (const nn::ModuleBoundary* old = impl->boundary()) *boundary = *old;
    boundary->owners.push_back(owner);
    boundary->on_skip = options.skipped_boundary;
    impl->set_boundary(std::move(boundary));
  }
}

}  // namespace

void distribute_module(torch::nn::Module& module, const DeviceMesh& mesh, const PartitionFn& partition_fn,
                       const InputFn& input_fn, const OutputFn& output_fn,
                       const DistributeModuleOptions& options) {
  TORCH_CHECK(mesh.defined(), "distribute_module: the mesh is empty; create it with DeviceMesh::init");
  DistributeOptions distribute_options;
  distribute_options.src_data_rank = options.src_data_rank;
  Replacements done;
  for (const auto& item : module.named_modules(/*name_prefix=*/"", /*include_self=*/true)) {
    torch::nn::Module& sub = *item.value();
    apply_ties(sub, done);
    const auto params_before = weak_entries(sub.named_parameters(/*recurse=*/false));
    const auto buffers_before = weak_entries(sub.named_buffers(/*recurse=*/false));
    if (partition_fn) partition_fn(item.key(), sub, mesh);
    replicate_rest(sub, mesh, distribute_options);
    record(params_before, sub.named_parameters(/*recurse=*/false), done);
    record(buffers_before, sub.named_buffers(/*recurse=*/false), done);
  }
  if (input_fn || output_fn) attach_boundary(module, options);
  if (input_fn) {
    nn::register_forward_pre_hook(module, [input_fn, mesh](torch::nn::Module& m, nn::TensorList inputs) {
      ExplicitOriginScope origin(origin_cause::kDistributeModule, "distribute_module input_fn");
      return input_fn(m, std::move(inputs), mesh);
    });
  }
  if (output_fn) {
    nn::register_forward_hook(
        module, [output_fn, mesh](torch::nn::Module& m, const nn::TensorList&, at::Tensor output) {
          ExplicitOriginScope origin(origin_cause::kDistributeModule, "distribute_module output_fn");
          return output_fn(m, std::move(output), mesh);
        });
  }
}

}  // namespace dtensor
