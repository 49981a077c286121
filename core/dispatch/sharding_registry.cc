// Rule registry and the per-mesh-dim expansion with its cost comparison.
#include "core/dispatch/sharding_registry.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "layout/transitions.h"
#include "layout/shard_layout.h"
#include "core/redistribute.h"

namespace dtensor {

std::string OpCall::describe() const {
  std::ostringstream out;
  out << name << "(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    out << (i ? ", " : "") << to_string(inputs[i].placements) << " "
        << c10::toString(inputs[i].meta.dtype) << c10::IntArrayRef(inputs[i].meta.shape);
  }
  out << ") on " << mesh.to_string() << ", rank " << mesh.global_rank();
  return out.str();
}

namespace {
constexpr double kImpossible = std::numeric_limits<double>::infinity();

}  // namespace

// Note [Choosing among candidates]
// A candidate costs, per input whose placement on the mesh dim must change,
// what the transition table (layout/transitions.h) says that change
// moves: the step's ring bytes per rank on the padded buffer, plus the
// collective's latency in bytes (5 us at 50 GB/s = 250 kB, and 25 kB per
// ring step: n-1, an all_reduce's 2(n-1); Note [Comm cost model]); local
// changes (R -> S, R -> P(sum|avg|max|min), anything on a size-1 mesh dim) move
// nothing, a change with no direct transition (S -> P, R -> P(product)) is
// impossible, and P(a) -> P(b) costs its all_reduce to R (the planner then
// re-partitions locally), as PyTorch 2.15 prices it. Computed from global shapes
// only, so every rank gets the same costs (a rank's own piece, 0 rows on the
// last rank of 6 rows over 4, must not be used: ranks would pick different
// strategies and issue different collectives). A tiny epsilon per change (two
// when it creates a Partial) prefers candidates that keep placements when costs
// tie (e.g. empty tensors).
// A shard moved to another dim (all_to_all) pays 1 us more (50 kB), as in
// PyTorch 2.15's redistribute_cost ("add 1.0 as penalty to favor
// allgather"): for small tensors a gather to Replicate then wins, and a
// result that is read whole next costs no second collective (corpus shard
// 11: 9 programs whose grid sampling, upsampling or pooling moved a small
// shard by all_to_all and then gathered it again; identical programs
// 2,378 -> 2,396 over the corpus, no new difference).
// The latency term is PyTorch's choice too (its redistribute_cost is latency
// plus bandwidth): for small tensors one all_reduce beats a reduce_scatter
// plus an all_gather although it moves more bytes; issue #18's differential
// test found 23 of its remaining divergences there. The per-step term is
// PyTorch's hop count: gathering a 384-byte shard beats all_reducing a
// 256-byte Partial operand on 2 ranks (g18_00645: bmm of [P(sum), S(1)] by
// [R, P(sum)]; the kept S(1) cost one more all_gather in the backward).
double placement_change_cost(const DTensorSpec& spec, int mesh_dim, const Placement& from,
                             const Placement& to) {
  if (from == to) return 0.0;
  constexpr double epsilon = 1e-3;
  Placements before = spec.placements;
  before[static_cast<size_t>(mesh_dim)] = from;
  std::optional<double> bytes = transition_cost_bytes(
      spec.meta.shape, static_cast<int64_t>(c10::elementSize(spec.meta.dtype)),
      spec.mesh.mesh_shape(), before, mesh_dim, to);
  // P(a) -> P(b) has no direct step; PyTorch 2.15 prices it as the
  // all_reduce to Replicate, then a free local partition (Note [Choosing
  // among candidates]), so addmm may keep a P(sum) bias by reducing a P(max)
  // input into P(sum) (g18_00236).
  if (!bytes && from.is_partial() && is_creatable_partial(to)) {
    bytes = transition_cost_bytes(spec.meta.shape, static_cast<int64_t>(c10::elementSize(spec.meta.dtype)),
                                  spec.mesh.mesh_shape(), before, mesh_dim, Replicate());
  }
  if (!bytes) return kImpossible;
  // PyTorch's S(i) -> S(j) penalty: 1 us (50 kB at the model's 50 GB/s).
  const double penalty = from.is_shard() && to.is_shard() && spec.mesh.size(mesh_dim) > 1 ? 50'000.0 : 0.0;
  return *bytes + penalty + (to.is_partial() && spec.mesh.size(mesh_dim) > 1 ? 2 : 1) * epsilon;
}

