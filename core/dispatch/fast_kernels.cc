#include "core/dispatch/fast_kernels.h"

#include <ATen/Operators.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/dispatch/dispatch_mode.h"
#include "core/dispatch/op_dispatcher.h"
#include "core/dispatch/op_observer.h"
#include "core/dispatch/sharding_propagator.h"
#include "core/dtensor_impl.h"
#include "core/log.h"

namespace dtensor::detail {
namespace {

// Note [Unboxed fast path]
// The DTensor kernel is boxed: LibTorch packs every argument into a stack of
// IValues for it, and it packs the local call's arguments again for
// callBoxed, which unpacks them for the CPU kernel. For a cached op on small
// tensors that packing is a third of what DTensor adds (callgrind of add_:
// 2,361 instructions over the plain op, issue #38). The operators below get
// an unboxed kernel instead. A call whose tensor arguments are all DTensors
// on one mesh object, outside a module boundary, with no log, observer or
// SkipDispatchGuard, is looked up by identity (Note [Identity fast path])
// with the argument key the boxed kernel would build; when that decision
// exists and keeps every input where it is, with no local kernel, no new
// placements for a written input and no local argument that differs from
// the global one, the op runs on the local tensors through its unboxed
// entry point and the output is wrapped in the decision's shared spec. Any
// other call boxes its arguments and takes the DTensor kernel, unchanged.
// A local op that throws is run again the boxed way, which throws the error
// that names the op and its operands (the ops listed fail in their checks,
// before writing anything).

constexpr size_t kMaxArgs = 8;

// What the fast path learns from the arguments. Per thread, reused.
struct FastCall {
  std::vector<int64_t> key;  // as the boxed kernel builds it: Note [Sharding cache key]
  std::vector<const std::shared_ptr<const DTensorSpec>*> spec_refs;
  std::array<DTensorImpl*, kMaxArgs> impl_at{};  // the DTensor at each argument position, or null
  const DeviceMesh* mesh = nullptr;
  bool ok = true;

  void reset() {
    key.clear();
    spec_refs.clear();
    impl_at.fill(nullptr);
    mesh = nullptr;
    ok = true;
  }

  void add(const at::Tensor& t, size_t pos) {
    DTensorImpl* impl = t.defined() ? dtensor_impl(t) : nullptr;
    // Plain tensors and parameters of parallelized modules need the boxed
    // kernel's checks (Note [Skipped boundaries]).
    if (impl == nullptr || impl->boundary() != nullptr) {
      ok = false;
      return;
    }
    const DeviceMesh& m = impl->spec().mesh;
    if (mesh == nullptr) {
      mesh = &m;
    } else if (!m.same_object(*mesh)) {
      ok = false;
      return;
    }
    key.push_back(kKeyTensor);
    spec_refs.push_back(&impl->shared_spec());
    impl_at[pos] = impl;
  }
  void add(c10::IntArrayRef list, size_t /*pos*/) {
    key.push_back(kKeyIntList);  // as append_arg_key encodes an int list
    key.insert(key.end(), list.begin(), list.end());
    key.push_back(-kKeyIntList);
  }
  void add(c10::SymIntArrayRef list, size_t pos) {
    if (auto ints = c10::asIntArrayRefSlowOpt(list)) {
      add(*ints, pos);
    } else {
      ok = false;  // symbolic sizes: the boxed kernel
    }
  }
  void add(const at::Scalar& s, size_t /*pos*/) { append_arg_key(c10::IValue(s), &key); }
  void add(int64_t v, size_t /*pos*/) { append_arg_key(c10::IValue(v), &key); }
  void add(bool v, size_t /*pos*/) { append_arg_key(c10::IValue(v), &key); }
  void add(double v, size_t /*pos*/) { append_arg_key(c10::IValue(v), &key); }
  template <class T>
  void add(const T& /*other kinds: optional, generator, ...*/, size_t /*pos*/) {
    ok = false;  // the boxed kernel keys them
  }
};

FastCall& fast_call() {
  thread_local FastCall call;
  return call;
}

// Whether the plan's local value of an argument is the argument itself (a
// view of a tensor whose viewed dims are whole keeps its size).
bool same_value(c10::IntArrayRef arg, const c10::IValue& v) {
  if (!v.isIntList()) return false;
  const auto& list = v.toListRef();
  if (list.size() != arg.size()) return false;
  for (size_t i = 0; i < arg.size(); ++i) {
    if (list[i].toInt() != arg[i]) return false;
  }
  return true;
}
bool same_value(c10::SymIntArrayRef arg, const c10::IValue& v) {
  auto ints = c10::asIntArrayRefSlowOpt(arg);
  return ints.has_value() && same_value(*ints, v);
}
template <class T>
bool same_value(const T& /*arg*/, const c10::IValue& /*v*/) {
  return false;
}

template <class Op, class Sig = typename Op::schema>
struct Fast;

template <class Op, class Ret, class... Args>
struct Fast<Op, Ret(Args...)> {
  static_assert(sizeof...(Args) <= kMaxArgs);
  static_assert(std::is_same_v<Ret, at::Tensor> || std::is_same_v<Ret, at::Tensor&>,
                "the fast path wraps one tensor output, or returns the written argument");

