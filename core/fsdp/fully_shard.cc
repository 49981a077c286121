// fully_shard: FSDP2's module hooks on top of ParamGroup.
#include "core/fsdp/fully_shard.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "backends/async_region.h"
#include "core/compat/autograd_node.h"
#include "core/fsdp/param_group.h"
#include "core/nn/module_boundary.h"
#include "core/nn/module_call.h"

namespace dtensor {
namespace fsdp {

// Note [FSDP hooks]
// C++ modules have no hooks of their own; fully_shard registers forward
// pre/post hooks (core/nn/module_call.h) and builds two identity autograd
// nodes, as PyTorch's FSDP2 does with its hooks:
// - pre-forward: the first fully_shard module whose forward starts on this
//   thread, with none running, is the *root* of that forward. Unshard the
//   group (one all_gather); cast floating inputs (mp_policy); route the
//   inputs that require grad through a PostBackward node, whose backward
//   runs once the gradients of the inputs are computed, that is after the
//   module's whole backward: reduce-scatter the gradients, reshard.
// - post-forward: reshard unless this is the root (or with grad off, there
//   is no backward: always); route the output through a PreBackward node,
//   whose backward runs before any of the module's nodes: unshard again.
//   Both nodes are created inside the module's forward scope, so the module
//   tracker attributes their collectives to the module, phase backward.
// - PreBackward also prefetches, as PyTorch's default (implicit) backward
//   prefetch: it unshards the group whose post-forward ran just before this
//   one's, the next whose backward comes. So the root's PreBackward gathers
//   the last layer and layer i's gathers layer i - 1, and the collectives
//   land on those modules in traces, as in PyTorch's CommDebugMode.
//   set_modules_to_backward_prefetch replaces that choice by a list;
//   set_modules_to_forward_prefetch makes pre-forward gather a list too.
// - The first PreBackward of a backward queues an end-of-backward callback
//   (Engine::queue_callback) that finishes every group touched since the last
//   one: a module whose inputs need no gradient (the embedding's token ids)
//   never runs its PostBackward, so its gradients are reduced there; then
//   everything is resharded.
// - The root's pre-forward marks the compute stream; the all-gathers of that
//   forward and of its backward wait only for that mark, and the
//   reduce-scatters run beside the backward until its end (Note [FSDP
//   streams] in param_group.h; CUDA ranks only).
// AccumulateGrad nodes run before other ready nodes (the engine gives them
// the highest priority), so by the time PostBackward runs the unsharded
// gradients have accumulated, as PyTorch relies on too.
// The forward runs on the thread that called the root; backward may not:
// LibTorch runs CUDA nodes on a device thread (found on NCCL: a per-thread
// list left the root's gradients unreduced there). So the lists backward
// reads live here, one per root, shared by the groups of its forward.
struct RootContext {
  std::mutex mutex;
  // Groups whose forward ran since the last end-of-backward callback.
  std::vector<std::weak_ptr<FsdpState>> touched;
  // Groups in the order their post-forward ran in the current forward (with
  // grad): backward reaches them in reverse, so it prefetches along it.
  std::vector<std::weak_ptr<FsdpState>> post_forward_order;
  bool end_of_backward_queued = false;
  // The compute stream when the current forward began (after the optimizer
  // wrote the parameters): what its all-gathers wait for (Note [FSDP
  // streams]); null without streams.
  std::shared_ptr<const StreamMark> params_written;
};

struct FsdpState : std::enable_shared_from_this<FsdpState> {
  torch::nn::Module* module = nullptr;
  std::weak_ptr<torch::nn::Module> alive;
  std::string name;
  DeviceMesh mesh;
  FullyShardOptions options;
  std::unique_ptr<ParamGroup> group;
  bool requires_gradient_sync = true;
  bool root_of_current_forward = false;
  std::shared_ptr<RootContext> own_context;  // when this state is a root
  std::shared_ptr<RootContext> context;      // the root's, set by each forward
  std::vector<std::weak_ptr<FsdpState>> forward_prefetch;
  std::optional<std::vector<std::weak_ptr<FsdpState>>> backward_prefetch;  // unset: implicit

