// checkpoint: forward without a graph, recomputation in backward.
#include "core/nn/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include <deque>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/collectives.h"
#include "core/compat/autograd_node.h"
#include "core/dispatch/op_name.h"

namespace dtensor::nn {
namespace {

// The default CPU generator's state.
at::Tensor cpu_rng_state() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

// Sets the default CPU generator's state; returns the one it had.
at::Tensor exchange_cpu_rng_state(const at::Tensor& state) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  at::Tensor before = generator.get_state();
  generator.set_state(state);
  return before;
}

// The recomputation. Inputs of the node are the gradients of the output;
// its outputs are the gradients of `inputs` (next edges in the same order).
struct CheckpointBackward : torch::autograd::Node {
  std::function<at::Tensor(const TensorList&)> fn;  // the recomputation
  TensorList inputs;               // detached
  std::vector<bool> requires_grad;  // of each input
  at::Tensor rng_state;            // of the default CPU generator before the first run

  std::string name() const override { return "dtensor::CheckpointBackward"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    TORCH_CHECK(fn, "checkpoint: backward ran twice; the recomputation is freed after the "
                "first (call backward with retain_graph only outside checkpointed regions)");
    TensorList again;
    again.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      at::Tensor x = inputs[i].defined() ? inputs[i].detach() : inputs[i];
      if (x.defined() && requires_grad[i]) x.set_requires_grad(true);
      again.push_back(x);
    }
    const at::Tensor state_now = exchange_cpu_rng_state(rng_state);
    at::Tensor out;
    {
      at::AutoGradMode enable(true);
      out = fn(again);
    }
    exchange_cpu_rng_state(state_now);
    if (out.requires_grad() && grads[0].defined()) {
      // Every leaf accumulates: the parameters, and the detached inputs,
      // whose gradients are this node's outputs.
      torch::autograd::backward({out}, {grads[0]});
    }
    torch::autograd::variable_list result;
    for (size_t i = 0; i < again.size(); ++i) {
      result.push_back(again[i].defined() && requires_grad[i] ? again[i].grad() : at::Tensor());
    }
    inputs.clear();
    fn = nullptr;
    return result;
  }
};

// `forward` runs now without a graph, `recompute` in backward.
at::Tensor checkpoint_with(const std::function<at::Tensor(const TensorList&)>& forward,
                           std::function<at::Tensor(const TensorList&)> recompute, const TensorList& inputs) {
  auto node = compat::make_autograd_node<CheckpointBackward>();
  node->rng_state = cpu_rng_state();
  at::Tensor out;
  {
    at::NoGradGuard no_grad;
    out = forward(inputs);
  }
  // Whether anything needs a gradient is known only from a graph: parameters
  // inside fn may require grad with no input doing so. Keep the node always.
  node->fn = std::move(recompute);
  for (const at::Tensor& x : inputs) {
    node->inputs.push_back(x.defined() ? x.detach() : x);
    node->requires_grad.push_back(x.defined() && x.requires_grad());
  }
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  at::Tensor result;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    result = out.alias();
  }
  torch::autograd::set_history(result, node);
  return result;
}

