// ModuleTracker: which module is running on this thread, in forward and in
// backward, with PyTorch-style FQNs ("Transformer.layers.0.attention.wo").
// CommDebugMode uses it to attribute collectives; it also works alone.
//   debug::ModuleTracker tracker;
//   auto guard = tracker.enter(*model, "MLPModule");
//   ... dtensor::nn::call(model, x) ...; tracker.current_module();
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/device_mesh.h"
#include "layout/placement.h"
#include "core/nn/module_call.h"
#include "trace/trace_model.h"

namespace dtensor::debug {

// Note [Module tracking]
// Forward: C++ modules have no hooks, so module boundaries are the
// dtensor::nn::call / ModuleScope / DTENSOR_MODULE_SCOPE scopes of
// core/nn/module_call.h, seen through a ScopedModuleObserver. Plain calls
// (net1(x)) are invisible: their collectives go to the enclosing scope.
// FQNs: a root given to enter() names its subtree from named_modules(), the
// root itself by its given name or its class name ("MLPModuleImpl" ->
// "MLPModule"). Any other module is named from the module running when it is
// first entered (parent FQN + its path in the parent's named_modules()), or
// by its class name at top level.
// Backward, two mechanisms, the first that answers wins:
// 1. Sequence numbers: every autograd node created while a module's forward
//    runs has a sequence number inside that forward's [begin, end) range
//    (at::sequence_number). A RecordFunction callback tells which node is
//    running backward on this thread, so a collective issued by a node is
//    attributed to the innermost module whose forward created that node,
//    exactly, also for work done between child modules. Nodes created
//    outside every module of this session go to Global.
// 2. Tensor hooks (for work outside any node, e.g. in hooks, and nodes of
//    unknown origin): at forward exit, a hook on each output that requires
//    grad marks "backward enters the module", a hook on each input that
//    requires grad marks "backward leaves it". Entering M drops stack entries
//    that are not ancestors of M (inputs that never get a gradient cannot
//    leave a stale entry behind) and pushes M's missing ancestors (so a
//    parent whose output was not seen is still on the stack). Every node of
//    known origin that starts re-anchors the stack at its module.
// PyTorch instead attributes all backward work to the module whose backward
// pre-hook fired last. trace::Phase: get_current_graph_task_exec_info() != nullptr
// means this thread runs backward. A forward scope entered during backward
// (activation checkpointing recomputation) is its own module, phase backward;
// its nodes get sequence ranges like a forward's, inside an open range for
// the module whose node runs the recomputation (closed when that node ends),
// so the backward of the recomputed graph is attributed by mechanism 1 too.
// Hooks hold the tracker's state weakly and the tensors are held weakly
// (weak_intrusive_ptr); exit() removes every hook still alive (remove_hook),
// so nothing outlives the session and no activation is kept alive.

/// Tracks modules on the thread that enters it. Not copyable.
class ModuleTracker {
 public:
  struct State;  // shared with hooks; see module_tracker.cc

  /// Ends the session (exit()) when destroyed. Movable. A guard that
  /// outlives its tracker does nothing.
  class Guard {
   public:
    Guard(ModuleTracker* tracker, std::weak_ptr<State> alive) : tracker_(tracker), alive_(std::move(alive)) {}
    Guard(Guard&& other) noexcept;
    Guard& operator=(Guard&& other) noexcept;
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() { release(); }

   private:
    void release();
    ModuleTracker* tracker_;
    std::weak_ptr<State> alive_;
  };

  ModuleTracker();
  ~ModuleTracker();
  ModuleTracker(const ModuleTracker&) = delete;
  ModuleTracker& operator=(const ModuleTracker&) = delete;

  /// Starts a session on the calling thread: clears what a previous session
  /// recorded and observes module scopes until the guard dies. Throws when
  /// already entered. `root`: its subtree is named from named_modules(), the
  /// root itself `root_name` (default: its class name without namespace and
  /// "Impl"). Example: `auto g = tracker.enter(*model);` names "MLPModule.net1".
  [[nodiscard]] Guard enter();
  [[nodiscard]] Guard enter(torch::nn::Module& root, std::string root_name = "");
  /// Ends the session (the guard calls it): removes observers and hooks.
  /// Call it on the thread that entered.
  void exit();
  bool active() const;

  /// The innermost module running now on this thread (phase-aware), or
  /// "Global". Example: inside net2's forward, "MLPModule.net2".
  std::string current_module() const;
  /// True while this thread runs an autograd backward (PyTorch's is_bw).
  bool is_bw() const;
  trace::Phase current_phase() const { return is_bw() ? trace::Phase::kBackward : trace::Phase::kForward; }
  /// [Global, ..., current_module()] (PyTorch's parents, as a path).
  std::vector<std::string> parents() const;

  /// Modules entered in forward, first-entry order, with type and DTensor
  /// parameter placements.
  std::vector<trace::ModuleRecord> modules() const;
  /// fqn -> parameter name -> parameter (all parameters, not recursive).
  std::map<std::string, std::map<std::string, at::Tensor>> parameter_info() const;
  /// "fqn.param" -> placements, for DTensor parameters.
  std::map<std::string, Placements> sharding_info() const;
  /// Meshes of the DTensor parameters and inputs seen, first-seen order.
  std::vector<DeviceMesh> meshes() const;

  /// The class-derived name of `module`: "torch::nn::LinearImpl" -> "Linear".
  static std::string class_name(const torch::nn::Module& module);
  /// `module.name()` without a trailing "Impl": "torch::nn::Linear".
  static std::string module_type(const torch::nn::Module& module);

 private:
  class Observer;
  std::shared_ptr<State> state_;
  std::unique_ptr<Observer> observer_;
};

}  // namespace dtensor::debug