namespace {

// Note [Written tensors zero-fill a sharded operand]
// A strategy never pays for S -> P(sum) (a destination-only change, as
// PyTorch 2.15's infinite cost), except as the last resort of an op that
// writes a Partial(sum) tensor in place or into out=: add_ of a P(sum)
// parameter by an S(1) momentum buffer (s18_0157, SGD with momentum on a
// row-wise linear's weight) has no other strategy that keeps what it
// writes, P(sum) + R being wrong. The operand's shard then sits in zeros
// of its full extent on every rank (no collective), as PyTorch 2.15 runs
// it. Priced above any finite change, so only a mesh dim with no other
// candidate takes it.
constexpr double kZeroFillCost = 1e15;

double strategy_cost(const OpCall& call, int mesh_dim, const DimStrategy& s, bool zero_fill = false) {
  double cost = 0;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Placement& current = call.inputs[i].placements[static_cast<size_t>(mesh_dim)];
    double change = placement_change_cost(call.inputs[i], mesh_dim, current, s.inputs[i]);
    if (change == kImpossible && zero_fill && current.is_shard() && s.inputs[i].is_partial() &&
        s.inputs[i].reduce_op() == ReduceOp::kSum) {
      change = kZeroFillCost;
    }
    cost += change;
  }
  return cost;
}

bool keeps_self(const OpCall& call, int mesh_dim, const DimStrategy& s) {
  if (call.self_input < 0) return true;
  const auto self = static_cast<size_t>(call.self_input);
  const Placement& current = call.inputs[self].placements[static_cast<size_t>(mesh_dim)];
  return s.inputs[self] == current && !s.outputs.empty() && s.outputs[0] == current;
}

// "S(0), R -> S(0)": the inputs' placements on one mesh dim -> the outputs'.
std::string strategy_text(const DimStrategy& s) {
  std::string out;
  for (size_t i = 0; i < s.inputs.size(); ++i) out += (i ? ", " : "") + s.inputs[i].to_string();
  out += " ->";
  for (size_t o = 0; o < s.outputs.size(); ++o) out += (o ? ", " : " ") + s.outputs[o].to_string();
  return out;
}

std::string candidates_text(const std::vector<DimStrategy>& candidates) {
  std::ostringstream out;
  for (const auto& c : candidates) {
    out << "\n  inputs " << to_string(c.inputs) << " -> outputs " << to_string(c.outputs);
  }
  return out.str();
}


// True when some tensor dim is sharded on two or more mesh dims.
bool nested(const Placements& placements) {
  for (size_t a = 0; a < placements.size(); ++a) {
    for (size_t b = a + 1; b < placements.size(); ++b) {
      if (placements[a].is_shard() && placements[b].is_shard() &&
          placements[a].shard_dim() == placements[b].shard_dim()) {
        return true;
      }
    }
  }
  return false;
}

// The whole-mesh cost of moving every input to `targets` with the real
// redistribute plans, as Note [Choosing among candidates] counts it (bytes
// per rank plus each collective's latency), then the number of collectives;
// nullopt when a plan is refused.
std::optional<std::pair<double, int>> planned_cost(const OpCall& call, const std::vector<Placements>& targets) {
  double cost = 0;
  int collectives = 0;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const DTensorSpec& in = call.inputs[i];
    if (in.placements == targets[i]) continue;
    try {
      const std::shared_ptr<const RedistributePlan> plan = redistribute_plan(in, targets[i]);
      for (const RedistributeStep& step : plan->steps) {
        cost += static_cast<double>(step.bytes_per_rank) + step_latency_bytes(step.kind, step.group_size);
      }
      collectives += plan->num_collectives();
    } catch (const c10::Error&) {
      return std::nullopt;
    }
  }
  return std::make_pair(cost, collectives);
}