// Note [Selective checkpoint]
// PyTorch's selective activation checkpointing puts a TorchDispatchMode
// around the checkpointed function: in forward it keeps the outputs of the
// operators the policy selects, in the recomputation it returns them instead
// of running those operators. A mode sits below autograd, so the
// recomputation still builds every autograd node, and above tensor
// subclasses, so it sees a DTensor operator whole. LibTorch has no C++
// dispatch modes; the same place in the dispatcher is a backend slot that
// thread-local state can add: while a selective checkpoint runs, its thread
// includes the PrivateUse3 key, the highest backend slot below Meta (above
// PrivateUse1, DTensor's, so an operator on DTensors reaches it first, as a
// mode before the subclass). Its kernel (registered on first use for every
// aten operator without a composite decomposition, and as the fallback of
// the others) counts the operator, asks the policy, keeps or returns the
// outputs, and otherwise runs the operator below the key with the thread's
// state as it was outside, so the operators a kernel calls inside (a
// DTensor's local ops and collectives) are not seen, as a mode's are not.
// The collectives the function issues itself (the redistributions at a TP
// module's boundary: PyTorch's functional collectives, which its mode sees)
// reach the policy through core/collectives' ResultKeeper, under PyTorch's
// names; FSDP's own gathers and reductions never do.
// Outputs are kept as copies and returned as fresh aliases without autograd
// metadata, to which the recomputation's autograd nodes attach. Copies,
// because the forward may write to an output's storage afterwards and no
// version counter tells: at::linear adds a 3-D input's bias in place to the
// _unsafe_view of its matmul's output (a new version counter), where
// PyTorch, under its Python mode, adds out of place. The copy is memory
// traffic and memory PyTorch does not have; meta tensors (the planner's solo
// traces) hold no values to overwrite, so there the outputs are kept as
// aliases (variable_data()), as PyTorch keeps them, and the planner counts
// neither the copy nor its bytes.
// Borrowing a backend slot has two more consequences: the key also selects
// the autograd kernel, so the DTensor autograd overrides register an
// AutogradPrivateUse3 kernel that drops the key and goes to them
// (core/ops/autograd_overrides.cc; their own operators are then seen, the
// overridden one is not: a max.dim or a norm on plain tensors is always
// recomputed); and meta tensors (solo mode) take the Meta slot above it, so
// plain meta operators are always recomputed there (DTensor ones are seen).
constexpr c10::DispatchKey kSelectiveKey = c10::DispatchKey::PrivateUse3;
constexpr c10::BackendComponent kSelectiveBackend = c10::BackendComponent::PrivateUse3Bit;

// What one selective checkpoint keeps: per operator name, the outputs of its
// kept calls in call order, with the arguments they were computed from.
struct KeptOutputs {
  struct Call {
    std::vector<c10::IValue> outputs;
    std::string arguments;  // shapes and dtypes, to check the recomputation
  };
  std::unordered_map<std::string, std::deque<Call>> by_op;
};

std::string describe_arguments(const torch::jit::Stack& stack, size_t count);

// The selective checkpoint running on this thread; it also decides for the
// collectives the function issues itself (TP boundaries), as PyTorch's policy
// sees its functional collectives.
struct SelectiveRun : collectives::ResultKeeper {
  SelectiveRun(SavePolicy save, std::shared_ptr<KeptOutputs> kept, bool recomputing)
      : save(std::move(save)), kept(std::move(kept)), recomputing(recomputing) {}

  SavePolicy save;
  std::shared_ptr<KeptOutputs> kept;
  bool recomputing = false;
  std::unordered_map<std::string, int64_t> calls;  // per operator name
  // The bits of the included keys the scope added (kSelectiveKey's
  // functionality and backend bits, those the thread had not included).
  uint64_t added_bits = 0;

  // The calling thread's keys without what this run's scope added: the state
  // an operator runs in below kSelectiveKey. Taken when asked, not at the
  // scope's start, as autograd kernels exclude keys on the way down
  // (AutoDispatchBelowADInplaceOrView).
  c10::impl::LocalDispatchKeySet outside() const {
    c10::impl::LocalDispatchKeySet keys = c10::impl::tls_local_dispatch_key_set();
    keys.included_ = c10::DispatchKeySet(c10::DispatchKeySet::RAW, keys.included_.raw_repr() & ~added_bits);
    return keys;
  }

  // Asks the policy for the next call of `name`: true when its result is (to be) kept.
  bool keeps(const std::string& name) { return save(name, calls[name]++); }

  // Forward: keeps copies of this call's outputs, or on meta tensors aliases
  // (Note [Selective checkpoint]).
  void keep(const std::string& name, std::string arguments, c10::ArrayRef<c10::IValue> outputs) {
    KeptOutputs::Call call;
    call.arguments = std::move(arguments);
    for (const c10::IValue& out : outputs) {
      if (!out.isTensor() || !out.toTensor().defined()) {
        call.outputs.push_back(out);
        continue;
      }
      const at::Tensor& t = out.toTensor();
      call.outputs.push_back(t.device().is_meta() ? t.variable_data() : t.clone());
    }
    kept->by_op[name].push_back(std::move(call));
  }

