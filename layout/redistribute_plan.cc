// Redistribute planning: input validation, the Dijkstra search over
// placements (whose edges are the transitions of transitions.h), and
// PyTorch's greedy planner as a reference.
// See redistribute_plan.h, Note [Redistribute step legality] and
// Note [Redistribute plan search].
#include "layout/redistribute_plan.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "layout/layout_error.h"
#include "layout/text.h"

namespace dtensor {
namespace {

// Validated, normalized inputs shared by both planners.
struct Problem {
  std::vector<int64_t> shape;
  int64_t element_size = 1;
  MeshShape mesh;
  Placements from;
  Placements to;
};

std::string describe(const std::vector<int64_t>& shape, const MeshShape& mesh,
                     const Placements& from, const Placements& to) {
  return detail::str_cat(to_string(from), " -> ", to_string(to), " (tensor shape ",
                         detail::shape_to_string(shape), ", ", mesh.to_string(), ")");
}

std::string describe(const Problem& p) { return describe(p.shape, p.mesh, p.from, p.to); }

Placements checked_placements(const char* caller, const char* which, const Placements& raw,
                              const std::vector<int64_t>& shape, const MeshShape& mesh,
                              const std::string& context) {
  try {
    return validate_placements(raw, mesh, static_cast<int64_t>(shape.size()));
  } catch (const LayoutError& e) {
    throw LayoutError(
        detail::str_cat(caller, ": invalid `", which, "` placements in ", context, ": ", e.what()));
  }
}

Problem validate_inputs(const char* caller, const std::vector<int64_t>& shape, int64_t element_size,
                        const MeshShape& mesh, const Placements& from, const Placements& to) {
  const std::string context = describe(shape, mesh, from, to);
  DTENSOR_LAYOUT_CHECK(element_size >= 1, caller, ": element_size ", element_size, " in ", context,
                       " must be >= 1 (bytes per element, e.g. 4 for float32)");
  for (size_t d = 0; d < shape.size(); ++d) {
    DTENSOR_LAYOUT_CHECK(shape[d] >= 0, caller, ": tensor dim ", d, " has negative size ", shape[d],
                         " in ", context, "; pass the global shape, sizes >= 0");
  }
  detail::checked_numel(shape, caller);  // throws if the element count overflows int64
  Problem p;
  p.shape = shape;
  p.element_size = element_size;
  p.mesh = mesh;
  p.from = checked_placements(caller, "from", from, shape, mesh, context);
  p.to = checked_placements(caller, "to", to, shape, mesh, context);
  return p;
}

// Throws for the transitions no plan can make. See Note [Redistribute step legality].
void check_not_refused(const char* caller, const Problem& p) {
  for (int i = 0; i < p.mesh.ndim(); ++i) {
    const Placement& a = p.from[static_cast<size_t>(i)];
    const Placement& b = p.to[static_cast<size_t>(i)];
    if (a == b || p.mesh.size(i) == 1 || !b.is_partial()) continue;
    const std::string what = detail::str_cat(caller, ": cannot redistribute ", describe(p),
                                             ": mesh dim ", i, " goes from ", a, " to ", b);
    DTENSOR_LAYOUT_CHECK(is_creatable_partial(b), what, "; only P(sum) (divide by the mesh ",
                         "dim size) and P(avg|max|min) (keep the value) can be made from R, S or ",
                         "another Partial (reduced to R first). A ", b,
                         " comes only from an op producing partial results: redistribute to ",
                         "R instead");
    // See Note [No P(sum) under a pending P(product)] in redistribute_plan.h:
    // from a Shard, P(sum) is a zero-fill, which divides nothing.
    if (b.reduce_op() != ReduceOp::kSum || a.is_shard()) continue;
    for (int j = 0; j < p.mesh.ndim(); ++j) {
      const Placement& kept = p.to[static_cast<size_t>(j)];
      DTENSOR_LAYOUT_CHECK(j == i || p.mesh.size(j) == 1 || !kept.is_partial() ||
                               kept.reduce_op() != ReduceOp::kProduct,
                           what, " while mesh dim ", j, " stays ", kept,
                           ": dividing the factors of a product by the mesh dim size does not ",
                           "divide the product. Reduce mesh dim ", j, " first (to R or a Shard)");
    }
  }
}

RedistributeStep make_step(const Problem& p, const Placements& before, int i, const Placement& to,
                           StepKind kind, const CommCostModel& cost) {
  RedistributeStep step;
  step.mesh_dim = i;
  step.from = before[static_cast<size_t>(i)];
  step.to = to;
  step.kind = kind;
  step.group_size = p.mesh.size(i);
  step.before = before;
  step.after = before;
  step.after[static_cast<size_t>(i)] = to;
  step.bytes_per_rank = step_bytes_per_rank(p.shape, p.element_size, p.mesh, before, i, to, kind);
  step.estimated_us = estimate_us(step, cost);
  return step;
}

// ---- Dijkstra search. See Note [Redistribute plan search]. ----

// Path cost, compared lexicographically.
struct PathCost {
  int collectives = 0;
  int64_t bytes = 0;
  int steps = 0;
  std::vector<int> order;  // per step: mesh_dim * alphabet size + target index