  nn::TensorList pre_forward(nn::TensorList inputs);
  at::Tensor post_forward(at::Tensor output);
  void pre_backward();
  void post_backward();
  std::vector<std::shared_ptr<FsdpState>> subtree() const;
  // Names every fully_shard module below this root by its path
  // ("Transformer.layers.0") for error messages, once.
  void name_subtree();
  bool named_from_root = false;
};

namespace {

// ---- the registry: module -> state (nested fully_shard calls, fsdp_module_of) ----

std::mutex registry_mutex;
std::unordered_map<const torch::nn::Module*, std::weak_ptr<FsdpState>>& registry() {
  static auto* map = new std::unordered_map<const torch::nn::Module*, std::weak_ptr<FsdpState>>();
  return *map;
}

std::shared_ptr<FsdpState> lookup(const torch::nn::Module& module) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry().find(&module);
  if (it == registry().end()) return nullptr;
  std::shared_ptr<FsdpState> state = it->second.lock();
  // A dead module's address may be reused: check the state's module is alive.
  if (state == nullptr || state->alive.expired()) {
    registry().erase(it);
    return nullptr;
  }
  return state;
}

void remember(const torch::nn::Module& module, const std::shared_ptr<FsdpState>& state) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (auto it = registry().begin(); it != registry().end();) {
    it = it->second.expired() ? registry().erase(it) : std::next(it);
  }
  registry()[&module] = state;
}

// ---- bookkeeping of one root's forward and backward ----

// The root whose forward runs on this thread (each fake rank is a thread).
thread_local std::weak_ptr<FsdpState> current_root;

void end_of_backward(const std::shared_ptr<RootContext>& context) {
  std::vector<std::weak_ptr<FsdpState>> states;
  {
    std::lock_guard<std::mutex> lock(context->mutex);
    context->end_of_backward_queued = false;
    states.swap(context->touched);
  }
  // Reverse forward order, the order backward reaches them.
  for (auto it = states.rbegin(); it != states.rend(); ++it) {
    if (std::shared_ptr<FsdpState> state = it->lock()) state->post_backward();
  }
  // The optimizer reads the sharded gradients next: the reductions that ran
  // beside the backward are waited for here (Note [FSDP streams]).
  for (const auto& weak : states) {
    if (std::shared_ptr<FsdpState> state = weak.lock()) state->group->wait_for_gradients();
  }
}

// Identity on its inputs; runs `on_backward` once their gradients are known.
struct HookNode : torch::autograd::Node {
  std::string label;
  bool pre_backward = false;
  std::vector<std::function<void()>> on_backward;
  std::string name() const override { return label; }
  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    for (const auto& fn : on_backward) fn();
    return std::move(grads);
  }
};

// Routes the tensors of `tensors` that require grad through one HookNode.
// A PreBackward for a tensor that already comes out of one (a module that
// returns its child's output unchanged) joins it, after the child's: the
// order in which PyTorch's hooks on one tensor fire, so its prefetch and
// its traces are PyTorch's.
nn::TensorList through_hook_node(nn::TensorList tensors, std::string label, std::function<void()> on_backward,
                                 bool pre_backward) {
  if (!at::GradMode::is_enabled()) return tensors;
  if (pre_backward && tensors.size() == 1 && tensors[0].defined()) {
    if (auto* node = dynamic_cast<HookNode*>(tensors[0].grad_fn().get()); node != nullptr && node->pre_backward) {
      node->on_backward.push_back(std::move(on_backward));
      return tensors;
    }
  }
  std::vector<size_t> which;
  std::vector<at::Tensor> inputs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].defined() && tensors[i].requires_grad()) {
      which.push_back(i);
      inputs.push_back(tensors[i]);
    }
  }
  if (which.empty()) return tensors;
  auto node = compat::make_autograd_node<HookNode>();
  node->label = std::move(label);
  node->pre_backward = pre_backward;
  node->on_backward.push_back(std::move(on_backward));
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  for (size_t i : which) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      out = tensors[i].alias();
    }
    torch::autograd::set_history(out, node);
    tensors[i] = out;
  }
  return tensors;
}