// Note [Whole-mesh check of nested shards]
// Per-mesh-dim costs add up exactly except when a tensor dim is sharded on
// several mesh dims (S(0) on both dims of a 2x2 mesh): changing the outer one
// then needs the inner one undone first, a collective the per-dim estimate
// does not see. PyTorch enumerates whole-mesh strategies and finds e.g. "one
// all_to_all so that both mesh dims contract" where the per-dim choice
// planned two all_gathers (issue #18's differential test found it). So when an
// input or a chosen target nests shards, combinations of the per-dim
// candidates are costed with the real redistribute plans, and the cheapest
// replaces the per-dim pick (ties keep it, See Note [Whole-mesh ties keep fewer
// output shards] for near ties). The bound: per mesh dim only the
// k cheapest candidates by per-dim cost, k the largest with k^ndim <=
// kMaxCombinations (16 on a 2-D mesh, 6 on 3-D, 4 on 4-D), so a 3-D mesh
// with nine matmul candidates per dim is still checked (9^3 = 729 were
// skipped before: bmm of [P, P, R] by [P(avg), S(1), S(1)]). Paid on a
// sharding-cache miss only; ~kMaxCombinations cached plan lookups at most.
constexpr size_t kMaxCombinations = 256;

// What gathering every output whole would cost afterwards: the collectives,
// then the bytes per rank, of the plans to Replicate; a refused plan counts
// one collective per mesh dim.
std::pair<int, int64_t> gather_later_cost(const OpCall& call, const ShardingPlan& plan) {
  std::pair<int, int64_t> cost{0, 0};
  for (size_t o = 0; o < call.outputs.size() && o < plan.output_placements.size(); ++o) {
    const Placements& from = plan.output_placements[o];
    const Placements whole(from.size(), Placement(Replicate()));
    if (from == whole) continue;
    try {
      const std::shared_ptr<const RedistributePlan> later =
          redistribute_plan(DTensorSpec{call.mesh, from, call.outputs[o]}, whole);
      cost.first += later->num_collectives();
      cost.second += later->total_bytes_per_rank();
    } catch (const c10::Error&) {
      cost.first += call.mesh_ndim();
    }
  }
  return cost;
}

// Note [Whole-mesh ties keep outputs cheap to gather]
// Two whole-mesh plans that issue as many collectives and move nearly the
// same bytes (less than one collective's latency apart) cost the same now;
// what their outputs cost later then decides, since a result is usually read
// whole or laid out again: first the collectives of the plans to Replicate,
// then the bytes now, then the bytes of those plans. hypot of [R, S(1)] and
// [S(1), P(avg)] on 2x2 (g18_01561): [S(1), S(1)] and [R, S(1)] both need an
// all_gather and a reduce_scatter, 24 bytes apart; the former's
// redistribute to Replicate then gathers twice (PyTorch, following the
// first input, once). mul of [R, P(sum)] by [S(0), S(0)] (f18_0021, 12
// elements on 2x2): gathering the second operand's mesh dim 1 or
// reduce-scattering the first move 24 bytes each, and [S(0), P(sum)] then
// needs an all_reduce and an all_gather (96 bytes) where [S(0), S(0)] needs
// two all_gathers (72), or one over a flattened mesh; PyTorch picks the
// latter. Merges over flattened meshes are not counted: they fail for uneven
// nested shards, so counting them made mul of [6, 12] [S(1), S(1)] by
// [S(0), S(0)] move the padded uneven operand (f18_0121, 48 bytes more than
// PyTorch now and again in the backward). A difference of a latency or more
// still decides.
bool cheaper(const OpCall& call, const std::pair<double, int>& cost, const ShardingPlan& plan,
             const std::pair<double, int>& best, const ShardingPlan& best_plan) {
  if (cost.second != best.second || std::abs(cost.first - best.first) >= CommCostModel{}.latency_bytes(/*ring_steps=*/0)) {
    return cost < best;
  }
  const std::pair<int, int64_t> later = gather_later_cost(call, plan);
  const std::pair<int, int64_t> best_later = gather_later_cost(call, best_plan);
  if (later.first != best_later.first) return later.first < best_later.first;
  if (cost != best) return cost < best;
  return later.second < best_later.second;
}

