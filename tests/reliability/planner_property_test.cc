// Property test of the redistribute planner (layout/, no LibTorch): over
// random meshes (up to 4-D, sizes up to 8), shapes (with 0 and extents below
// the mesh size) and placement pairs, plan_redistribute always returns a
// valid plan or throws a LayoutError naming the placements, exactly when the
// transition is refused; plans are deterministic and never worse than
// PyTorch's greedy planner. Replay a failure with DTENSOR_TEST_SEED=<seed>.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "layout/layout_error.h"
#include "layout/redistribute_plan.h"
#include "layout/shard_layout.h"
#include "tests/reliability/property_util.h"

namespace dtensor::reliability {
namespace {

using ::testing::HasSubstr;

bool is_innermost(const Placements& state, const MeshShape& mesh, int i, int64_t d) {
  for (int j = i + 1; j < mesh.ndim(); ++j) {
    if (mesh.size(j) > 1 && state[static_cast<size_t>(j)].is_shard(d)) return false;
  }
  return true;
}

bool needs_collective(StepKind kind) {
  return kind == StepKind::kAllGather || kind == StepKind::kAllToAll ||
         kind == StepKind::kAllReduce || kind == StepKind::kReduceScatter;
}

// The reason `step` breaks Note [Redistribute step legality], or "" when legal.
// `check_products`: apply Note [No P(sum) under a pending P(product)] (the
// greedy reference, like PyTorch's planner, does not).
std::string step_problem(const RedistributeStep& step, const MeshShape& mesh, const Placements& goal,
                         bool check_products) {
  const int i = step.mesh_dim;
  if (i < 0 || i >= mesh.ndim()) return "mesh dim out of range";
  if (step.before.size() != static_cast<size_t>(mesh.ndim()) || step.after.size() != step.before.size())
    return "before/after have the wrong length";
  for (int j = 0; j < mesh.ndim(); ++j) {
    const bool same = step.before[static_cast<size_t>(j)] == step.after[static_cast<size_t>(j)];
    if (j == i && same) return "the step changes nothing";
    if (j != i && !same) return "the step changes another mesh dim too";
  }
  if (step.from != step.before[static_cast<size_t>(i)] || step.to != step.after[static_cast<size_t>(i)])
    return "from/to disagree with before/after";
  const Placement& a = step.from;
  const Placement& b = step.to;
  if (mesh.size(i) == 1) {
    return step.kind == StepKind::kLocalRelabel ? "" : "a size-1 mesh dim must relabel";
  }
  auto inner_in_before = [&](int64_t d) { return is_innermost(step.before, mesh, i, d); };
  std::optional<StepKind> want;
  if (a.is_shard() && b.is_replicate() && inner_in_before(a.shard_dim())) want = StepKind::kAllGather;
  if (a.is_shard() && b.is_shard() && inner_in_before(a.shard_dim()) && inner_in_before(b.shard_dim()))
    want = StepKind::kAllToAll;
  if (a.is_replicate() && b.is_shard() && inner_in_before(b.shard_dim())) want = StepKind::kLocalChunk;
  if (a.is_partial() && b.is_replicate()) want = StepKind::kAllReduce;
  if (a.is_partial() && b.is_shard() && inner_in_before(b.shard_dim())) want = StepKind::kReduceScatter;
  if (a.is_replicate() && b.is_partial() && b.reduce_op() != ReduceOp::kProduct) want = StepKind::kLocalPartition;
  // PyTorch 2.15's explicit-only zero-fill: only onto the plan's own P(sum) target.
  if (a.is_shard() && b.is_partial() && b.reduce_op() == ReduceOp::kSum &&
      inner_in_before(a.shard_dim()) && goal[static_cast<size_t>(i)] == b)
    want = StepKind::kLocalZeroFill;
  if (want == StepKind::kLocalPartition && b.reduce_op() == ReduceOp::kSum && check_products) {
    // Note [No P(sum) under a pending P(product)]: dividing the factors of a
    // pending product would divide the product by n^m.
    for (int j = 0; j < mesh.ndim(); ++j) {
      const Placement& other = step.before[static_cast<size_t>(j)];
      if (j != i && mesh.size(j) > 1 && other.is_partial() && other.reduce_op() == ReduceOp::kProduct)
        return "R -> P(sum) while mesh dim " + std::to_string(j) + " holds a pending P(product)";
    }
  }
  if (!want) return "no such edge in the legality table";
  if (*want != step.kind) return std::string("kind should be ") + step_kind_name(*want);
  return "";
}

// "" when `plan` is a valid plan from `from` to `to`, else what is wrong.
std::string plan_problem(const RedistributePlan& plan, const MeshShape& mesh, const Placements& from,
                         const Placements& to, bool check_products = true) {
  if (plan.from != from || plan.to != to) return "plan.from/to are not the normalized inputs";
  if (plan.steps.empty() != (from == to)) return "an empty plan must mean from == to";
  Placements state = from;
  int collectives = 0;
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const RedistributeStep& step = plan.steps[k];
    if (step.before != state) return "step " + std::to_string(k) + " does not start where the last ended";
    const std::string problem = step_problem(step, mesh, to, check_products);
    if (!problem.empty()) return "step " + std::to_string(k) + " (" + step.to_string() + "): " + problem;
    if (step.bytes_per_rank < 0) return "negative bytes";
    collectives += needs_collective(step.kind) ? 1 : 0;
    state = step.after;
  }
  if (state != to) return "the plan ends at " + to_string(state);
  if (collectives != plan.num_collectives()) return "num_collectives() disagrees with the steps";
  return "";
}

struct Counts {
  int plans = 0;
  int refusals = 0;
  int invalid_inputs = 0;
  int greedy_compared = 0;
  int greedy_wrong_under_product = 0;  // PyTorch's order divides a pending product
};

// One random case; returns false (after recording a gtest failure) on a
// violated property.
void check_case(PropertyRng& rng, bool allow_invalid, Counts& counts, const std::string& where) {
  const MeshShape mesh = random_mesh(rng, /*max_ndim=*/4, /*max_size=*/8);
  const std::vector<int64_t> shape = random_shape(rng, /*max_ndim=*/3, /*max_extent=*/12);
  const int64_t ndim = static_cast<int64_t>(shape.size());
  std::vector<ReduceOp> ops;
  if (coin(rng, 0.6)) ops.push_back(random_reduce_op(rng));
  if (coin(rng, 0.3)) ops.push_back(random_reduce_op(rng));
  const Placements from = random_placements(rng, mesh, ndim, ops, allow_invalid);
  const Placements to = random_placements(rng, mesh, ndim, ops, allow_invalid);
  const int64_t element_size = allow_invalid && coin(rng, 0.02) ? 0 : (coin(rng, 0.5) ? 4 : 2);
  const std::string what = where + ": " + to_string(from) + " -> " + to_string(to) + " shape " +
                           shape_string(shape) + " on " + mesh.to_string() + " element_size " +
                           std::to_string(element_size);
  SCOPED_TRACE(what);

  std::optional<Placements> norm_from, norm_to;
  try {
    norm_from = validate_placements(from, mesh, ndim);
    norm_to = validate_placements(to, mesh, ndim);
  } catch (const LayoutError&) {
  }
  const bool valid_input = norm_from && norm_to && element_size >= 1;
  std::optional<RedistributePlan> plan;
  std::string refusal;
  try {
    plan = plan_redistribute(shape, element_size, mesh, from, to);
  } catch (const LayoutError& e) {
    refusal = e.what();
  }
  // Any other exception type escapes and fails the test with its message.
  if (!valid_input) {
    ++counts.invalid_inputs;
    ASSERT_FALSE(plan.has_value()) << "invalid input was planned";
    EXPECT_THAT(refusal, HasSubstr("plan_redistribute"));
    return;
  }
  if (must_refuse(mesh, *norm_from, *norm_to)) {
    ++counts.refusals;
    ASSERT_FALSE(plan.has_value()) << "a refused transition was planned: " << plan->to_string();
    EXPECT_THAT(refusal, HasSubstr(to_string(*norm_from)));
    EXPECT_THAT(refusal, HasSubstr(to_string(*norm_to)));
    EXPECT_THAT(refusal, HasSubstr("mesh dim"));
    return;
  }
  ASSERT_TRUE(plan.has_value()) << "a legal transition was refused: " << refusal;
  ++counts.plans;
  const std::string problem = plan_problem(*plan, mesh, *norm_from, *norm_to);
  ASSERT_EQ(problem, "") << plan->to_string();
  // Deterministic: the same inputs give the same plan.
  EXPECT_EQ(plan_redistribute(shape, element_size, mesh, from, to).to_string(), plan->to_string());
  // Never worse than the greedy reference, by the planner's own order.
  const RedistributePlan greedy = greedy_reference_plan(shape, element_size, mesh, from, to);
  ASSERT_EQ(plan_problem(greedy, mesh, *norm_from, *norm_to, /*check_products=*/false), "")
      << "greedy reference: " << greedy.to_string();
  ++counts.greedy_compared;
  if (!plan_problem(greedy, mesh, *norm_from, *norm_to).empty()) ++counts.greedy_wrong_under_product;
  ASSERT_LE(plan->num_collectives(), greedy.num_collectives())
      << plan->to_string() << "\ngreedy: " << greedy.to_string();
  if (plan->num_collectives() == greedy.num_collectives()) {
    EXPECT_LE(plan->total_bytes_per_rank(), greedy.total_bytes_per_rank())
        << plan->to_string() << "\ngreedy: " << greedy.to_string();
  }
}

constexpr int kCases = 4000;

TEST(PlannerPropertyTest, RandomCasesPlanValidlyOrRefuseClearly) {
  const uint64_t seed = testing::test_seed(kPropertySeed);
  PropertyRng rng(seed);
  Counts counts;
  for (int c = 0; c < kCases && !HasFatalFailure(); ++c) {
    check_case(rng, /*allow_invalid=*/true, counts,
               "seed " + std::to_string(seed) + " case " + std::to_string(c));
    if (HasFailure()) break;  // one counterexample is enough to read
  }
  std::printf("planner property: seed %llu, %d cases: %d plans, %d refusals, %d invalid inputs, "
              "%d compared with greedy (%d greedy plans divide a pending P(product))\n",
              static_cast<unsigned long long>(seed), kCases, counts.plans, counts.refusals,
              counts.invalid_inputs, counts.greedy_compared, counts.greedy_wrong_under_product);
  EXPECT_GT(counts.plans, kCases / 4);
  EXPECT_GT(counts.refusals, 0);
  EXPECT_GT(counts.invalid_inputs, 0);
}

TEST(PlannerPropertyTest, LocalShapesOfEveryRankTileTheGlobalTensor) {
  // For every rank the block is inside the tensor, and over all ranks of a
  // shard-only layout the blocks cover each element exactly
  // (replicas) times; the inverse global_shape_from_local gives the shape back.
  const uint64_t seed = testing::test_seed(kPropertySeed) + 1;
  PropertyRng rng(seed);
  for (int c = 0; c < 1500 && !HasFailure(); ++c) {
    const MeshShape mesh = random_mesh(rng, 4, 8);
    if (mesh.num_ranks() > 512) continue;
    const std::vector<int64_t> shape = random_shape(rng, 3, 12);
    const Placements placements =
        random_placements(rng, mesh, static_cast<int64_t>(shape.size()), {}, false);
    SCOPED_TRACE("seed " + std::to_string(seed) + " case " + std::to_string(c) + ": " +
                 to_string(placements) + " shape " + shape_string(shape) + " on " + mesh.to_string());
    int64_t replicas = 1;
    for (int i = 0; i < mesh.ndim(); ++i) {
      if (!placements[static_cast<size_t>(i)].is_shard()) replicas *= mesh.size(i);
    }
    const int64_t numel = shape_numel(shape);
    int64_t covered = 0;
    std::vector<std::vector<int64_t>> local_shapes;
    for (int64_t r = 0; r < mesh.num_ranks(); ++r) {
      const ShardLayout block = local_shape_and_offset(shape, mesh, placements, r);
      ASSERT_EQ(block.local_shape.size(), shape.size());
      for (size_t d = 0; d < shape.size(); ++d) {
        ASSERT_GE(block.local_shape[d], 0);
        ASSERT_GE(block.global_offset[d], 0);
        ASSERT_LE(block.global_offset[d] + block.local_shape[d], shape[d]);
      }
      covered += shape_numel(block.local_shape);
      local_shapes.push_back(block.local_shape);
    }
    EXPECT_EQ(covered, numel * replicas);
    if (numel > 0) {
      EXPECT_EQ(global_shape_from_local(local_shapes, mesh, placements), shape);
    }
  }
}

}  // namespace
}  // namespace dtensor::reliability