// "dtensor::examples::TransformerImpl" -> "Transformer", as module traces name it.
std::string type_name(const torch::nn::Module& module) {
  std::string name = module.name();
  if (const size_t colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0) name.resize(name.size() - 4);
  return name;
}

bool is_floating(const at::Tensor& t) { return t.defined() && at::isFloatingType(t.scalar_type()); }

}  // namespace

nn::TensorList FsdpState::pre_forward(nn::TensorList inputs) {
  std::shared_ptr<FsdpState> root = current_root.lock();
  // A forward that threw never ran its root's post-forward: that root is stale.
  if (root != nullptr && !nn::module_in_scope(root->module)) {
    root->root_of_current_forward = false;
    root = nullptr;
  }
  if (root == nullptr) {
    root = shared_from_this();
    current_root = root;
    root_of_current_forward = true;
    if (own_context == nullptr) own_context = std::make_shared<RootContext>();
    std::lock_guard<std::mutex> lock(own_context->mutex);
    own_context->post_forward_order.clear();
    own_context->params_written = mark_current_stream(mesh.device());
    if (!named_from_root) name_subtree();
  }
  context = root->own_context;
  if (at::GradMode::is_enabled()) {
    std::lock_guard<std::mutex> lock(context->mutex);
    bool known = false;
    for (const auto& t : context->touched) known = known || t.lock().get() == this;
    if (!known) context->touched.push_back(weak_from_this());
  }
  group->unshard(context->params_written);
  group->wait_for_unshard();
  for (const auto& weak : forward_prefetch) {
    if (std::shared_ptr<FsdpState> next = weak.lock()) next->group->unshard(context->params_written);
  }
  const MixedPrecisionPolicy& mp = options.mp_policy;
  if (mp.param_dtype && mp.cast_forward_inputs) {
    for (at::Tensor& x : inputs) {
      if (is_floating(x) && x.scalar_type() != *mp.param_dtype) x = x.to(*mp.param_dtype);
    }
  }
  std::weak_ptr<FsdpState> weak = weak_from_this();
  return through_hook_node(std::move(inputs), "dtensor::FSDPPostBackward(" + name + ")", [weak] {
    if (std::shared_ptr<FsdpState> state = weak.lock()) state->post_backward();
  }, /*pre_backward=*/false);
}

at::Tensor FsdpState::post_forward(at::Tensor output) {
  const bool is_root = root_of_current_forward;
  if (is_root) {
    current_root.reset();
    root_of_current_forward = false;
  }
  // With grad off no backward follows, so the root frees its parameters too.
  if (!at::GradMode::is_enabled()) {
    group->reshard();
  } else if (options.reshard_after_forward_to > 0) {
    group->reshard_to_post_forward();  // a no-op reshard() without a post-forward mesh (n = shard size)
  } else if (options.reshard_after_forward.value_or(!is_root)) {
    group->reshard();
  }
  if (at::GradMode::is_enabled()) {
    std::lock_guard<std::mutex> lock(context->mutex);
    context->post_forward_order.push_back(weak_from_this());
  }
  std::weak_ptr<FsdpState> weak = weak_from_this();
  output = through_hook_node({output}, "dtensor::FSDPPreBackward(" + name + ")", [weak] {
             if (std::shared_ptr<FsdpState> state = weak.lock()) state->pre_backward();
           }, /*pre_backward=*/true).front();
  if (const auto& dtype = options.mp_policy.output_dtype; dtype && is_floating(output) &&
                                                           output.scalar_type() != *dtype) {
    output = output.to(*dtype);
  }
  return output;
}

void FsdpState::pre_backward() {
  std::shared_ptr<FsdpState> implicit_next;
  std::shared_ptr<const StreamMark> params_written;
  {
    std::lock_guard<std::mutex> lock(context->mutex);
    if (!context->end_of_backward_queued) {
      context->end_of_backward_queued = true;
      torch::autograd::Engine::get_default_engine().queue_callback(
          [root = context] { end_of_backward(root); });
    }
    const auto& order = context->post_forward_order;
    for (size_t i = order.size(); i-- > 1;) {
      if (order[i].lock().get() != this) continue;
      implicit_next = order[i - 1].lock();
      break;
    }
    params_written = context->params_written;  // backward may run on another thread
  }
  group->unshard(params_written);
  group->wait_for_unshard();
  if (backward_prefetch) {
    for (const auto& weak : *backward_prefetch) {
      if (std::shared_ptr<FsdpState> next = weak.lock()) next->group->unshard(params_written);
    }
  } else if (implicit_next != nullptr) {
    implicit_next->group->unshard(params_written);
  }
}

