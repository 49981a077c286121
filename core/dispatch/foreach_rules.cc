#include "core/dispatch/foreach_rules.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "core/collectives.h"
#include "core/dispatch/derived_rules.h"
#include "core/dispatch/op_name.h"
#include "core/dispatch/strided_inputs.h"

namespace dtensor {
namespace {

constexpr const char* kForeach = "aten::_foreach_";
constexpr const char* kForeachByElement = "dtensor::foreach_by_element";


// The type of one element of a list argument, or the argument's own type.
std::string element_type(const c10::Argument& a) {
  if (auto list = a.type()->cast<c10::ListType>()) return list->getElementType()->str();
  return a.type()->str();
}

bool is_list(const c10::Argument& a) { return a.type()->kind() == c10::TypeKind::ListType; }

// "aten::_foreach_add_" -> "aten::add"; "" for other names.
std::string per_tensor_name(const std::string& foreach_name) {
  if (foreach_name.rfind(kForeach, 0) != 0) return "";
  std::string name = "aten::" + foreach_name.substr(std::string(kForeach).size());
  if (!name.empty() && name.back() == '_') name.pop_back();
  return name;
}

// How element e's call is made from a _foreach_* call: the per-tensor
// overload, and for each of its arguments the foreach argument it takes
// (element e of a list; -1: the argument's default).
struct ElementMapping {
  std::string overload;
  std::vector<int64_t> from;
  // Per foreach argument: a Tensor holding one scalar per element
  // (`_foreach_addcdiv_.Tensor`'s `scalars`), given to the element op as a
  // Scalar argument. It must be Replicate; the rule sees a placeholder value.
  std::vector<bool> scalars_tensor;
};

// Foreach ops whose per-tensor op takes its arguments in another order.
// _foreach_norm.Scalar(self, ord, dtype) ->
// linalg_vector_norm(self, ord, dim=None, keepdim=False, *, dtype).
const std::map<std::string, ElementMapping>& irregular_mappings() {
  static const auto* table = new std::map<std::string, ElementMapping>{
      {"aten::_foreach_norm.Scalar", {"aten::linalg_vector_norm", {0, 1, -1, -1, 2}, {}}},
  };
  return *table;
}

std::optional<ElementMapping> find_element_mapping(const c10::OperatorHandle& op) {
  if (!op.hasSchema()) return std::nullopt;
  const c10::FunctionSchema& schema = op.schema();
  const std::string base = per_tensor_name(schema.name());
  if (base.empty()) return std::nullopt;
  const auto& ours = schema.arguments();
  auto irregular = irregular_mappings().find(full_op_name(op.operator_name()));
  if (irregular != irregular_mappings().end()) {
    ElementMapping m = irregular->second;
    m.scalars_tensor.assign(ours.size(), false);
    for (int64_t& a : m.from) {
      if (a >= static_cast<int64_t>(ours.size())) a = -1;  // an argument this LibTorch's overload lacks
    }
    if (!c10::Dispatcher::singleton().findOp(parse_op_name(m.overload))) return std::nullopt;
    return m;
  }
  for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name != base) continue;
    auto handle = c10::Dispatcher::singleton().findOp(name);
    if (!handle || !handle->hasSchema()) continue;
    const auto& candidate = handle->schema().arguments();
    if (candidate.size() < ours.size()) continue;
    ElementMapping m{full_op_name(name), {}, std::vector<bool>(ours.size(), false)};
    bool match = std::none_of(candidate.begin(), candidate.end(), detail::writes_argument);
    for (size_t i = 0; match && i < candidate.size(); ++i) {
      if (i >= ours.size()) {
        match = candidate[i].default_value().has_value();
        m.from.push_back(-1);
        continue;
      }
      const bool scalars = ours[i].name() == "scalars" && ours[i].type()->str() == "Tensor" &&
                           candidate[i].type()->str() == "Scalar";
      match = scalars || element_type(ours[i]) == candidate[i].type()->str();
      m.scalars_tensor[i] = scalars;
      m.from.push_back(static_cast<int64_t>(i));
    }
    if (match) return m;
  }
  return std::nullopt;
}

// find_element_mapping scans every operator name; the rule (once per cache
// miss) and the element-by-element kernel (every call) ask it again for the
// same operators, so the answers are kept per operator.
std::optional<ElementMapping> element_mapping(const c10::OperatorHandle& op) {
  static std::mutex mutex;
  static auto* known = new std::map<std::string, std::optional<ElementMapping>>();
  const std::string name = full_op_name(op.operator_name());
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known->find(name);
  if (it == known->end()) it = known->emplace(name, find_element_mapping(op)).first;
  return it->second;
}

}  // namespace

