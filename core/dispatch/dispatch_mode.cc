// Thread-local dispatcher switches: implicit replication and the skip-dispatch
// allowlist, with the local-only op runner the DTensor kernel uses inside a
// SkipDispatchGuard.
#include "core/dispatch/dispatch_mode.h"

#include <c10/util/Exception.h>

#include <algorithm>

#include "core/dispatch/op_name.h"
#include "core/dtensor_impl.h"

namespace dtensor {

struct SkipDispatchGuard::State {
  std::vector<std::string> still_dispatched;
  State* previous = nullptr;
};

struct RuleModeGuard::State {
  uint32_t bits = 0;
  std::vector<std::string> replicate_plain_in;
  State* previous = nullptr;
};

namespace {

thread_local bool t_implicit_replication = false;
thread_local RuleModeGuard::State* t_rule_modes = nullptr;
thread_local SkipDispatchGuard::State* t_state = nullptr;

bool listed(const std::vector<std::string>& names, const std::string& op) {
  const std::string base = op.substr(0, op.find('.'));
  return std::find(names.begin(), names.end(), op) != names.end() ||
         std::find(names.begin(), names.end(), base) != names.end();
}

at::Tensor local_of(const at::Tensor& t) {
  DTensorImpl* impl = t.defined() ? dtensor_impl(t) : nullptr;
  return impl ? impl->local() : t;
}

c10::IValue unwrap(const c10::IValue& v) {
  if (v.isTensor()) return local_of(v.toTensor());
  if (v.isTensorList()) {
    std::vector<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorVector()) out.push_back(local_of(t));
    return c10::IValue(out);
  }
  if (v.isList()) {
    auto list = v.toList();
    if (list.elementType()->kind() == c10::OptionalType::Kind) {
      c10::List<c10::optional<at::Tensor>> out;
      for (const c10::IValue& e : list) {
        out.push_back(e.isTensor() ? c10::optional<at::Tensor>(local_of(e.toTensor())) : c10::nullopt);
      }
      return c10::IValue(out);
    }
  }
  return v;
}

}  // namespace

ImplicitReplicationGuard::ImplicitReplicationGuard() : previous_(t_implicit_replication) {
  t_implicit_replication = true;
}
ImplicitReplicationGuard::~ImplicitReplicationGuard() { t_implicit_replication = previous_; }
bool ImplicitReplicationGuard::active() { return t_implicit_replication; }

RuleModeGuard::RuleModeGuard(RuleMode mode, std::vector<std::string> replicate_plain_in)
    : previous_(t_rule_modes) {
  const uint32_t outer = previous_ != nullptr ? previous_->bits : 0u;
  t_rule_modes = new State{outer | static_cast<uint32_t>(mode), std::move(replicate_plain_in), previous_};
}

RuleModeGuard::~RuleModeGuard() {
  delete t_rule_modes;
  t_rule_modes = previous_;
}

bool RuleModeGuard::active(RuleMode mode) { return (bits() & static_cast<uint32_t>(mode)) != 0; }

uint32_t RuleModeGuard::bits() { return t_rule_modes != nullptr ? t_rule_modes->bits : 0u; }

namespace {
thread_local ContextParallelAttention t_context_parallel_attention = nullptr;
}  // namespace

ContextParallelAttentionScope::ContextParallelAttentionScope(ContextParallelAttention attention)
    : previous_(t_context_parallel_attention) {
  t_context_parallel_attention = attention;
}

ContextParallelAttentionScope::~ContextParallelAttentionScope() { t_context_parallel_attention = previous_; }

ContextParallelAttention ContextParallelAttentionScope::current() { return t_context_parallel_attention; }

const std::vector<std::string>& default_still_dispatched() {
  static const auto* names = new std::vector<std::string>{
      "aten::_local_scalar_dense", "aten::equal",     "aten::allclose",  "aten::is_nonzero",
      "aten::zeros_like",          "aten::ones_like", "aten::empty_like", "aten::full_like",
      "aten::rand_like",           "aten::randn_like", "aten::detach",   "aten::alias",
  };
  return *names;
}

SkipDispatchGuard::SkipDispatchGuard(std::vector<std::string> still_dispatched) : previous_(t_state) {
  t_state = new State{std::move(still_dispatched), previous_};
}

SkipDispatchGuard::~SkipDispatchGuard() {
  delete t_state;
  t_state = previous_;
}

bool SkipDispatchGuard::active() { return t_state != nullptr; }

namespace detail {

bool plain_tensors_replicated_in(std::string_view op) {
  for (const RuleModeGuard::State* s = t_rule_modes; s != nullptr; s = s->previous) {
    if (!s->replicate_plain_in.empty() && listed(s->replicate_plain_in, std::string(op))) return true;
  }
  return false;
}

bool skip_dispatch_for(const std::string& op) { return t_state != nullptr && !listed(t_state->still_dispatched, op); }

void run_on_local_tensors(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  std::vector<c10::IValue> args(stack->end() - static_cast<std::ptrdiff_t>(num_args), stack->end());
  stack->erase(stack->end() - static_cast<std::ptrdiff_t>(num_args), stack->end());
  std::vector<c10::IValue> local_stack;
  for (const c10::IValue& v : args) local_stack.push_back(unwrap(v));
  op.callBoxed(&local_stack);
  const auto& returns = schema.returns();
  for (size_t r = 0; r < local_stack.size(); ++r) {
    const c10::AliasInfo* alias = r < returns.size() ? returns[r].alias_info() : nullptr;
    if (alias == nullptr || !alias->isWrite()) {
      stack->push_back(std::move(local_stack[r]));
      continue;
    }
    // In-place / out=: hand back the argument that was written (a DTensor
    // keeps its spec, so its local shape must not change).
    bool found = false;
    for (size_t a = 0; a < num_args && !found; ++a) {
      const c10::AliasInfo* in = schema.arguments()[a].alias_info();
      if (in == nullptr || !in->isWrite() || in->beforeSets() != alias->beforeSets()) continue;
      found = true;
      if (args[a].isTensor()) {
        const at::Tensor& written = args[a].toTensor();
        if (DTensorImpl* impl = written.defined() ? dtensor_impl(written) : nullptr) {
          TORCH_CHECK(impl->local().sizes().vec() == impl->spec().local_shape(), full_op_name(op.operator_name()),
                      " inside SkipDispatchGuard changed the local shape of a DTensor written in place to ",
                      impl->local().sizes(), " (its spec expects ", c10::IntArrayRef(impl->spec().local_shape()),
                      "); run it outside the guard");
        }
      }
      stack->push_back(args[a]);
    }
    if (!found) stack->push_back(std::move(local_stack[r]));
  }
}

}  // namespace detail
}  // namespace dtensor