void refine_nested(const OpCall& call, std::vector<std::vector<const DimStrategy*>> options,
                   ShardingPlan& plan) {
  bool any_nested = false;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    any_nested = any_nested || nested(call.inputs[i].placements) || nested(plan.input_placements[i]);
  }
  if (!any_nested) return;
  // The cheapest per-dim candidates only, so that at most kMaxCombinations are costed.
  size_t per_dim = 1;
  while (std::pow(static_cast<double>(per_dim + 1), static_cast<double>(options.size())) <= kMaxCombinations) ++per_dim;
  size_t combos = 1;
  for (auto& o : options) {
    if (o.size() > per_dim) o.resize(per_dim);
    combos *= std::max<size_t>(o.size(), 1);
  }
  if (combos <= 1) return;
  auto best = planned_cost(call, plan.input_placements);
  if (!best) return;
  std::vector<size_t> pick(options.size(), 0);
  for (size_t n = 0; n < combos; ++n) {
    size_t rest = n;
    for (size_t d = 0; d < options.size(); ++d) {
      pick[d] = rest % options[d].size();
      rest /= options[d].size();
    }
    ShardingPlan trial = plan;
    for (size_t d = 0; d < options.size(); ++d) {
      const DimStrategy& c = *options[d][pick[d]];
      for (size_t i = 0; i < call.inputs.size(); ++i) trial.input_placements[i][d] = c.inputs[i];
      for (size_t o = 0; o < call.outputs.size(); ++o) trial.output_placements[o][d] = c.outputs[o];
    }
    auto cost = planned_cost(call, trial.input_placements);
    if (cost && cheaper(call, *cost, trial, *best, plan)) {
      best = cost;
      plan = std::move(trial);
    }
  }
}

// Replaces the per-dim choices of `plan` by what it now holds, when a
// whole-mesh step (`why`) decided rather than the per-dim comparison.
void record_whole_mesh_choices(const OpCall& call, const char* why, ShardingPlan& plan) {
  for (int d = 0; d < call.mesh_ndim(); ++d) {
    DimStrategy chosen;
    for (const auto& p : plan.input_placements) chosen.inputs.push_back(p[static_cast<size_t>(d)]);
    for (const auto& p : plan.output_placements) chosen.outputs.push_back(p[static_cast<size_t>(d)]);
    plan.strategy_choices[static_cast<size_t>(d)] =
        StrategyChoice{strategy_text(chosen) + " (" + why + ")", strategy_cost(call, d, chosen), "", 0};
  }
}

