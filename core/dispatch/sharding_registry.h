// ShardingRegistry: operator name -> sharding rule, and local-kernel name ->
// local kernel (See Note [Local kernels]). Rules are registered explicitly
// (register_builtin_rules, called by dtensor::init) and users may add or
// override them (register_sharding). Most rules are written for one mesh dim at a time and
// expanded to the whole mesh by expand_per_mesh_dim.
//   registry.add({"aten::relu"}, pointwise_rule());
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dispatch/op_call.h"

namespace dtensor {

using ShardingRule = std::function<ShardingPlan(const OpCall&)>;

/// One acceptable assignment of placements on a single mesh dim.
struct DimStrategy {
  std::vector<Placement> inputs;   // one per tensor input
  std::vector<Placement> outputs;  // one per tensor output
};

/// Candidates for one mesh dim, given the inputs' current placements there.
using DimRule = std::function<std::vector<DimStrategy>(const OpCall&, int mesh_dim)>;

/// A whole-mesh check of the input placements a plan would give (true: the
/// plan can run), for what one mesh dim cannot see: a tensor dim split over
/// several mesh dims into more pieces than it has elements, say.
using PlanCheck = std::function<bool(const OpCall&, const std::vector<Placements>& inputs)>;

/// Runs `rule` for every mesh dim and keeps, per mesh dim, the candidate whose
/// input redistributions cost least (see Note [Choosing among candidates]).
/// In-place ops only accept candidates that keep the written input's placement.
/// With `check`, a plan it refuses is replaced by the cheapest combination
/// of per-dim candidates it accepts (Note [Whole-mesh plan checks]).
ShardingPlan expand_per_mesh_dim(const OpCall& call, const DimRule& rule, const PlanCheck& check = nullptr);
ShardingRule per_mesh_dim(DimRule rule, PlanCheck check = nullptr);

/// Cost of moving one tensor's data on one mesh dim from `from` to `to`:
/// bytes per rank plus a per-collective latency in bytes (See Note [Choosing
/// among candidates]); infinite when impossible, e.g. Shard -> Partial.
double placement_change_cost(const DTensorSpec& spec, int mesh_dim, const Placement& from,
                             const Placement& to);

class ShardingRegistry {
 public:
  /// The registry used by the dispatcher (built-ins registered by init()).
  static ShardingRegistry& global();

  /// Registers `rule` for each operator name ("aten::mm" matches every
  /// overload; "aten::add.Tensor" one overload). Later registrations win.
  void add(const std::vector<std::string>& op_names, ShardingRule rule);
  /// The rule for "aten::add.Tensor": the exact overload first, then the base name.
  std::optional<ShardingRule> find(const std::string& full_name) const;
  /// The rule registered for exactly this name ("aten::add.out"), no base-name match.
  std::optional<ShardingRule> find_exact(const std::string& full_name) const;
  /// Every name with a rule, sorted.
  std::vector<std::string> names() const;
  /// Registers the local kernel a plan names in ShardingPlan::local_kernel
  /// ("dtensor::masked_embedding"); a later registration of the name wins.
  void add_local_kernel(const std::string& name, LocalKernel kernel);
  /// The kernel registered as `name`, or nullopt.
  std::optional<LocalKernel> find_local_kernel(const std::string& name) const;
  /// Increases on every registration, so caches keyed on rules can drop entries.
  uint64_t generation() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, ShardingRule> rules_;
  std::unordered_map<std::string, LocalKernel> local_kernels_;
  // Read without the mutex on every dispatched call (a contended lock when
  // the ranks of a fake world dispatch at once); changed under it.
  std::atomic<uint64_t> generation_{0};
};

}  // namespace dtensor
