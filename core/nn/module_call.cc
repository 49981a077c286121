// Hook storage (keyed by module, held weakly), per-thread observers and open
// forward scopes, and the skipped-boundary check.
#include "core/nn/module_call.h"

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/graph_task.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <unordered_map>

#include "core/nn/module_boundary.h"

namespace dtensor::nn {
namespace {

struct Hooks {
  std::weak_ptr<torch::nn::Module> owner;  // guards against address reuse
  std::vector<ForwardPreHook> pre;
  std::vector<ForwardHook> post;
};

// Modules of all fake-world ranks share this map (they are distinct objects,
// so entries never collide); the mutex serialises the rank threads.
std::mutex& hooks_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::unordered_map<const torch::nn::Module*, Hooks>& hooks_map() {
  static auto* map = new std::unordered_map<const torch::nn::Module*, Hooks>();
  return *map;
}

Hooks& hooks_for(torch::nn::Module& module) {
  Hooks& h = hooks_map()[&module];
  if (h.owner.expired()) {  // new module, or a dead one's address reused
    h = Hooks{};
    h.owner = module.shared_from_this();
  }
  return h;
}

// Copies the hooks so they run without the lock (a hook may call modules).
Hooks snapshot(torch::nn::Module& module) {
  std::lock_guard<std::mutex> lock(hooks_mutex());
  auto it = hooks_map().find(&module);
  if (it == hooks_map().end() || it->second.owner.expired()) return {};
  return it->second;
}

std::vector<ModuleObserver*>& thread_observers() {
  thread_local std::vector<ModuleObserver*> observers;
  return observers;
}

// The modules whose forward scope is open on this thread, innermost last.
std::vector<const torch::nn::Module*>& open_scopes() {
  thread_local std::vector<const torch::nn::Module*> scopes;
  return scopes;
}

void close_scope(const torch::nn::Module* module) {
  auto& scopes = open_scopes();
  auto it = std::find(scopes.rbegin(), scopes.rend(), module);
  if (it != scopes.rend()) scopes.erase(std::next(it).base());
}

// Note [Skipped boundaries]
// C++ modules have no forward hooks, so a parallel style's input and output
// conversions run only when the module is called through dtensor::nn::call
// or a ModuleScope. A model that calls child(x) still computes the right
// values (sharding propagation redistributes what it must) but issues other
// collectives than the plan says, silently. To make that loud without hooks,
// distribute_module attaches a ModuleBoundary to the parameters of a module
// whose boundary it converts, and the DTensor kernel checks each such input:
// the parameter is used properly when its module's scope is open on this
// thread. Uses that are not forward passes are let through: detach / alias
// (a handle, no computation), autograd's backward (the graph task is set),
// and, with grad mode off, anything run while no module scope is open at all
// (optimizer steps, init, inspection under a NoGradGuard).
// What this cannot see: a no-grad forward that opens no scope anywhere
// (call the root through dtensor::nn::call, or open a DTENSOR_MODULE_SCOPE
// in its forward, and it is seen). The cost on the common path is one
// pointer test per DTensor input; a parameter of a parallelized module adds
// a walk of the open scopes (a few entries).
bool use_is_exempt(std::string_view op) {
  // Taking a handle on the parameter computes nothing: p.detach() to inspect
  // or copy it is no forward pass.
  if (op == "aten::detach" || op == "aten::detach_" || op == "aten::alias" || op == "aten::lift_fresh") {
    return true;
  }
  if (torch::autograd::get_current_graph_task_exec_info() != nullptr) return true;  // in backward
  return !at::GradMode::is_enabled() && open_scopes().empty();
}

// Warn once per module name and process: the ranks of a fake world hold
// their own copies of the same module.
bool first_warning_for(const std::string& name) {
  static std::mutex mutex;
  static auto* warned = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  return warned->insert(name).second;
}

}  // namespace

bool module_in_scope(const torch::nn::Module* module) {
  const auto& scopes = open_scopes();
  return std::find(scopes.begin(), scopes.end(), module) != scopes.end();
}

void check_module_boundary(const ModuleBoundary& boundary, std::string_view op, int64_t rank) {
  if (boundary.on_skip == SkippedBoundary::kIgnore) return;
  for (const ModuleBoundary::Owner& owner : boundary.owners) {
    if (module_in_scope(owner.module)) return;
  }
  if (use_is_exempt(op) || boundary.owners.empty()) return;
  const ModuleBoundary::Owner& owner = boundary.owners.front();
  std::string message = c10::str(
      op, " uses a parameter of '", owner.name, "' (", owner.style, ") on rank ", rank,
      " while that module's forward is not in a module scope: it was called as '", owner.name,
      "(x)' or 'module->forward(x)', so the style's input and output conversions did not run and "
      "the collectives differ from the plan. Call it as dtensor::nn::call(", owner.name,
      ", x) (or open a dtensor::nn::ModuleScope in its parent's forward); see Note [Skipped "
      "boundaries] in core/nn/module_call.cc");
  if (boundary.on_skip == SkippedBoundary::kError) {
    TORCH_CHECK(false, message);
  }
  if (first_warning_for(owner.name + "\n" + owner.style)) TORCH_WARN(message);
}

void register_forward_pre_hook(torch::nn::Module& module, ForwardPreHook hook) {
  std::lock_guard<std::mutex> lock(hooks_mutex());
  hooks_for(module).pre.push_back(std::move(hook));
}

void register_forward_hook(torch::nn::Module& module, ForwardHook hook) {
  std::lock_guard<std::mutex> lock(hooks_mutex());
  hooks_for(module).post.push_back(std::move(hook));
}

void clear_forward_hooks(torch::nn::Module& module) {
  std::lock_guard<std::mutex> lock(hooks_mutex());
  hooks_map().erase(&module);
}

ScopedModuleObserver::ScopedModuleObserver(ModuleObserver* observer) : observer_(observer) {
  thread_observers().push_back(observer);
}

ScopedModuleObserver::~ScopedModuleObserver() {
  auto& observers = thread_observers();
  observers.erase(std::remove(observers.begin(), observers.end(), observer_), observers.end());
}

ModuleScope::ModuleScope(torch::nn::Module& module, TensorList inputs)
    : module_(module), inputs_(std::move(inputs)) {
  open_scopes().push_back(&module_);
  // Observers first, then the module's own pre-hooks, as PyTorch runs global
  // forward pre-hooks (its module tracker) before module ones: what a style's
  // input transform issues (PrepareModuleInput's all_gather) belongs to this
  // module. Likewise output() runs the module's hooks before observers exit.
  for (ModuleObserver* o : std::vector<ModuleObserver*>(thread_observers())) {
    o->on_forward_enter(module_, inputs_);
  }
  try {
    for (const ForwardPreHook& hook : snapshot(module_).pre) inputs_ = hook(module_, std::move(inputs_));
  } catch (...) {
    // No destructor runs for a throwing constructor: close the scope here.
    close_scope(&module_);
    for (ModuleObserver* o : std::vector<ModuleObserver*>(thread_observers())) {
      o->on_forward_exit(module_, inputs_, {});
    }
    throw;
  }
}

at::Tensor ModuleScope::output(at::Tensor output) {
  for (const ForwardHook& hook : snapshot(module_).post) output = hook(module_, inputs_, std::move(output));
  exited_ = true;
  close_scope(&module_);
  for (ModuleObserver* o : std::vector<ModuleObserver*>(thread_observers())) {
    o->on_forward_exit(module_, inputs_, {output});
  }
  return output;
}

ModuleScope::~ModuleScope() {
  if (exited_) return;
  close_scope(&module_);
  for (ModuleObserver* o : std::vector<ModuleObserver*>(thread_observers())) {
    o->on_forward_exit(module_, inputs_, {});
  }
}

}  // namespace dtensor::nn
