// Module boundaries for C++ modules, which have no forward hooks: parallel
// styles attach input/output transforms to a module, and observers (the
// ModuleTracker of debug/) see every forward enter and exit. Both work only
// when the call goes through one of the two mechanisms below:
//   y = dtensor::nn::call(net1, x);                 // a child called from a parent
//   dtensor::nn::ModuleScope scope(*this, {x});     // inside your own forward
//   ... uses scope.inputs()[0] ...; return scope.output(y);
// Plain calls (net1(x)) still compute correct results through sharding
// propagation; they are just invisible to hooks and tracing.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace dtensor::nn {

using TensorList = std::vector<at::Tensor>;

/// Transforms a module's tensor inputs (in argument order) before forward.
using ForwardPreHook = std::function<TensorList(torch::nn::Module& module, TensorList inputs)>;
/// Transforms a module's tensor output after forward.
using ForwardHook =
    std::function<at::Tensor(torch::nn::Module& module, const TensorList& inputs, at::Tensor output)>;

/// Hooks run in registration order at every dtensor::nn::call / ModuleScope
/// of `module`. They live as long as the module (held weakly, keyed by it).
void register_forward_pre_hook(torch::nn::Module& module, ForwardPreHook hook);
void register_forward_hook(torch::nn::Module& module, ForwardHook hook);
/// Removes every hook of `module`.
void clear_forward_hooks(torch::nn::Module& module);

/// Sees module boundaries on the thread it is registered on.
class ModuleObserver {
 public:
  virtual ~ModuleObserver() = default;
  /// After the pre-hooks ran: `inputs` are what forward receives.
  virtual void on_forward_enter(torch::nn::Module& module, const TensorList& inputs) = 0;
  /// After the forward hooks ran; `outputs` is empty when the output is not
  /// one tensor or the scope ended without output().
  virtual void on_forward_exit(torch::nn::Module& module, const TensorList& inputs,
                               const TensorList& outputs) = 0;
};

/// Registers `observer` for the calling thread while alive.
class ScopedModuleObserver {
 public:
  explicit ScopedModuleObserver(ModuleObserver* observer);
  ~ScopedModuleObserver();
  ScopedModuleObserver(const ScopedModuleObserver&) = delete;
  ScopedModuleObserver& operator=(const ScopedModuleObserver&) = delete;

 private:
  ModuleObserver* observer_;
};

/// One forward of `module`: tells the observers, then runs its pre-hooks on
/// `inputs`; output() runs its forward hooks, then ends the scope (so what
/// the hooks issue is attributed to this module, as in PyTorch).
class ModuleScope {
 public:
  ModuleScope(torch::nn::Module& module, TensorList inputs);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

  /// The inputs after the pre-hooks (use these in forward).
  const TensorList& inputs() const { return inputs_; }
  /// Runs the forward hooks on `output`, ends the scope, returns the result.
  at::Tensor output(at::Tensor output);

 private:
  torch::nn::Module& module_;
  TensorList inputs_;
  bool exited_ = false;
};

namespace detail {
template <typename T>
constexpr bool is_tensor_v = std::is_same_v<std::decay_t<T>, at::Tensor>;

template <typename Tuple, size_t... I>
TensorList collect_tensors(const Tuple& args, std::index_sequence<I...>) {
  TensorList out;
  auto add = [&out](const auto& a) {
    if constexpr (is_tensor_v<decltype(a)>) out.push_back(a);
  };
  (add(std::get<I>(args)), ...);
  return out;
}

template <typename Tuple, size_t... I>
void replace_tensors(Tuple& args, const TensorList& tensors, std::index_sequence<I...>) {
  size_t next = 0;
  auto put = [&](auto& a) {
    if constexpr (is_tensor_v<decltype(a)>) a = tensors[next++];
  };
  (put(std::get<I>(args)), ...);  // comma fold: left to right
}
}  // namespace detail

/// Calls `holder->forward(args...)` through the module's hooks and observers.
/// Example: `at::Tensor h = dtensor::nn::call(net1, x);`
template <typename Holder, typename... Args>
auto call(Holder& holder, Args&&... args) {
  std::tuple<std::decay_t<Args>...> tuple(std::forward<Args>(args)...);
  constexpr auto indices = std::index_sequence_for<Args...>{};
  ModuleScope scope(*holder, detail::collect_tensors(tuple, indices));
  detail::replace_tensors(tuple, scope.inputs(), indices);
  auto result = std::apply([&](auto&... a) { return holder->forward(a...); }, tuple);
  if constexpr (std::is_same_v<decltype(result), at::Tensor>) {
    return scope.output(std::move(result));
  } else {
    return result;
  }
}

}  // namespace dtensor::nn

/// Marks the enclosing forward as `module`'s (for tracing) with its inputs:
/// `DTENSOR_MODULE_SCOPE(*this, x);` (hooks do not transform `x` here: use
/// ModuleScope directly for that).
#define DTENSOR_MODULE_SCOPE(module, ...) \
  ::dtensor::nn::ModuleScope dtensor_module_scope_##__LINE__((module), {__VA_ARGS__})