  static const c10::OperatorHandle& handle() {
    static const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
    return op;
  }

  // The first non-const tensor argument: what an in-place op returns.
  template <class First, class... Rest>
  static at::Tensor& written(First&& first, Rest&&... rest) {
    if constexpr (std::is_same_v<First, at::Tensor&>) {
      return first;
    } else {
      return written(std::forward<Rest>(rest)...);
    }
  }

  // The DTensor kernel, with the arguments boxed as LibTorch would box them.
  static Ret boxed(Args... args) {
    torch::jit::Stack stack;
    stack.reserve(sizeof...(Args));
    (stack.emplace_back(args), ...);
    dtensor_kernel(handle(), &stack);
    if constexpr (std::is_same_v<Ret, at::Tensor&>) {
      return written(args...);
    } else {
      TORCH_INTERNAL_ASSERT(stack.size() == 1, Op::name, ": expected one result");
      return std::move(stack.back()).toTensor();
    }
  }

  template <class T>
  static decltype(auto) local_arg(at::Tensor& local, T&& arg) {
    if constexpr (std::is_same_v<std::decay_t<T>, at::Tensor>) {
      return (local);
    } else {
      return std::forward<T>(arg);
    }
  }

  template <size_t... I>
  static decltype(auto) run_local(std::index_sequence<I...> /*unused*/, std::array<at::Tensor, kMaxArgs>& locals,
                                  Args... args) {
    return Op::call(local_arg(locals[I], args)...);
  }

  template <size_t... I>
  static bool overrides_are_args(std::index_sequence<I...> /*unused*/, const ShardingPlan& plan, Args... args) {
    for (const auto& [index, value] : plan.local_arg_overrides) {
      bool same = false;
      ((I == index ? (same = same_value(args, value)) : false), ...);
      if (!same) return false;
    }
    return true;
  }

  static Ret call(Args... args) {
    if (SkipDispatchGuard::active() || log_enabled(LogLevel::kInfo) || has_op_observers()) return boxed(args...);
    FastCall& f = fast_call();
    f.reset();
    size_t pos = 0;
    (f.add(args, pos++), ...);
    if (!f.ok || f.mesh == nullptr) return boxed(args...);
    const std::shared_ptr<const PropagationResult>* found =
        propagate_by_identity(handle(), f.key, f.spec_refs, /*count_hit=*/false);
    if (found == nullptr) return boxed(args...);
    const PropagationResult& result = **found;
    const ShardingPlan& plan = result.plan;
    if (result.local_kernel || plan.self_placements_change) return boxed(args...);
    for (size_t i = 0; i < f.spec_refs.size(); ++i) {
      if (plan.input_placements[i] != (*f.spec_refs[i])->placements) return boxed(args...);
    }
    if (!overrides_are_args(std::index_sequence_for<Args...>{}, plan, args...)) return boxed(args...);
    count_unboxed_hit();
    const DeviceMesh* mesh = f.mesh;
    std::array<at::Tensor, kMaxArgs> locals;
    for (size_t i = 0; i < sizeof...(Args); ++i) {
      if (f.impl_at[i] != nullptr) locals[i] = f.impl_at[i]->local();
    }
    if constexpr (std::is_same_v<Ret, at::Tensor&>) {
      try {
        run_local(std::index_sequence_for<Args...>{}, locals, args...);
      } catch (const c10::Error&) {
        return boxed(args...);  // throws the error that names the op (Note [Unboxed fast path])
      }
      return written(args...);
    } else {
      at::Tensor out;
      try {
        out = run_local(std::index_sequence_for<Args...>{}, locals, args...);
      } catch (const c10::Error&) {
        return boxed(args...);
      }
      return wrap_local_output(out, *mesh, result, 0);
    }
  }
};

template <class Op>
torch::CppFunction make() {
  return torch::CppFunction::makeFromUnboxedFunction(
      c10::CompileTimeFunctionPointer<typename Op::schema, &Fast<Op>::call>());
}

}  // namespace

// The ops of a training step's and PyTorch's host-overhead benchmark's
// hottest calls (issue #38): views, detach, elementwise arithmetic, matmul.
std::optional<torch::CppFunction> fast_kernel(std::string_view full_name) {
  using Maker = torch::CppFunction (*)();
  static const std::array<std::pair<std::string_view, Maker>, 10> kFast = {{
      {"aten::detach", &make<at::_ops::detach>},
      {"aten::view", &make<at::_ops::view>},
      {"aten::t", &make<at::_ops::t>},
      {"aten::add.Tensor", &make<at::_ops::add_Tensor>},
      {"aten::add_.Tensor", &make<at::_ops::add__Tensor>},
      {"aten::sub.Tensor", &make<at::_ops::sub_Tensor>},
      {"aten::mul.Tensor", &make<at::_ops::mul_Tensor>},
      {"aten::mul_.Tensor", &make<at::_ops::mul__Tensor>},
      {"aten::mm", &make<at::_ops::mm>},
      {"aten::addmm", &make<at::_ops::addmm>},
  }};
  for (const auto& [name, maker] : kFast) {
    if (name == full_name) return maker();
  }
  return std::nullopt;
}

}  // namespace dtensor::detail
