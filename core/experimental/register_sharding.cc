// register_sharding: wraps a one-mesh-dim user function as a registry rule.
#include "core/experimental/register_sharding.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

#include "core/dispatch/sharding_registry.h"
#include "core/init.h"

namespace dtensor::experimental {
namespace {

// Checks that `name` is an aten operator that reaches the DTensor kernel.
void check_op_name(const std::string& name) {
  TORCH_CHECK(name.rfind("aten::", 0) == 0, "register_sharding: \"", name,
              "\" is not an aten operator name (expected \"aten::op\" or \"aten::op.overload\")");
  const auto dot = name.find('.');
  const std::string base = name.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "" : name.substr(dot + 1);
  auto& dispatcher = c10::Dispatcher::singleton();
  bool found = false, reaches = false;
  for (const c10::OperatorName& op : dispatcher.getAllOpNames()) {
    if (op.name != base || (dot != std::string::npos && op.overload_name != overload)) continue;
    found = true;
    auto handle = dispatcher.findOp(op);
    reaches = reaches || (handle && !handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd));
  }
  TORCH_CHECK(found, "register_sharding: no operator named \"", name, "\"");
  TORCH_CHECK(reaches, "register_sharding: \"", name, "\" has a CompositeImplicitAutograd kernel, so it "
              "decomposes into other operators before reaching DTensor; register rules for those instead");
}

std::vector<Placement> normalized(const std::vector<Placement>& placements,
                                  const std::vector<int64_t>& ndims, const OpCall& call, const char* what) {
  TORCH_CHECK(placements.size() == ndims.size(), call.name, ": a register_sharding rule returned ",
              placements.size(), " ", what, " placements; the call has ", ndims.size(), " tensor ", what, "s");
  std::vector<Placement> out;
  for (size_t i = 0; i < placements.size(); ++i) {
    try {
      out.push_back(placements[i].normalized(ndims[i]));
    } catch (const std::exception& e) {
      TORCH_CHECK(false, call.name, ": a register_sharding rule returned ", placements[i].to_string(),
                  " for ", what, " ", i, ": ", e.what());
    }
  }
  return out;
}

}  // namespace

void register_sharding(const std::vector<std::string>& op_names, ShardingFn fn) {
  TORCH_CHECK(fn != nullptr, "register_sharding: the rule function is empty");
  init();  // built-ins first, so that they do not replace this rule later
  for (const auto& name : op_names) check_op_name(name);
  ShardingRegistry::global().add(op_names, per_mesh_dim([fn](const OpCall& call, int) {
    std::vector<int64_t> in_ndims, out_ndims;
    for (const auto& in : call.inputs) in_ndims.push_back(in.ndim());
    for (const auto& out : call.outputs) out_ndims.push_back(static_cast<int64_t>(out.shape.size()));
    std::vector<DimStrategy> candidates;
    for (const AcceptableSharding& s : fn(call)) {
      candidates.push_back(DimStrategy{normalized(s.inputs, in_ndims, call, "input"),
                                       normalized(s.outputs, out_ndims, call, "output")});
    }
    TORCH_CHECK(!candidates.empty(), call.describe(), ": the register_sharding rule returned no layout");
    return candidates;
  }));
}

void register_sharding(const std::string& op_name, ShardingFn fn) {
  register_sharding(std::vector<std::string>{op_name}, std::move(fn));
}

}  // namespace dtensor::experimental