  friend bool operator<(const PathCost& a, const PathCost& b) {
    return std::tie(a.collectives, a.bytes, a.steps, a.order) <
           std::tie(b.collectives, b.bytes, b.steps, b.order);
  }
};

// How the best path reaches a state: from `parent` by setting `mesh_dim` to target.
struct Arrival {
  int parent = -1;
  int mesh_dim = 0;
  int target = 0;
  StepKind kind = StepKind::kLocalRelabel;
};

// Every placement a mesh dim may take: R, S(0..ndim-1), then the Partials of
// `from` and `to` in ReduceOp order (intermediate Partials never help), then
// the _StridedShards of `from` and `to` in the order they occur there.
Placements alphabet(const Problem& p) {
  Placements out = {Replicate()};
  for (size_t d = 0; d < p.shape.size(); ++d) out.push_back(Shard(static_cast<int64_t>(d)));
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kProduct}) {
    const Placement partial = Partial(op);
    const bool used = std::count(p.from.begin(), p.from.end(), partial) > 0 ||
                      std::count(p.to.begin(), p.to.end(), partial) > 0;
    if (used) out.push_back(partial);
  }
  for (const Placements* side : {&p.from, &p.to}) {
    for (const Placement& placement : *side) {
      if (placement.is_strided_shard() && std::count(out.begin(), out.end(), placement) == 0) {
        out.push_back(placement);
      }
    }
  }
  return out;
}

class PlanSearch {
 public:
  PlanSearch(const Problem& p, const PlanOptions& options)
      : p_(p), options_(options), alphabet_(alphabet(p)) {}

  RedistributePlan run() {
    intern(p_.from, PathCost{}, Arrival{});
    while (!queue_.empty()) {
      auto [cost, s] = queue_.top();
      queue_.pop();
      if (done_[static_cast<size_t>(s)]) continue;
      done_[static_cast<size_t>(s)] = true;
      if (states_[static_cast<size_t>(s)] == p_.to) return build(s);
      relax_neighbours(s, cost);
    }
    throw LayoutError(detail::str_cat("plan_redistribute: internal error: no plan found for ",
                                      describe(p_), " after exploring ", states_.size(),
                                      " states; please report this with the inputs"));
  }

 private:
  using Entry = std::pair<PathCost, int>;

  // Records `cost` for `state` if it is new or cheaper, and queues it.
  void intern(const Placements& state, PathCost cost, const Arrival& arrival) {
    auto [it, inserted] = index_.try_emplace(state, static_cast<int>(states_.size()));
    const auto s = static_cast<size_t>(it->second);
    if (inserted) {
      states_.push_back(state);
      best_.push_back(cost);
      arrivals_.push_back(arrival);
      done_.push_back(false);
    } else if (done_[s] || !(cost < best_[s])) {
      return;
    }
    best_[s] = cost;
    arrivals_[s] = arrival;
    queue_.push({std::move(cost), it->second});
  }