void FsdpState::post_backward() {
  if (requires_gradient_sync) group->reduce_gradients();
  group->reshard();
}

void FsdpState::name_subtree() {
  for (const auto& item : module->named_modules(/*name_prefix=*/name)) {
    if (std::shared_ptr<FsdpState> state = lookup(*item.value())) {
      state->name = item.key();
      state->group->set_module_name(item.key());
      state->named_from_root = true;
    }
  }
}

std::vector<std::shared_ptr<FsdpState>> FsdpState::subtree() const {
  std::vector<std::shared_ptr<FsdpState>> out;
  for (const auto& child : module->modules(/*include_self=*/true)) {
    if (std::shared_ptr<FsdpState> state = lookup(*child)) out.push_back(std::move(state));
  }
  return out;
}

}  // namespace fsdp

torch::nn::Module& FSDPModule::module() const { return *state_->module; }
const DeviceMesh& FSDPModule::mesh() const { return state_->mesh; }
void FSDPModule::unshard() {
  state_->group->unshard();
  state_->group->wait_for_unshard();
}
void FSDPModule::reshard() { state_->group->reshard(); }
bool FSDPModule::is_unsharded() const { return state_->group->is_unsharded(); }

std::vector<std::shared_ptr<fsdp::FsdpState>> FSDPModule::states(bool recurse) const {
  return recurse ? state_->subtree() : std::vector<std::shared_ptr<fsdp::FsdpState>>{state_};
}

void FSDPModule::set_requires_gradient_sync(bool sync, bool recurse) {
  for (const auto& state : states(recurse)) state->requires_gradient_sync = sync;
}

void FSDPModule::set_reshard_after_forward(bool reshard, bool recurse) {
  for (const auto& state : states(recurse)) {
    state->options.reshard_after_forward = reshard;
    state->options.reshard_after_forward_to = 0;
  }
}

void FSDPModule::set_modules_to_forward_prefetch(const std::vector<FSDPModule>& modules) {
  state_->forward_prefetch.clear();
  for (const FSDPModule& m : modules) state_->forward_prefetch.push_back(m.state_);
}

void FSDPModule::set_modules_to_backward_prefetch(const std::vector<FSDPModule>& modules) {
  state_->backward_prefetch.emplace();
  for (const FSDPModule& m : modules) state_->backward_prefetch->push_back(m.state_);
}

std::vector<std::string> FSDPModule::managed_parameter_names() const {
  std::vector<std::string> names;
  for (const fsdp::FsdpParam& p : state_->group->params()) names.push_back(p.fqn);
  return names;
}

std::optional<FSDPModule> fsdp_module_of(const torch::nn::Module& module) {
  if (auto state = fsdp::lookup(module)) return FSDPModule(std::move(state));
  return std::nullopt;
}

namespace {

// PyTorch's int reshard_after_forward (FullyShardOptions::reshard_after_forward_to),
// validated as PyTorch does: 1 becomes false and the shard dim's size true;
// otherwise the group gets its post-forward mesh, the mesh's ranks row-major
// as (-1, n) (PyTorch's mesh.view(-1, n)).
void set_up_post_forward_mesh(fsdp::FsdpState& state) {
  FullyShardOptions& o = state.options;
  const int64_t n = o.reshard_after_forward_to;
  const int64_t shard = state.mesh.size(state.mesh.ndim() - 1);
  TORCH_CHECK(n <= shard && shard % n == 0, "fully_shard(", state.name, "): reshard_after_forward_to = ", n,
              " must divide the ", shard, " ranks the parameters are sharded over (", state.mesh.to_string(),
              "): give a divisor such as the ranks of one node, or use reshard_after_forward");
  if (n == 1 || n == shard) {
    o.reshard_after_forward = n == shard;
    o.reshard_after_forward_to = 0;
    return;
  }
  state.group->set_post_forward_mesh(
      DeviceMesh::from_ranks(state.mesh.device_type(), {state.mesh.size() / n, n}, state.mesh.mesh_ranks()));
}

}  // namespace