// Note [Whole-mesh plan checks]
// PyTorch filters whole-mesh strategies (is_tensor_shardable); rules here
// choose per mesh dim, so a rule that must refuse some whole-mesh layouts
// (a channel dim of 2 split over a 2x2 mesh: 4 pieces, two empty) passes a
// PlanCheck. When the per-dim pick fails it, the combinations of per-dim
// candidates (the k cheapest per mesh dim, k^ndim <= kMaxCombinations) are
// costed and the cheapest it accepts is taken; all-Replicate is the last
// resort, except for an in-place op, whose per-dim plan (which keeps what it
// writes) then stands. The cost is the summed per-dim cost, except when an
// input nests shards: then, as in Note [Whole-mesh check of nested shards],
// the real redistribute plans compared as there (near ties keep fewer
// output shards), since undoing an outer split of a nested shard needs the
// inner one undone first (slice_scatter of [S(0), P(sum),
// S(0)] [2, 2] on 2x2x2, m18_0271: gathering mesh dim 0 costs two
// all_gathers, which the per-dim sum counted as one, so it was chosen over
// PyTorch's two collectives and issued three). Paid on a sharding-cache
// miss only.
void apply_plan_check(const OpCall& call, const std::vector<std::vector<std::pair<double, const DimStrategy*>>>& ranked,
                      const PlanCheck& check, ShardingPlan& plan) {
  if (check(call, plan.input_placements)) return;
  size_t per_dim = 1;
  while (std::pow(static_cast<double>(per_dim + 1), static_cast<double>(ranked.size())) <= kMaxCombinations) ++per_dim;
  std::vector<size_t> sizes;
  size_t combos = 1;
  for (const auto& r : ranked) {
    sizes.push_back(std::min(per_dim, r.size()));
    combos *= std::max<size_t>(sizes.back(), 1);
  }
  const bool inputs_nest = std::any_of(call.inputs.begin(), call.inputs.end(),
                                       [](const DTensorSpec& in) { return nested(in.placements); });
  double best_cost = kImpossible;
  ShardingPlan best;
  std::optional<std::pair<double, int>> best_planned;  // when inputs nest: cost, collectives
  std::vector<size_t> pick(ranked.size(), 0);
  for (size_t n = 0; n < combos; ++n) {
    size_t rest = n;
    double cost = 0;
    ShardingPlan trial = plan;
    for (size_t d = 0; d < ranked.size(); ++d) {
      if (sizes[d] == 0) continue;
      pick[d] = rest % sizes[d];
      rest /= sizes[d];
      const auto& [c_cost, c] = ranked[d][pick[d]];
      cost += c_cost;
      for (size_t i = 0; i < call.inputs.size(); ++i) trial.input_placements[i][d] = c->inputs[i];
      for (size_t o = 0; o < call.outputs.size(); ++o) trial.output_placements[o][d] = c->outputs[o];
    }
    if (inputs_nest) {
      if (cost == kImpossible || !check(call, trial.input_placements)) continue;
      const auto planned = planned_cost(call, trial.input_placements);
      if (!planned) continue;
      if (!best_planned || cheaper(call, *planned, trial, *best_planned, best)) {
        best_planned = planned;
        best_cost = planned->first;
        best = std::move(trial);
      }
    } else if (cost < best_cost && check(call, trial.input_placements)) {
      best_cost = cost;
      best = std::move(trial);
    }
  }
  if (best_cost < kImpossible) {
    best.strategy_choices = std::move(plan.strategy_choices);
    plan = std::move(best);
  } else if (call.self_input >= 0) {
    return;  // an in-place op cannot move what it writes: its per-dim plan stands
  } else {
    for (auto& p : plan.input_placements) std::fill(p.begin(), p.end(), Placement(Replicate()));
    for (auto& p : plan.output_placements) std::fill(p.begin(), p.end(), Placement(Replicate()));
  }
  record_whole_mesh_choices(call, "whole-mesh check", plan);
}

}  // namespace

