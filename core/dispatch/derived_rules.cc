#include "core/dispatch/derived_rules.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "core/dispatch/foreach_rules.h"
#include "core/dispatch/op_name.h"

namespace dtensor {
namespace {

// Overload names of every operator, by base name ("aten::add" -> "Tensor",
// "Scalar", "out", ...), read once from the dispatcher.
const std::map<std::string, std::vector<std::string>>& overloads_by_name() {
  static const auto* table = [] {
    auto* t = new std::map<std::string, std::vector<std::string>>();
    for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
      (*t)[name.name].push_back(name.overload_name);
    }
    return t;
  }();
  return *table;
}

using detail::interned_op_name;
using detail::writes_argument;

// Same argument names and types, in order (alias annotations ignored).
bool same_arguments(const std::vector<const c10::Argument*>& a, const std::vector<c10::Argument>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i]->name() != b[i].name() || a[i]->type()->str() != b[i].type()->str()) return false;
  }
  return true;
}

// The overload of `base` whose arguments are `args`, or nullopt. It writes
// none of them when `writes_as_args` is false (the functional form of an
// in-place op), else exactly those `args` writes (the functional form of an
// out= op that also writes state in place: _native_batch_norm_legit's
// running statistics).
std::optional<std::string> overload_with(const std::string& base, const std::vector<const c10::Argument*>& args,
                                         bool writes_as_args) {
  auto it = overloads_by_name().find(base);
  if (it == overloads_by_name().end()) return std::nullopt;
  for (const std::string& overload : it->second) {
    auto handle = c10::Dispatcher::singleton().findOp({base, overload});
    if (!handle || !handle->hasSchema()) continue;
    const std::vector<c10::Argument>& candidate = handle->schema().arguments();
    if (!same_arguments(args, candidate)) continue;
    bool writes_alike = true;
    for (size_t i = 0; i < candidate.size(); ++i) {
      writes_alike = writes_alike && writes_argument(candidate[i]) == (writes_as_args && writes_argument(*args[i]));
    }
    if (writes_alike) return full_op_name({base, overload});
  }
  return std::nullopt;
}

// The kwarg-only written arguments of an out= overload, one per return and
// in the returns' order (`out`; var_mean's `out0`, `out1`); empty for
// anything else (more outs than returns). A written positional argument is
// state the functional form writes too (batch norm's running statistics),
// not an out.
std::vector<int64_t> out_arguments(const c10::FunctionSchema& schema) {
  std::vector<int64_t> outs;
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const c10::Argument& a = schema.arguments()[i];
    if (!writes_argument(a) || !a.kwarg_only()) continue;
    outs.push_back(static_cast<int64_t>(i));
  }
  if (outs.size() != schema.returns().size()) return {};
  return outs;
}

// True for an out= overload: some kwarg-only argument is written (`out`,
// or several: max.dim_max's `max` and `max_values`).
bool writes_kwarg_only(const c10::FunctionSchema& schema) {
  for (const c10::Argument& a : schema.arguments()) {
    if (a.kwarg_only() && writes_argument(a)) return true;
  }
  return false;
}

bool is_in_place(const c10::FunctionSchema& schema) {
  const std::string& name = schema.name();
  return name.size() > 1 && name.back() == '_' && name.rfind("aten::__", 0) != 0 && !schema.arguments().empty() &&
         writes_argument(schema.arguments()[0]);
}

