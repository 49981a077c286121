#include "core/dispatch/foreach_rules.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <vector>

#include "core/dispatch/derived_rules.h"
#include "core/dispatch/op_name.h"
#include "core/dispatch/strided_inputs.h"

namespace dtensor {
namespace {

constexpr const char* kForeach = "aten::_foreach_";


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

}  // namespace

std::optional<std::string> foreach_element_overload(const c10::OperatorHandle& op) {
  if (!op.hasSchema()) return std::nullopt;
  const c10::FunctionSchema& schema = op.schema();
  const std::string base = per_tensor_name(schema.name());
  if (base.empty()) return std::nullopt;
  for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name != base) continue;
    auto handle = c10::Dispatcher::singleton().findOp(name);
    if (!handle || !handle->hasSchema()) continue;
    const auto& candidate = handle->schema().arguments();
    const auto& ours = schema.arguments();
    if (candidate.size() < ours.size()) continue;
    bool match = std::none_of(candidate.begin(), candidate.end(), detail::writes_argument);
    for (size_t i = 0; match && i < candidate.size(); ++i) {
      match = i < ours.size() ? element_type(ours[i]) == candidate[i].type()->str()
                              : candidate[i].default_value().has_value();
    }
    if (match) return full_op_name(name);
  }
  return std::nullopt;
}

std::optional<ShardingRule> derive_foreach_rule(const c10::OperatorHandle& op, const ShardingRegistry& registry) {
  const std::optional<std::string> element = foreach_element_overload(op);
  if (!element) return std::nullopt;
  std::optional<ShardingRule> rule = registry.find(*element);
  if (!rule) return std::nullopt;
  const c10::OperatorHandle element_op = *c10::Dispatcher::singleton().findOp(parse_op_name(*element));
  const std::string_view name = detail::interned_op_name(*element);
  return ShardingRule([rule = *rule, element_op, name](const OpCall& call) {
    const auto& args = call.op->schema().arguments();
    const auto& element_args = element_op.schema().arguments();
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
    for (int64_t e = 0; e < n; ++e) {
      std::vector<c10::IValue> sub_args;
      for (size_t a = 0; a < element_args.size(); ++a) {
        if (a >= args.size()) {
          sub_args.push_back(*element_args[a].default_value());
        } else if (is_list(args[a]) && call.arg(a).isList()) {
          sub_args.push_back(call.arg(a).toListRef()[static_cast<size_t>(e)]);
        } else {
          sub_args.push_back(call.arg(a));
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
        if (pos.list_index == e && call.self_input >= 0 &&
            call.positions[static_cast<size_t>(call.self_input)].arg_index == pos.arg_index) {
          sub.self_input = static_cast<int64_t>(sub.inputs.size());
        }
        sub.inputs.push_back(call.inputs[i]);
        sub.positions.push_back(TensorArgPosition{pos.arg_index, -1});
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
        TORCH_CHECK(joined.empty() || joined == wanted, call.describe(), ": its elements want the shared ",
                    "tensor argument laid out as both ", to_string(joined), " and ", to_string(wanted),
                    "; redistribute it to one of them first");
        joined = wanted;
      }
      if (!in_place) plan.output_placements[static_cast<size_t>(e)] = element_plan.output_placements[0];
    }
    return plan;
  });
}

}  // namespace dtensor
