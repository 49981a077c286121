// Hook storage (keyed by module, held weakly) and per-thread observers.
#include "core/nn/module_call.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

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

}  // namespace

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
    for (ModuleObserver* o : std::vector<ModuleObserver*>(thread_observers())) {
      o->on_forward_exit(module_, inputs_, {});
    }
    throw;
  }
}

at::Tensor ModuleScope::output(at::Tensor output) {
  for (const ForwardHook& hook : snapshot(module_).post) output = hook(module_, inputs_, std::move(output));
  exited_ = true;
  for (ModuleObserver* o : std::vector<ModuleObserver*>(thread_observers())) {
    o->on_forward_exit(module_, inputs_, {output});
  }
  return output;
}

ModuleScope::~ModuleScope() {
  if (exited_) return;
  for (ModuleObserver* o : std::vector<ModuleObserver*>(thread_observers())) {
    o->on_forward_exit(module_, inputs_, {});
  }
}

}  // namespace dtensor::nn
