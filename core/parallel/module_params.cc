// Registry surgery on torch::nn modules and the member binders that keep
// their C++ members in step. See Note [Member tensors of C++ modules].
#include "core/parallel/module_params.h"

#include <c10/util/Exception.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <mutex>
#include <sstream>
#include <unordered_map>

#include "core/dtensor_impl.h"

namespace dtensor {
namespace {

// Note [Reaching Module's registries]
// torch::nn::Module has no public way to replace a registered tensor:
// register_parameter overwrites but register_buffer throws on an existing
// name, and named_parameters() returns copies. `parameters_` is protected, so
// it is reached through a subclass. `buffers_` is private; it is reached with
// the explicit-instantiation rule ([temp.explicit]: access checks do not
// apply to the arguments of an explicit instantiation), which hands its
// member pointer to a friend function. Both are plain member pointers into
// LibTorch's own layout: no offsets are guessed.
using RegistryMember = torch::OrderedDict<std::string, at::Tensor> torch::nn::Module::*;
RegistryMember module_buffers_member();
template <RegistryMember Member>
struct BuffersMemberAccess {
  friend RegistryMember module_buffers_member() { return Member; }
};
template struct BuffersMemberAccess<&torch::nn::Module::buffers_>;

struct RegistryAccess : torch::nn::Module {
  static torch::OrderedDict<std::string, at::Tensor>& parameters(torch::nn::Module& m) {
    return m.*(&RegistryAccess::parameters_);
  }
  static torch::OrderedDict<std::string, at::Tensor>& buffers(torch::nn::Module& m) {
    return m.*(module_buffers_member());
  }
};

struct BinderRegistry {
  std::mutex mutex;
  std::unordered_map<std::type_index, MemberBinder> binders;
};

// Convolutions (ConvNdImpl), batch norms (BatchNormImplBase) and group norm
// keep weight and bias members, whichever of them the module registered.
template <typename Impl>
void bind_weight_and_bias(torch::nn::Module& m) {
  auto& impl = dynamic_cast<Impl&>(m);
  if (const at::Tensor* w = RegistryAccess::parameters(m).find("weight")) impl.weight = *w;
  if (const at::Tensor* b = RegistryAccess::parameters(m).find("bias")) impl.bias = *b;
}

// Batch norms also keep their running statistics as members.
template <typename Impl>
void bind_batch_norm(torch::nn::Module& m) {
  bind_weight_and_bias<Impl>(m);
  auto& impl = dynamic_cast<Impl&>(m);
  auto& buffers = RegistryAccess::buffers(m);
  if (const at::Tensor* t = buffers.find("running_mean")) impl.running_mean = *t;
  if (const at::Tensor* t = buffers.find("running_var")) impl.running_var = *t;
  if (const at::Tensor* t = buffers.find("num_batches_tracked")) impl.num_batches_tracked = *t;
}

// The built-in torch::nn modules whose forward reads members.
void add_builtin_binders(std::unordered_map<std::type_index, MemberBinder>& binders) {
  binders[typeid(torch::nn::Conv1dImpl)] = &bind_weight_and_bias<torch::nn::Conv1dImpl>;
  binders[typeid(torch::nn::Conv2dImpl)] = &bind_weight_and_bias<torch::nn::Conv2dImpl>;
  binders[typeid(torch::nn::Conv3dImpl)] = &bind_weight_and_bias<torch::nn::Conv3dImpl>;
  binders[typeid(torch::nn::GroupNormImpl)] = &bind_weight_and_bias<torch::nn::GroupNormImpl>;
  binders[typeid(torch::nn::BatchNorm1dImpl)] = &bind_batch_norm<torch::nn::BatchNorm1dImpl>;
  binders[typeid(torch::nn::BatchNorm2dImpl)] = &bind_batch_norm<torch::nn::BatchNorm2dImpl>;
  binders[typeid(torch::nn::BatchNorm3dImpl)] = &bind_batch_norm<torch::nn::BatchNorm3dImpl>;
  binders[typeid(torch::nn::LinearImpl)] = [](torch::nn::Module& m) {
    auto& lin = dynamic_cast<torch::nn::LinearImpl&>(m);
    lin.weight = RegistryAccess::parameters(m)["weight"];
    if (const at::Tensor* bias = RegistryAccess::parameters(m).find("bias")) lin.bias = *bias;
  };
  binders[typeid(torch::nn::EmbeddingImpl)] = [](torch::nn::Module& m) {
    dynamic_cast<torch::nn::EmbeddingImpl&>(m).weight = RegistryAccess::parameters(m)["weight"];
  };
  binders[typeid(torch::nn::LayerNormImpl)] = [](torch::nn::Module& m) {
    auto& norm = dynamic_cast<torch::nn::LayerNormImpl&>(m);
    if (const at::Tensor* w = RegistryAccess::parameters(m).find("weight")) norm.weight = *w;
    if (const at::Tensor* b = RegistryAccess::parameters(m).find("bias")) norm.bias = *b;
  };
}

BinderRegistry& binder_registry() {
  static auto* registry = [] {
    auto* r = new BinderRegistry();
    add_builtin_binders(r->binders);
    return r;
  }();
  return *registry;
}

MemberBinder find_binder(const torch::nn::Module& module) {
  BinderRegistry& r = binder_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.binders.find(std::type_index(typeid(module)));
  return it == r.binders.end() ? MemberBinder() : it->second;
}

std::string registered_names(const torch::OrderedDict<std::string, at::Tensor>& dict) {
  std::ostringstream out;
  out << "[";
  bool first = true;
  for (const auto& item : dict) {
    out << (first ? "" : ", ") << item.key();
    first = false;
  }
  out << "]";
  return out.str();
}

void replace_entry(torch::nn::Module& module, const std::string& name, at::Tensor value, bool is_parameter) {
  auto& dict = is_parameter ? RegistryAccess::parameters(module) : RegistryAccess::buffers(module);
  const char* what = is_parameter ? "parameter" : "buffer";
  at::Tensor* slot = dict.find(name);
  TORCH_CHECK(slot != nullptr, module.name(), " has no registered ", what, " '", name,
              "' (registered: ", registered_names(dict), ")");
  at::Tensor old = std::move(*slot);
  *slot = std::move(value);
  MemberBinder binder = find_binder(module);
  if (binder) {
    binder(module);
  } else if (old.defined() && old.use_count() > 1) {
    TORCH_WARN("dtensor: replaced ", what, " '", name, "' of ", module.name(),
               ", but its old tensor is still referenced elsewhere, probably by a C++ member that "
               "forward() reads; register a member binder for this type "
               "(dtensor::register_member_binder<",
               module.name(), ">({{\"", name, "\", &", module.name(), "::member}})) or read the ", what,
               " by name in forward (dtensor::param(*this, \"", name,
               "\")). See Note [Member tensors of C++ modules] in core/parallel/module_params.h.");
  }
}

at::Tensor registered(const torch::nn::Module& module, const std::string& name, bool is_parameter) {
  auto& m = const_cast<torch::nn::Module&>(module);  // read only
  auto& dict = is_parameter ? RegistryAccess::parameters(m) : RegistryAccess::buffers(m);
  const at::Tensor* t = dict.find(name);
  TORCH_CHECK(t != nullptr && t->defined(), module.name(), " has no registered ",
              is_parameter ? "parameter" : "buffer", " '", name, "' (registered: ", registered_names(dict),
              ")");
  return *t;
}

DTensor distribute_entry(torch::nn::Module& module, const std::string& name, const DeviceMesh& mesh,
                         Placements placements, const DistributeOptions& options, bool is_parameter) {
  at::Tensor value;
  {
    at::Tensor old = registered(module, name, is_parameter);
    if (is_dtensor(old)) {
      DTensor current(old);
      placements = checked_placements(placements, mesh, current.dim(), "distribute_parameter");
      TORCH_CHECK(current.device_mesh() == mesh && current.placements() == placements, "distribute_",
                  is_parameter ? "parameter" : "buffer", ": '", name, "' of ", module.name(),
                  " is already a DTensor ", current.spec().to_string(), ", not ",
                  dtensor::to_string(placements), " on ", mesh.to_string(),
                  "; a module can be distributed only once (check for overlapping "
                  "plan entries)");
      return current;  // distributed the same way already (a tied weight)
    }
    value = distribute_tensor(old.detach(), mesh, std::move(placements), options);
    value.requires_grad_(is_parameter && old.requires_grad());
  }
  replace_entry(module, name, value, is_parameter);
  return DTensor(value);
}

}  // namespace

void register_member_binder(std::type_index type, MemberBinder binder) {
  BinderRegistry& r = binder_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.binders[type] = std::move(binder);
}

bool has_member_binder(const torch::nn::Module& module) { return static_cast<bool>(find_binder(module)); }

at::Tensor param(const torch::nn::Module& module, const std::string& name) {
  auto& m = const_cast<torch::nn::Module&>(module);  // read only
  if (const at::Tensor* p = RegistryAccess::parameters(m).find(name); p && p->defined()) return *p;
  if (const at::Tensor* b = RegistryAccess::buffers(m).find(name); b && b->defined()) return *b;
  TORCH_CHECK(false, module.name(), " has no registered parameter or buffer '", name,
              "' (parameters: ", registered_names(RegistryAccess::parameters(m)),
              ", buffers: ", registered_names(RegistryAccess::buffers(m)), ")");
}

void set_parameter(torch::nn::Module& module, const std::string& name, at::Tensor value) {
  replace_entry(module, name, std::move(value), /*is_parameter=*/true);
}

void set_buffer(torch::nn::Module& module, const std::string& name, at::Tensor value) {
  replace_entry(module, name, std::move(value), /*is_parameter=*/false);
}

DTensor distribute_parameter(torch::nn::Module& module, const std::string& name, const DeviceMesh& mesh,
                             Placements placements, const DistributeOptions& options) {
  return distribute_entry(module, name, mesh, std::move(placements), options, /*is_parameter=*/true);
}

DTensor distribute_buffer(torch::nn::Module& module, const std::string& name, const DeviceMesh& mesh,
                          Placements placements, const DistributeOptions& options) {
  return distribute_entry(module, name, mesh, std::move(placements), options, /*is_parameter=*/false);
}

DTensor replicate_parameter(torch::nn::Module& module, const std::string& name, const DeviceMesh& mesh) {
  at::Tensor value;
  {
    at::Tensor old = registered(module, name, /*is_parameter=*/true);
    TORCH_CHECK(!is_dtensor(old), "replicate_parameter: '", name, "' of ", module.name(),
                " is already a DTensor ", DTensor(old).spec().to_string(),
                "; a module can be distributed only once (check for overlapping plan entries)");
    value = DTensor::from_local(old.detach(), mesh, Placements(static_cast<size_t>(mesh.ndim()), Replicate()));
    value.requires_grad_(old.requires_grad());
  }
  set_parameter(module, name, value);
  return DTensor(value);
}

at::Tensor replicate_like(const at::Tensor& plain, const at::Tensor& like) {
  if (!is_dtensor(like) || is_dtensor(plain)) return plain;
  const DeviceMesh& mesh = DTensor(like).device_mesh();
  return DTensor::from_local(plain, mesh, Placements(static_cast<size_t>(mesh.ndim()), Replicate()));
}

}  // namespace dtensor