  void relax_neighbours(int s, const PathCost& cost) {
    const Placements state = states_[static_cast<size_t>(s)];
    const int width = static_cast<int>(alphabet_.size());
    for (int i = 0; i < p_.mesh.ndim(); ++i) {
      for (int t = 0; t < width; ++t) {
        const Placement& target = alphabet_[static_cast<size_t>(t)];
        if (target == state[static_cast<size_t>(i)]) continue;
        std::optional<StepKind> kind = legal_step(state, p_.mesh, i, target, &p_.to, &p_.shape);
        if (!kind) continue;
        Placements next = state;
        next[static_cast<size_t>(i)] = target;
        PathCost next_cost = cost;
        next_cost.collectives += is_collective(*kind) ? 1 : 0;
        const int64_t bytes =
            step_bytes_per_rank(p_.shape, p_.element_size, p_.mesh, state, i, target, *kind);
        if (__builtin_add_overflow(next_cost.bytes, bytes, &next_cost.bytes)) {
          next_cost.bytes = std::numeric_limits<int64_t>::max();
        }
        next_cost.steps += 1;
        next_cost.order.push_back(i * width + t);
        intern(next, std::move(next_cost), Arrival{s, i, t, *kind});
      }
    }
  }

  RedistributePlan build(int goal) const {
    std::vector<Arrival> path;
    for (int s = goal; arrivals_[static_cast<size_t>(s)].parent >= 0;
         s = arrivals_[static_cast<size_t>(s)].parent) {
      path.push_back(arrivals_[static_cast<size_t>(s)]);
    }
    std::reverse(path.begin(), path.end());
    RedistributePlan plan{p_.from, p_.to, {}};
    Placements state = p_.from;
    for (const Arrival& a : path) {
      const Placement& target = alphabet_[static_cast<size_t>(a.target)];
      plan.steps.push_back(make_step(p_, state, a.mesh_dim, target, a.kind, options_.cost));
      state = plan.steps.back().after;
    }
    return plan;
  }

  const Problem& p_;
  const PlanOptions& options_;
  const Placements alphabet_;
  std::vector<Placements> states_;
  std::unordered_map<Placements, int, PlacementsHash> index_;
  std::vector<PathCost> best_;
  std::vector<Arrival> arrivals_;
  std::vector<bool> done_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue_;
};

// ---- PyTorch's greedy planner (reference only). ----

// Product of the sizes of the mesh dims that shard anything (PyTorch's num_shards).
int64_t num_shards(const Placements& placements, const MeshShape& mesh) {
  int64_t shards = 1;
  for (int i = 0; i < mesh.ndim(); ++i) {
    if (placements[static_cast<size_t>(i)].is_shard()) shards *= mesh.size(i);
  }
  return shards;
}

// The mesh dims before `mesh_dim` that shard tensor dim d.
std::vector<int> outer_shardings(const Placements& placements, int mesh_dim, int64_t d) {
  std::vector<int> dims;
  for (int i = 0; i < mesh_dim; ++i) {
    if (placements[static_cast<size_t>(i)].is_shard(d)) dims.push_back(i);
  }
  return dims;
}

// The (mesh dim, target) transforms of _gen_transform_infos, in order.
std::vector<std::pair<int, Placement>> greedy_transforms(const Problem& p) {
  std::vector<std::pair<int, Placement>> transforms;
  const int ndim = p.mesh.ndim();
  Placements current = p.from;
  if (ndim > 1 && num_shards(p.from, p.mesh) > 1) {
    // Inner to outer: replicate misaligned nested sharding first.
    for (int i = ndim - 1; i >= 0; --i) {
      Placement target = p.to[static_cast<size_t>(i)];
      if (target.is_shard() && outer_shardings(current, i, target.shard_dim()) !=
                                   outer_shardings(p.to, i, target.shard_dim())) {
        target = Replicate();
      }
      if (current[static_cast<size_t>(i)] != target) {
        transforms.emplace_back(i, target);
        current[static_cast<size_t>(i)] = target;
      }
    }
  }
  // Outer to inner: every remaining change (a 1-D mesh has only this pass).
  for (int i = 0; i < ndim; ++i) {
    if (current[static_cast<size_t>(i)] != p.to[static_cast<size_t>(i)]) {
      transforms.emplace_back(i, p.to[static_cast<size_t>(i)]);
      current[static_cast<size_t>(i)] = p.to[static_cast<size_t>(i)];
    }
  }
  return transforms;
}

