// core/collectives and the transition table agree with each other: for every
// redistribution between placement lists on (4) and (2, 2) meshes, with even,
// uneven and empty shapes, the collectives the executor really issues are the
// plan's collective steps in order: same kind (step_collective), same mesh
// dim (the event's tag), and the ring bytes of the real buffers equal the
// table's bytes_per_rank. Also: every DTensor path tags its collectives.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "backends/fake/fake_world.h"
#include "core/collectives.h"
#include "core/dtensor.h"
#include "layout/comm_cost.h"
#include "layout/transitions.h"
#include "core/redistribute.h"
#include "tests/core/test_util.h"

namespace dtensor {
namespace {

using testing::CollectiveCounter;

// Checks `events` against the collective steps of `plan`; "" when they agree.
std::string mismatch(const RedistributePlan& plan, const std::vector<CollectiveEvent>& events) {
  size_t next = 0;
  for (const RedistributeStep& step : plan.steps) {
    const std::optional<CollectiveKind> kind = step_collective(step.kind);
    if (!kind) continue;
    if (next >= events.size()) return "missing collective for " + step.to_string();
    const CollectiveEvent& e = events[next++];
    if (e.kind != *kind) return "kind " + std::string(collective_name(e.kind)) + " for " + step.to_string();
    if (!e.mesh || e.mesh->mesh_dim != step.mesh_dim) return "mesh dim tag for " + step.to_string();
    const int64_t bytes = ring_bytes_per_rank(e.kind, e.input_bytes, e.output_bytes,
                                              static_cast<int64_t>(e.group_ranks.size()));
    if (bytes != step.bytes_per_rank) {
      return "ring bytes " + std::to_string(bytes) + " of " + e.to_string() + " for " + step.to_string();
    }
  }
  if (next != events.size()) return "extra collective " + events[next].to_string();
  return "";
}

void check_all_pairs(const std::vector<int64_t>& mesh_shape, const std::vector<int64_t>& shape) {
  const int world = static_cast<int>(c10::multiply_integers(mesh_shape));
  run_fake_world(world, [&](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, mesh_shape);
    const Placements alphabet = testing::placement_alphabet(static_cast<int64_t>(shape.size()));
    const auto lists = testing::all_placement_lists(mesh.ndim(), alphabet);
    const at::Tensor full = torch::arange(c10::multiply_integers(shape), torch::kFloat).reshape(shape);
    int checked = 0;
    for (const Placements& from : lists) {
      DTensor x = distribute_tensor(full, mesh, from);
      for (const Placements& to : lists) {
        if (from == to) continue;
        const auto plan = redistribute_plan(x.spec(), to);
        CollectiveCounter counter(w);
        redistribute_local(x.to_local(), x.spec(), to);
        const std::string why = mismatch(*plan, counter.events());
        // Uneven pieces differ by rank except on rank 0, which holds the
        // largest torch.chunk piece of every dim: the size the table uses.
        if (w.rank() == 0) {
          EXPECT_EQ(why, "") << to_string(from) << " -> " << to_string(to) << " shape "
                             << c10::IntArrayRef(shape);
        }
        ++checked;
      }
    }
    EXPECT_EQ(checked, static_cast<int>(lists.size() * (lists.size() - 1)));
  });
}

TEST(CollectivesTest, ExecutorMatchesTransitionTableOnOneDimMesh) {
  for (const auto& shape : std::vector<std::vector<int64_t>>{{8, 4}, {5, 3}, {2, 7}, {0, 3}}) {
    check_all_pairs({4}, shape);
  }
}

TEST(CollectivesTest, ExecutorMatchesTransitionTableOnTwoDimMesh) {
  for (const auto& shape : std::vector<std::vector<int64_t>>{{8, 4}, {5, 3}, {3, 1}}) {
    check_all_pairs({2, 2}, shape);
  }
}

TEST(CollectivesTest, EveryDTensorPathTagsItsMeshDim) {
  run_fake_world(4, [](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    CollectiveCounter counter(w);
    DTensor x = distribute_tensor(torch::ones({4, 4}), mesh, {Shard(0), Replicate()},
                                  DistributeOptions{/*src_data_rank=*/0});  // scatter, broadcast
    x.redistribute({Replicate(), Replicate()});                             // all_gather on dp
    at::Tensor bucket = torch::ones({3});
    collectives::all_reduce_(bucket, mesh["tp"], 0, ReduceOp::kSum);
    std::vector<std::string> seen;
    for (const CollectiveEvent& e : counter.events()) {
      ASSERT_TRUE(e.mesh) << e.to_string();
      seen.push_back(std::string(collective_name(e.kind)) + "@" + e.mesh->dim_name() + "/" +
                     std::to_string(e.mesh->mesh_dim));
    }
    EXPECT_EQ(seen, (std::vector<std::string>{"scatter@dp/0", "broadcast@tp/1",
                                              "all_gather_into_tensor@dp/0", "all_reduce@tp/0"}));
    EXPECT_EQ(bucket[0].item<float>(), 2.0f);
  });
}

TEST(TransitionTableTest, RowsAndRefusals) {
  EXPECT_EQ(transition_kind(Shard(0), Replicate(), 4), StepKind::kAllGather);
  EXPECT_EQ(transition_kind(Shard(0), Shard(1), 4), StepKind::kAllToAll);
  EXPECT_EQ(transition_kind(Replicate(), Shard(1), 4), StepKind::kLocalChunk);
  EXPECT_EQ(transition_kind(Replicate(), Partial(ReduceOp::kAvg), 4), StepKind::kLocalPartition);
  EXPECT_EQ(transition_kind(Partial(), Replicate(), 4), StepKind::kAllReduce);
  EXPECT_EQ(transition_kind(Partial(ReduceOp::kMax), Shard(0), 4), StepKind::kReduceScatter);
  EXPECT_EQ(transition_kind(Shard(0), Partial(), 4), std::nullopt);
  EXPECT_EQ(transition_kind(Partial(), Partial(ReduceOp::kMax), 4), std::nullopt);
  EXPECT_EQ(transition_kind(Replicate(), Partial(ReduceOp::kMax), 4), StepKind::kLocalPartition);
  EXPECT_EQ(transition_kind(Replicate(), Partial(ReduceOp::kProduct), 4), std::nullopt);
  EXPECT_EQ(transition_kind(Replicate(), Partial(ReduceOp::kProduct), 1), StepKind::kLocalRelabel);
  // Nesting: mesh dim 0 cannot gather dim 0 while mesh dim 1 still splits it.
  const MeshShape mesh = MeshShape::create({2, 2});
  EXPECT_EQ(legal_step({Shard(0), Shard(0)}, mesh, 0, Replicate()), std::nullopt);
  EXPECT_EQ(legal_step({Shard(0), Shard(0)}, mesh, 1, Replicate()), StepKind::kAllGather);
  // Names come from the one collective vocabulary.
  for (StepKind k : {StepKind::kAllGather, StepKind::kAllToAll, StepKind::kAllReduce,
                     StepKind::kReduceScatter}) {
    ASSERT_TRUE(step_collective(k));
    EXPECT_STREQ(step_kind_name(k), collective_name(*step_collective(k)));
  }
  // Strategy cost: latency in bytes (a start and 3 ring steps) plus the ring
  // bytes; an all_reduce takes twice the steps; free and impossible changes.
  EXPECT_EQ(transition_cost_bytes({8}, 4, MeshShape::create({4}), {Shard(0)}, 0, Replicate()),
            250'000.0 + 3 * 25'000.0 + 24.0);
  EXPECT_EQ(transition_cost_bytes({8}, 4, MeshShape::create({4}), {Partial()}, 0, Replicate()),
            250'000.0 + 6 * 25'000.0 + 48.0);
  EXPECT_EQ(transition_cost_bytes({8}, 4, MeshShape::create({4}), {Replicate()}, 0, Shard(0)), 0.0);
  EXPECT_EQ(transition_cost_bytes({8}, 4, MeshShape::create({4}), {Shard(0)}, 0, Partial()),
            std::nullopt);
}

}  // namespace
}  // namespace dtensor