// Note [Out tensors laid out unlike the inputs]
// A functional rule offers the strategies its inputs' layouts suggest; when
// none gives the out tensor's placements (clone.out of a Shard(0) input into
// a Shard(1) out: clone only follows its input), PyTorch 2.15 still runs it,
// its placeholders filled from out's shards too, and moves the inputs
// (all_to_all here). So the derived rule asks the functional rule again as
// if the inputs were laid out otherwise: first every input of out's rank
// like out; then all but the first so (gather.out: the index like out, self
// whole); then the first input in each layout of Shard and Replicate
// placements (max.dim_max over dim 0 into a Shard(0) out wants the input
// Shard(1)). A plan found so is valid whatever the inputs hold, and the
// dispatcher redistributes them to it.
std::optional<ShardingPlan> plan_as_if_laid_out_like_out(const ShardingRule& rule, const OpCall& f) {
  auto attempt = [&](const OpCall& presumed) -> std::optional<ShardingPlan> {
    try {
      ShardingPlan plan = rule(presumed);
      if (!plan.output_placements.empty() && plan.output_placements[0] == *f.out_placements) return plan;
    } catch (const c10::Error&) {
    }
    return std::nullopt;
  };
  OpCall presumed = f;
  bool changed = false;
  for (DTensorSpec& in : presumed.inputs) {
    if (in.meta.shape.size() == f.outputs.at(0).shape.size() && in.placements != *f.out_placements) {
      in.placements = *f.out_placements;
      changed = true;
    }
  }
  if (changed) {
    if (auto plan = attempt(presumed)) return plan;
  }
  if (f.inputs.empty()) return std::nullopt;
  // The others like out, the first as it is (gather.out: the index follows
  // out, self stays whole).
  presumed.inputs[0].placements = f.inputs[0].placements;
  if (changed && presumed.inputs[0].placements != *f.out_placements) {
    if (auto plan = attempt(presumed)) return plan;
  }
  // Every layout of the first input over Shard(d) and Replicate, mesh dim by
  // mesh dim (at most (ndim + 1)^mesh_ndim rule calls, once per cache miss).
  const int64_t ndim = static_cast<int64_t>(f.inputs[0].meta.shape.size());
  const size_t dims = f.inputs[0].placements.size();
  size_t layouts = 1;
  for (size_t d = 0; d < dims; ++d) layouts *= static_cast<size_t>(ndim + 1);
  for (size_t code = 0; code < layouts; ++code) {
    presumed = f;
    size_t rest = code;
    for (size_t d = 0; d < dims; ++d) {
      const int64_t choice = static_cast<int64_t>(rest % static_cast<size_t>(ndim + 1));
      rest /= static_cast<size_t>(ndim + 1);
      presumed.inputs[0].placements[d] = choice == ndim ? Placement(Replicate()) : Placement(Shard(choice));
    }
    if (presumed.inputs[0].placements == f.inputs[0].placements) continue;
    if (auto plan = attempt(presumed)) return plan;
  }
  return std::nullopt;
}

}  // namespace

namespace detail {

bool writes_argument(const c10::Argument& a) { return a.alias_info() != nullptr && a.alias_info()->isWrite(); }

std::string_view interned_op_name(const std::string& name) {
  static std::mutex mutex;
  static auto* names = new std::map<std::string, std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  return names->emplace(name, name).first->second;
}

}  // namespace detail

std::optional<std::string> functional_overload(const c10::OperatorHandle& op) {
  if (!op.hasSchema()) return std::nullopt;
  const c10::FunctionSchema& schema = op.schema();
  std::vector<const c10::Argument*> args;
  if (is_in_place(schema)) {
    for (const c10::Argument& a : schema.arguments()) args.push_back(&a);
    return overload_with(schema.name().substr(0, schema.name().size() - 1), args, /*writes_as_args=*/false);
  }
  const std::vector<int64_t> outs = out_arguments(schema);
  if (outs.empty()) return std::nullopt;
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    if (std::find(outs.begin(), outs.end(), static_cast<int64_t>(i)) == outs.end()) {
      args.push_back(&schema.arguments()[i]);
    }
  }
  return overload_with(schema.name(), args, /*writes_as_args=*/true);
}