  // Recomputation: the outputs kept for this call of `name`, as fresh
  // aliases without autograd metadata (variable_data(); a DTensor stays one),
  // to which the recomputation's autograd kernel attaches its node: detach()
  // would make a view with metadata, which autograd refuses as an output.
  std::vector<c10::IValue> replay(const std::string& name, const std::string& arguments) {
    std::deque<KeptOutputs::Call>& queue = kept->by_op[name];
    TORCH_CHECK(!queue.empty() && queue.front().arguments == arguments, "selective checkpoint: the recomputation's ",
                name, " call ", calls.at(name) - 1, " (", arguments, ") ",
                queue.empty() ? std::string("was not in the forward")
                              : "differs from the forward's (" + queue.front().arguments + ")",
                "; the checkpointed function must dispatch the same operators and collectives in both runs (no "
                "branch on grad mode or on data), or use checkpoint() without a policy");
    std::vector<c10::IValue> outputs;
    for (const c10::IValue& v : queue.front().outputs) {
      outputs.push_back(v.isTensor() && v.toTensor().defined() ? c10::IValue(v.toTensor().variable_data()) : v);
    }
    queue.pop_front();
    return outputs;
  }

  // A collective the function issues: seen whole, as PyTorch's mode sees a
  // functional collective, so its own ops (copies, cat) run below the key.
  at::Tensor result(const char* name, const at::Tensor& input, const std::function<at::Tensor()>& run) override {
    c10::impl::ForceDispatchKeyGuard below(outside());
    if (!keeps(name)) return run();
    std::string arguments = describe_arguments({c10::IValue(input)}, 1);
    if (recomputing) return replay(name, arguments).front().toTensor();
    at::Tensor out = run();
    keep(name, std::move(arguments), {c10::IValue(out)});
    return out;
  }
};
thread_local SelectiveRun* t_selective = nullptr;

// For its lifetime the calling thread runs `run`: kSelectiveKey included.
class SelectiveScope {
 public:
  explicit SelectiveScope(SelectiveRun& run)
      : previous_(t_selective), keys_(with_selective_key(run)), keeper_(collectives::set_thread_result_keeper(&run)) {
    t_selective = &run;
  }
  ~SelectiveScope() {
    collectives::set_thread_result_keeper(keeper_);
    t_selective = previous_;
  }
  SelectiveScope(const SelectiveScope&) = delete;
  SelectiveScope& operator=(const SelectiveScope&) = delete;

 private:
  static c10::impl::LocalDispatchKeySet with_selective_key(SelectiveRun& run) {
    c10::impl::LocalDispatchKeySet inside = c10::impl::tls_local_dispatch_key_set();
    const uint64_t before = inside.included_.raw_repr();
    inside.included_ = inside.included_ | c10::DispatchKeySet(kSelectiveKey);
    run.added_bits = inside.included_.raw_repr() & ~before;
    return inside;
  }
  SelectiveRun* previous_;
  c10::impl::ForceDispatchKeyGuard keys_;
  collectives::ResultKeeper* keeper_;
};

// Only functional operators returning tensors: a kept output must not alias
// an input or stand for a write.
bool keepable(const c10::FunctionSchema& schema) {
  if (schema.is_mutable() || schema.returns().empty()) return false;
  for (const c10::Argument& r : schema.returns()) {
    if (r.alias_info() != nullptr || r.type()->kind() != c10::TypeKind::TensorType) return false;
  }
  return true;
}

std::string describe_arguments(const torch::jit::Stack& stack, size_t count) {
  std::ostringstream out;
  for (size_t i = stack.size() - count; i < stack.size(); ++i) {
    const c10::IValue& v = stack[i];
    if (i > stack.size() - count) out << ", ";
    if (v.isTensor() && v.toTensor().defined()) {
      out << v.toTensor().sizes() << " " << v.toTensor().scalar_type();
    } else if (v.isTensor()) {
      out << "undefined";
    } else {
      out << v.tagKind();
    }
  }
  return out.str();
}