std::optional<std::string> foreach_element_overload(const c10::OperatorHandle& op) {
  std::optional<ElementMapping> m = element_mapping(op);
  if (!m) return std::nullopt;
  return m->overload;
}

std::optional<ShardingRule> derive_foreach_rule(const c10::OperatorHandle& op, const ShardingRegistry& registry) {
  const std::optional<ElementMapping> mapping = element_mapping(op);
  if (!mapping) return std::nullopt;
  std::optional<ShardingRule> rule = registry.find(mapping->overload);
  if (!rule) return std::nullopt;
  const c10::OperatorHandle element_op = *c10::Dispatcher::singleton().findOp(parse_op_name(mapping->overload));
  const std::string_view name = detail::interned_op_name(mapping->overload);
  return ShardingRule([rule = *rule, element_op, name, m = *mapping](const OpCall& call) {
    const auto& args = call.op->schema().arguments();
    const auto& element_args = element_op.schema().arguments();
    // The element argument each foreach argument becomes, or -1.
    std::vector<int64_t> to(args.size(), -1);
    for (size_t j = 0; j < m.from.size(); ++j) {
      if (m.from[j] >= 0) to[static_cast<size_t>(m.from[j])] = static_cast<int64_t>(j);
    }
    // The list length: the size of the first Tensor[] argument.
    int64_t n = 0;
    for (size_t a = 0; a < args.size(); ++a) {
      if (is_list(args[a]) && call.arg(a).isList()) {
        n = static_cast<int64_t>(call.arg(a).toListRef().size());
        break;
      }
    }
    const bool in_place = call.outputs.empty();
    TORCH_CHECK(in_place || static_cast<int64_t>(call.outputs.size()) == n, call.describe(), ": ",
                call.outputs.size(), " outputs for ", n, " elements; only one output per element is derived");
    ShardingPlan plan;
    plan.input_placements.assign(call.inputs.size(), Placements());
    plan.output_placements.assign(call.outputs.size(), Placements());
    // Per element, the placements it wants of each shared (non-list) input.
    std::vector<std::vector<Placements>> shared_wants(static_cast<size_t>(n),
                                                      std::vector<Placements>(call.inputs.size()));
    bool per_element = false;
    // Inputs no element call sees (a scalars tensor) are read whole.
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      const size_t arg = call.positions[i].arg_index;
      if (to[arg] < 0 || m.scalars_tensor[arg]) {
        plan.input_placements[i] = Placements(static_cast<size_t>(call.mesh_ndim()), Replicate());
      }
    }
    for (int64_t e = 0; e < n; ++e) {
      std::vector<c10::IValue> sub_args;
      for (size_t j = 0; j < element_args.size(); ++j) {
        const int64_t a = j < m.from.size() ? m.from[j] : -1;
        if (a < 0) {
          sub_args.push_back(*element_args[j].default_value());
        } else if (m.scalars_tensor[static_cast<size_t>(a)]) {
          sub_args.emplace_back(c10::Scalar(1.0));  // the value never decides a plan
        } else if (is_list(args[static_cast<size_t>(a)]) && call.arg(static_cast<size_t>(a)).isList()) {
          sub_args.push_back(call.arg(static_cast<size_t>(a)).toListRef()[static_cast<size_t>(e)]);
        } else {
          sub_args.push_back(call.arg(static_cast<size_t>(a)));
        }
      }
      OpCall sub;
      sub.op = &element_op;
      sub.name = name;
      sub.args = &sub_args;
      sub.mesh = call.mesh;
      std::vector<size_t> from;  // sub input -> call input
      for (size_t i = 0; i < call.inputs.size(); ++i) {
        const TensorArgPosition& pos = call.positions[i];
        if (pos.list_index >= 0 && pos.list_index != e) continue;
        if (to[pos.arg_index] < 0 || m.scalars_tensor[pos.arg_index]) continue;
        if (pos.list_index == e && call.self_input >= 0 &&
            call.positions[static_cast<size_t>(call.self_input)].arg_index == pos.arg_index) {
          sub.self_input = static_cast<int64_t>(sub.inputs.size());
        }
        sub.inputs.push_back(call.inputs[i]);
        sub.positions.push_back(TensorArgPosition{static_cast<size_t>(to[pos.arg_index]), -1});
        from.push_back(i);
      }
      if (in_place) {
        TORCH_CHECK(sub.self_input >= 0, call.describe(), ": element ", e, " has no written tensor");
        sub.outputs.push_back(sub.inputs[static_cast<size_t>(sub.self_input)].meta);
      } else {
        sub.outputs.push_back(call.outputs[static_cast<size_t>(e)]);
      }
      ShardingPlan element_plan;
      try {
        element_plan = plan_with_strided_inputs(rule, sub);
      } catch (const c10::Error& err) {
        TORCH_CHECK(false, call.name, " element ", e, " (sharded by the rule of ", name,
                    "): ", err.what_without_backtrace());
      }
      TORCH_CHECK(element_plan.local_kernel.empty() && element_plan.local_arg_overrides.empty() &&
                      !element_plan.self_placements_change,
                  call.describe(), ": the rule of ", name, " rewrites an element's arguments, which a ",
                  call.name, " call cannot do per element; call ", name, " on each element instead");
      for (size_t s = 0; s < from.size(); ++s) {
        Placements& joined = plan.input_placements[from[s]];
        const Placements& wanted = element_plan.input_placements[s];
        const DTensorSpec& input = call.inputs[from[s]];
        if (call.positions[from[s]].list_index < 0) shared_wants[static_cast<size_t>(e)][from[s]] = wanted;
        if (!joined.empty() && joined != wanted) {
          // A shared Replicate argument reaches each element's layout by
          // local slicing: keep it Replicate and slice it per element.
          const bool replicated = std::all_of(input.placements.begin(), input.placements.end(),
                                              [](const Placement& p) { return p.is_replicate(); });
          TORCH_CHECK(replicated && call.positions[from[s]].list_index < 0, call.describe(),
                      ": its elements want the shared tensor argument laid out as both ", to_string(joined),
                      " and ", to_string(wanted), "; redistribute it to one of them first");
          per_element = true;
          joined = input.placements;
          continue;
        }
        if (!per_element || call.positions[from[s]].list_index >= 0) joined = wanted;
      }
      if (!in_place) plan.output_placements[static_cast<size_t>(e)] = element_plan.output_placements[0];
    }
    if (per_element) {
      plan.element_input_placements = std::move(shared_wants);
      plan.local_kernel = kForeachByElement;
    }
    return plan;
  });
}