std::optional<ShardingRule> derive_rule(const c10::OperatorHandle& op, const ShardingRegistry& registry) {
  const std::optional<std::string> functional = functional_overload(op);
  if (!functional) return std::nullopt;
  std::optional<ShardingRule> rule = registry.find(*functional);
  if (!rule) return std::nullopt;
  const c10::OperatorHandle functional_op = *c10::Dispatcher::singleton().findOp(parse_op_name(*functional));
  const std::vector<int64_t> out_args = out_arguments(op.schema());
  const std::string_view name = interned_op_name(*functional);
  return ShardingRule([rule = *rule, functional_op, out_args, name](const OpCall& call) {
    OpCall f = call;
    f.op = &functional_op;
    f.name = name;
    // The out tensors' indices among the inputs, in the returns' order.
    std::vector<size_t> outs;
    for (int64_t out_arg : out_args) {
      for (size_t i = 0; i < call.inputs.size(); ++i) {
        if (static_cast<int64_t>(call.positions[i].arg_index) == out_arg) outs.push_back(i);
      }
    }
    TORCH_CHECK(outs.size() == out_args.size() && (outs.empty() || call.outputs.size() == outs.size()),
                call.describe(), ": every out tensor must be a DTensor");
    if (!outs.empty()) {
      for (size_t k = outs.size(); k-- > 0;) {
        f.inputs.erase(f.inputs.begin() + static_cast<std::ptrdiff_t>(outs[k]));
        f.positions.erase(f.positions.begin() + static_cast<std::ptrdiff_t>(outs[k]));
      }
      f.self_input = -1;
      // Strategies are filtered on output 0; the others are checked below.
      f.out_placements = &call.inputs[outs[0]].placements;
    }
    ShardingPlan plan;
    try {
      plan = rule(f);
    } catch (const c10::Error& e) {
      std::optional<ShardingPlan> moved = outs.empty() ? std::nullopt : plan_as_if_laid_out_like_out(rule, f);
      // The functional rule's message names the functional op; say which was called.
      TORCH_CHECK(moved, call.name, " (sharded by the rule of ", name, "): ", e.what_without_backtrace());
      plan = *std::move(moved);
    }
    TORCH_CHECK(plan.local_kernel.empty(), call.describe(), ": the rule of ", name,
                " runs a local kernel written for its own arguments, so ", call.name,
                " has no derived rule; call ", name, " and copy the result");
    if (!outs.empty()) {
      for (size_t k = 0; k < outs.size(); ++k) {
        const Placements& want = call.inputs[outs[k]].placements;
        TORCH_CHECK(plan.output_placements[k] == want, call.describe(), ": result ", k, " of ", name,
                    " would be ", to_string(plan.output_placements[k]), ", not its out tensor's ",
                    to_string(want), "; redistribute that out tensor to ", to_string(plan.output_placements[k]),
                    " or call ", name);
      }
      for (size_t out : outs) {
        plan.input_placements.insert(plan.input_placements.begin() + static_cast<std::ptrdiff_t>(out),
                                     call.inputs[out].placements);
      }
    } else if (call.self_input >= 0) {
      const DTensorSpec& self_spec = call.inputs[static_cast<size_t>(call.self_input)];
      // squeeze_ and the like change self's shape: the functional rule does
      // not say how the written tensor's spec follows (Note [Derived rules:
      // out= and in-place overloads]).
      TORCH_CHECK(!call.outputs.empty() && call.outputs[0].shape == self_spec.meta.shape, call.describe(),
                  ": ", call.name, " changes the shape of the tensor it writes, which no derived rule "
                  "handles; call ", name, " instead");
      const Placements& self = self_spec.placements;
      TORCH_CHECK(plan.self_placements_change ||
                      (plan.input_placements[static_cast<size_t>(call.self_input)] == self &&
                       plan.output_placements[0] == self),
                  call.describe(), ": the strategy of ", name, " changes the placements ", to_string(self),
                  " of the tensor written in place; redistribute it first or call ", name);
    }
    return plan;
  });
}

std::optional<ShardingRule> find_rule(const c10::OperatorHandle& op, const std::string& full_name,
                                      const ShardingRegistry& registry) {
  if (auto exact = registry.find_exact(full_name)) return exact;
  // A base-name rule ("aten::native_layer_norm") is written for the
  // functional arguments: an out= overload, whose `out` tensors would be
  // taken for inputs, only ever gets a derived rule.
  if (op.hasSchema() && writes_kwarg_only(op.schema())) return derive_rule(op, registry);
  if (auto by_base = registry.find(full_name)) return by_base;
  if (auto derived = derive_rule(op, registry)) return derived;
  return derive_foreach_rule(op, registry);
}

}  // namespace dtensor