FSDPModule fully_shard(torch::nn::Module& module, const DeviceMesh& mesh, const FullyShardOptions& options) {
  TORCH_CHECK(mesh.defined() && (mesh.ndim() == 1 || mesh.ndim() == 2), "fully_shard(", module.name(),
              "): takes a 1-D data-parallel mesh (FSDP) or a 2-D (replicate, shard) mesh (HSDP), got ",
              mesh.defined() ? mesh.to_string() : std::string("an empty mesh"), "; pass mesh[\"dp\"]");
  TORCH_CHECK(fsdp::lookup(module) == nullptr, "fully_shard(", module.name(), ") on rank ", mesh.global_rank(),
              ": already applied to this module; call it once per module");
  TORCH_CHECK(options.reshard_after_forward_to >= 0, "fully_shard(", module.name(), "): reshard_after_forward_to = ",
              options.reshard_after_forward_to, " is negative; give a group size, or 0 to use reshard_after_forward");
  std::weak_ptr<torch::nn::Module> alive;
  try {
    alive = module.shared_from_this();
  } catch (const std::bad_weak_ptr&) {
    TORCH_CHECK(false, "fully_shard(", module.name(), "): the module must be owned by a std::shared_ptr "
                "(a TORCH_MODULE holder or std::make_shared), so FSDP can tell when it dies");
  }
  // Parameters of nested fully_shard modules belong to their groups.
  std::unordered_set<const c10::TensorImpl*> claimed;
  for (const auto& item : module.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    if (fsdp::lookup(*item.value()) == nullptr) continue;
    for (const at::Tensor& p : item.value()->parameters(/*recurse=*/true)) claimed.insert(p.unsafeGetTensorImpl());
  }
  std::vector<fsdp::FsdpParam> params;
  std::unordered_map<const c10::TensorImpl*, size_t> seen;  // tied weights: one entry, more owners
  for (const auto& module_item : module.named_modules(/*name_prefix=*/"", /*include_self=*/true)) {
    const std::string& path = module_item.key();
    const std::shared_ptr<torch::nn::Module>& owner = module_item.value();
    for (const auto& param_item : owner->named_parameters(/*recurse=*/false)) {
      const std::string& name = param_item.key();
      const c10::TensorImpl* impl = param_item.value().unsafeGetTensorImpl();
      if (claimed.count(impl) != 0) continue;
      if (auto it = seen.find(impl); it != seen.end()) {
        params[it->second].aliases.emplace_back(owner.get(), name);
        continue;
      }
      seen.emplace(impl, params.size());
      fsdp::FsdpParam p;
      p.owner = owner.get();
      p.name = name;
      p.fqn = path.empty() ? name : path + "." + name;
      params.push_back(std::move(p));
    }
  }
  auto state = std::make_shared<fsdp::FsdpState>();
  state->module = &module;
  state->alive = alive;
  state->name = fsdp::type_name(module);
  state->mesh = mesh;
  state->options = options;
  state->group = std::make_unique<fsdp::ParamGroup>(
      std::move(params), mesh,
      fsdp::MixedPrecision{options.mp_policy.param_dtype, options.mp_policy.reduce_dtype}, state->name,
      fsdp::Offload{options.offload_policy.has_value(),
                    options.offload_policy ? options.offload_policy->pin_memory : false});
  if (options.reshard_after_forward_to > 0) set_up_post_forward_mesh(*state);
  fsdp::remember(module, state);
  // The hooks own the state; they live as long as the module.
  nn::register_forward_pre_hook(module, [state](torch::nn::Module&, nn::TensorList inputs) {
    return state->pre_forward(std::move(inputs));
  });
  nn::register_forward_hook(module, [state](torch::nn::Module&, const nn::TensorList&, at::Tensor output) {
    return state->post_forward(std::move(output));
  });
  return FSDPModule(state);
}

}  // namespace dtensor