// kForeachByElement: element e's call of the per-tensor op, on this rank's
// local arguments, with each shared Replicate input sliced to the layout
// element e wants; an in-place foreach op copies each result into its self.
void foreach_by_element(const LocalCall& local, std::vector<c10::IValue>* stack) {
  const OpCall& call = local.call;
  const std::optional<ElementMapping> m = element_mapping(*call.op);
  TORCH_CHECK(m.has_value(), call.describe(), ": no per-tensor overload to run element by element");
  const c10::OperatorHandle element_op = *c10::Dispatcher::singleton().findOp(parse_op_name(m->overload));
  const auto& element_args = element_op.schema().arguments();
  const bool in_place = call.op->schema().returns().empty();
  // The call input a non-list argument is, by argument index.
  std::map<size_t, size_t> shared_input;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (call.positions[i].list_index < 0) shared_input[call.positions[i].arg_index] = i;
  }
  const std::vector<c10::IValue>& args = *stack;
  size_t n = 0;
  for (const c10::IValue& a : args) {
    if (a.isTensorList()) {
      n = a.toTensorVector().size();
      break;
    }
  }
  std::vector<at::Tensor> results;
  for (size_t e = 0; e < n; ++e) {
    std::vector<c10::IValue> sub;
    for (size_t j = 0; j < element_args.size(); ++j) {
      const int64_t a = j < m->from.size() ? m->from[j] : -1;
      if (a < 0) {
        sub.push_back(*element_args[j].default_value());
        continue;
      }
      const c10::IValue& v = args[static_cast<size_t>(a)];
      if (m->scalars_tensor[static_cast<size_t>(a)]) {
        sub.emplace_back(v.toTensor()[static_cast<int64_t>(e)].item());
      } else if (v.isTensorList()) {
        sub.emplace_back(v.toTensorVector()[e]);
      } else if (v.isTensor() && shared_input.count(static_cast<size_t>(a))) {
        const size_t i = shared_input.at(static_cast<size_t>(a));
        const Placements& want = local.plan.element_input_placements[e][i];
        sub.emplace_back(want.empty() ? v.toTensor() : collectives::slice_of_full(v.toTensor(), call.mesh, want));
      } else {
        sub.push_back(v);
      }
    }
    element_op.callBoxed(&sub);
    at::Tensor result = sub.front().toTensor();
    if (in_place) {
      args[0].toTensorVector()[e].copy_(result);

    } else {
      results.push_back(std::move(result));
    }
  }
  stack->clear();
  if (!in_place) stack->emplace_back(results);
}

void register_foreach_kernels(ShardingRegistry& registry) {
  registry.add_local_kernel(kForeachByElement, foreach_by_element);
}

}  // namespace dtensor