void selective_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  SelectiveRun* run = t_selective;
  const c10::DispatchKeySet below = keys.remove_backend(kSelectiveBackend);
  if (run == nullptr) return op.redispatchBoxed(below, stack);  // the key outlived its scope
  const auto run_below = [&] {
    c10::impl::ForceDispatchKeyGuard outside(run->outside());
    collectives::NoResultKeeper inside_the_operator;  // a DTensor op's own collectives
    op.redispatchBoxed(below, stack);
  };
  const c10::FunctionSchema& schema = op.schema();
  if (!keepable(schema)) return run_below();
  const std::string name = full_op_name(op.operator_name());
  if (!run->keeps(name)) return run_below();
  const size_t n_args = schema.arguments().size();
  const size_t n_returns = schema.returns().size();
  std::string arguments = describe_arguments(*stack, n_args);
  c10::impl::ForceDispatchKeyGuard outside(run->outside());
  collectives::NoResultKeeper inside_the_operator;
  if (!run->recomputing) {
    op.redispatchBoxed(below, stack);
    run->keep(name, std::move(arguments), c10::ArrayRef<c10::IValue>(*stack).slice(stack->size() - n_returns));
    return;
  }
  std::vector<c10::IValue> outputs = run->replay(name, arguments);
  torch::jit::drop(*stack, n_args);
  for (c10::IValue& v : outputs) stack->push_back(std::move(v));
}

// Once, on the first selective checkpoint: the kernels of kSelectiveKey.
void register_selective_kernels() {
  static std::once_flag once;
  static std::unique_ptr<torch::Library> kernels, fallback;
  std::call_once(once, [] {
    kernels = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", kSelectiveKey, __FILE__, __LINE__);
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
      if (name.name.rfind("aten::", 0) != 0) continue;
      auto handle = dispatcher.findOp(name);
      if (!handle) continue;
      const std::string full = full_op_name(name);
      if (!handle->hasKernelForDispatchKey(kSelectiveKey) &&
          !handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) {
        kernels->impl(full.c_str(), torch::CppFunction::makeFromBoxedFunction<&selective_kernel>());
      }
    }
    fallback = std::make_unique<torch::Library>(torch::Library::IMPL, "_", kSelectiveKey, __FILE__, __LINE__);
    fallback->fallback(torch::CppFunction::makeFromBoxedFunction<&selective_kernel>());
  });
}

}  // namespace

at::Tensor checkpoint(const std::function<at::Tensor(const TensorList&)>& fn, const TensorList& inputs) {
  if (!at::GradMode::is_enabled()) return fn(inputs);
  return checkpoint_with(fn, fn, inputs);
}

at::Tensor checkpoint(const std::function<at::Tensor(const TensorList&)>& fn, const TensorList& inputs,
                      const SavePolicy& save) {
  if (!at::GradMode::is_enabled()) return fn(inputs);
  TORCH_CHECK(save, "checkpoint: the save policy is empty; pass torchtitan_op_policy() or a function, or call "
              "checkpoint(fn, inputs) for full recomputation");
  register_selective_kernels();
  auto kept = std::make_shared<KeptOutputs>();
  const auto forward = [&fn, &save, &kept](const TensorList& in) {
    SelectiveRun run(save, kept, /*recomputing=*/false);
    SelectiveScope scope(run);
    return fn(in);
  };
  auto recompute = [fn, save, kept](const TensorList& in) {
    SelectiveRun run(save, kept, /*recomputing=*/true);
    at::Tensor out;
    {
      SelectiveScope scope(run);
      out = fn(in);
    }
    for (auto& [name, calls] : kept->by_op) {
      TORCH_CHECK(calls.empty(), "selective checkpoint: the recomputation ran ", calls.size(), " fewer ", name,
                  " calls than the forward; the checkpointed function must dispatch the same operators in "
                  "both runs, or use checkpoint() without a policy");
    }
    kept->by_op.clear();
    return out;
  };
  return checkpoint_with(forward, std::move(recompute), inputs);
}

SavePolicy torchtitan_op_policy() {
  return [](const std::string& op, int64_t index) {
    if (op == "aten::mm") return index % 2 == 0;  // torchtitan recomputes every second mm
    return op == "aten::_scaled_dot_product_efficient_attention" ||
           op == "aten::_scaled_dot_product_flash_attention" ||
           op == "aten::_scaled_dot_product_cudnn_attention" || op == "aten::_scaled_dot_product_attention_math" ||
           op == "aten::_scaled_dot_product_fused_attention_overrideable" || op == "aten::max" ||
           op == "_c10d_functional::reduce_scatter_tensor";
  };
}

}  // namespace dtensor::nn