ShardingPlan expand_per_mesh_dim(const OpCall& call, const DimRule& rule, const PlanCheck& check) {
  ShardingPlan plan;
  plan.input_placements.assign(call.inputs.size(), Placements(call.mesh_ndim()));
  plan.output_placements.assign(call.outputs.size(), Placements(call.mesh_ndim()));
  std::vector<std::vector<DimStrategy>> all(static_cast<size_t>(call.mesh_ndim()));
  std::vector<std::vector<std::pair<double, const DimStrategy*>>> ranked(static_cast<size_t>(call.mesh_ndim()));
  for (int d = 0; d < call.mesh_ndim(); ++d) {
    std::vector<DimStrategy>& candidates = all[static_cast<size_t>(d)];
    candidates = rule(call, d);
    const DimStrategy* best = nullptr;
    double best_cost = kImpossible;
    const DimStrategy* runner_up = nullptr;  // the cheapest rejected candidate
    double runner_up_cost = kImpossible;
    auto consider = [&](bool zero_fill) {
      for (const auto& c : candidates) {
        // A rule registered by base name may meet an overload it was not
        // written for (an out= form with several outs, say): say so.
        TORCH_CHECK(c.inputs.size() == call.inputs.size() && c.outputs.size() == call.outputs.size(),
                    call.describe(), ": its sharding rule was written for ", c.inputs.size(), " tensor inputs and ",
                    c.outputs.size(), " outputs, not this overload's ", call.inputs.size(), " and ",
                    call.outputs.size(), "; call the functional overload, or register a rule for this one with "
                    "dtensor::experimental::register_sharding");
        if (!keeps_self(call, d, c)) continue;
        if (call.out_placements != nullptr && !(c.outputs[0] == (*call.out_placements)[static_cast<size_t>(d)])) continue;
        double cost = strategy_cost(call, d, c, zero_fill);
        if (cost < kImpossible) ranked[static_cast<size_t>(d)].emplace_back(cost, &c);
        if (cost < best_cost) {
          if (best != nullptr && !(best->inputs == c.inputs && best->outputs == c.outputs)) {
            runner_up = best;
            runner_up_cost = best_cost;
          }
          best = &c;
          best_cost = cost;
        } else if (cost < runner_up_cost && !(best->inputs == c.inputs && best->outputs == c.outputs)) {
          runner_up = &c;
          runner_up_cost = cost;
        }
      }
    };
    consider(/*zero_fill=*/false);
    // Note [Written tensors zero-fill a sharded operand]: the last resort of a written tensor.
    if (best == nullptr && (call.self_input >= 0 || call.out_placements != nullptr)) consider(/*zero_fill=*/true);
    TORCH_CHECK(best != nullptr, call.describe(), ": no sharding strategy fits mesh dim ", d,
                call.self_input >= 0
                    ? " without changing the placement of the tensor written in place; "
                      "redistribute it first (e.g. to Replicate) or use the out-of-place op"
                : call.out_placements != nullptr
                    ? " with the out tensor's placement; redistribute out first or use the out-of-place op"
                    : "; redistribute the inputs first",
                ". Candidates:", candidates_text(candidates));
    for (size_t i = 0; i < call.inputs.size(); ++i) plan.input_placements[i][d] = best->inputs[i];
    for (size_t o = 0; o < call.outputs.size(); ++o) plan.output_placements[o][d] = best->outputs[o];
    StrategyChoice choice{strategy_text(*best), best_cost, "", 0};
    if (runner_up != nullptr) {
      choice.rejected = strategy_text(*runner_up);
      choice.rejected_cost = runner_up_cost;
    }
    plan.strategy_choices.push_back(std::move(choice));
  }
  for (auto& r : ranked) {
    std::stable_sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  if (call.mesh_ndim() > 1) {
    std::vector<std::vector<const DimStrategy*>> options(ranked.size());
    for (size_t d = 0; d < ranked.size(); ++d) {
      for (const auto& [cost, c] : ranked[d]) options[d].push_back(c);
    }
    const std::vector<Placements> per_dim_inputs = plan.input_placements;
    refine_nested(call, options, plan);
    // A whole-mesh choice (Note [Whole-mesh check of nested shards]): the
    // per-dim comparison is not what decided; say what was chosen only.
    if (plan.input_placements != per_dim_inputs) record_whole_mesh_choices(call, "whole-mesh choice", plan);
  }
  if (check) apply_plan_check(call, ranked, check, plan);
  return plan;
}

ShardingRule per_mesh_dim(DimRule rule, PlanCheck check) {
  return [rule = std::move(rule), check = std::move(check)](const OpCall& call) {
    return expand_per_mesh_dim(call, rule, check);
  };
}

ShardingRegistry& ShardingRegistry::global() {
  static ShardingRegistry* registry = new ShardingRegistry();  // never destroyed: used at exit
  return *registry;
}

void ShardingRegistry::add(const std::vector<std::string>& op_names, ShardingRule rule) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& name : op_names) rules_[name] = rule;
  ++generation_;
}

std::optional<ShardingRule> ShardingRegistry::find(const std::string& full_name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = rules_.find(full_name);
  if (it != rules_.end()) return it->second;
  auto dot = full_name.find('.');
  if (dot != std::string::npos) {
    it = rules_.find(full_name.substr(0, dot));
    if (it != rules_.end()) return it->second;
  }
  return std::nullopt;
}

std::optional<ShardingRule> ShardingRegistry::find_exact(const std::string& full_name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = rules_.find(full_name);
  if (it != rules_.end()) return it->second;
  return std::nullopt;
}

std::vector<std::string> ShardingRegistry::names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [name, rule] : rules_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

void ShardingRegistry::add_local_kernel(const std::string& name, LocalKernel kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  local_kernels_[name] = std::move(kernel);
  ++generation_;
}

std::optional<LocalKernel> ShardingRegistry::find_local_kernel(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = local_kernels_.find(name);
  if (it == local_kernels_.end()) return std::nullopt;
  return it->second;
}

uint64_t ShardingRegistry::generation() const { return generation_.load(std::memory_order_acquire); }

}  // namespace dtensor