RedistributePlan greedy_plan(const Problem& p, const PlanOptions& options) {
  RedistributePlan plan{p.from, p.to, {}};
  Placements state = p.from;
  auto add = [&](int i, const Placement& target, StepKind kind) {
    plan.steps.push_back(make_step(p, state, i, target, kind, options.cost));
    state = plan.steps.back().after;
  };
  for (const auto& [i, target] : greedy_transforms(p)) {
    const Placement from = state[static_cast<size_t>(i)];
    std::optional<StepKind> kind = transition_kind(from, target, p.mesh.size(i));
    if (kind) {
      add(i, target, *kind);
    } else if (from.is_shard() && target.is_partial() && target.reduce_op() == ReduceOp::kSum) {
      add(i, target, StepKind::kLocalZeroFill);  // as 2.15's executor does
    } else if (from.is_shard() && is_creatable_partial(target)) {
      add(i, Replicate(), StepKind::kAllGather);  // S -> P(avg) as S -> R -> P(avg)
      add(i, target, StepKind::kLocalPartition);
    } else if (from.is_partial() && is_creatable_partial(target)) {
      add(i, Replicate(), StepKind::kAllReduce);  // P(a) -> P(b) as P(a) -> R -> P(b)
      add(i, target, StepKind::kLocalPartition);
    } else {
      throw LayoutError(detail::str_cat("greedy_reference_plan: internal error: no step for ", from,
                                        " -> ", target, " on mesh dim ", i, " in ", describe(p)));
    }
  }
  return plan;
}

}  // namespace

std::string RedistributeStep::to_string() const {
  return detail::str_cat("mesh dim ", mesh_dim, ": ", from, " -> ", to, " via ",
                         step_kind_name(kind), ", ", bytes_per_rank, " bytes/rank, ",
                         format_us(estimated_us), " us; ", dtensor::to_string(before), " -> ",
                         dtensor::to_string(after));
}

int RedistributePlan::num_collectives() const {
  return static_cast<int>(std::count_if(steps.begin(), steps.end(),
                                        [](const auto& step) { return is_collective(step.kind); }));
}

int64_t RedistributePlan::total_bytes_per_rank() const {
  int64_t total = 0;
  for (const RedistributeStep& step : steps) {
    if (__builtin_add_overflow(total, step.bytes_per_rank, &total)) {
      return std::numeric_limits<int64_t>::max();
    }
  }
  return total;
}

double RedistributePlan::estimated_us() const {
  double total = 0.0;
  for (const RedistributeStep& step : steps) total += step.estimated_us;
  return total;
}

std::string RedistributePlan::to_string() const {
  std::string out =
      detail::str_cat(dtensor::to_string(from), " -> ", dtensor::to_string(to), ": ", steps.size(),
                      " steps, ", num_collectives(), " collectives, ", total_bytes_per_rank(),
                      " bytes/rank, ", format_us(estimated_us()), " us\n");
  for (size_t k = 0; k < steps.size(); ++k) {
    out += detail::str_cat("  step ", k, ": ", steps[k].to_string(), "\n");
  }
  return out;
}

RedistributePlan plan_redistribute(const std::vector<int64_t>& global_shape, int64_t element_size,
                                   const MeshShape& mesh, const Placements& from,
                                   const Placements& to, const PlanOptions& options) {
  const char* caller = "plan_redistribute";
  const Problem p = validate_inputs(caller, global_shape, element_size, mesh, from, to);
  check_not_refused(caller, p);
  return PlanSearch(p, options).run();
}

RedistributePlan greedy_reference_plan(const std::vector<int64_t>& global_shape,
                                       int64_t element_size, const MeshShape& mesh,
                                       const Placements& from, const Placements& to,
                                       const PlanOptions& options) {
  const char* caller = "greedy_reference_plan";
  const Problem p = validate_inputs(caller, global_shape, element_size, mesh, from, to);
  check_not_refused(caller, p);
  return greedy_plan(p, options);
}

double estimate_us(const RedistributeStep& step, const CommCostModel& cost) {
  return dtensor::estimate_us(step.kind, step.bytes_per_rank, step.group_size, cost);
}

}  // namespace dtensor
