// debug::visualize_sharding prints a DTensor's layout on one rank only.
#include "debug/visualize_sharding.h"

#include <gtest/gtest.h>
#include <torch/utils.h>

#include <atomic>
#include <sstream>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "layout/visualize_sharding.h"

namespace dtensor::debug {
namespace {

TEST(VisualizeShardingTest, RankZeroOfTheMeshPrints) {
  std::atomic<int> printed{0};
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor w = distribute_tensor(torch::ones({8, 4}), mesh, {Shard(0)});
    std::ostringstream out;
    bool did = visualize_sharding(w, "weight", out);
    EXPECT_EQ(did, world.rank() == 0);
    if (!did) {
      EXPECT_TRUE(out.str().empty());
      return;
    }
    ++printed;
    EXPECT_EQ(out.str(), dtensor::visualize_sharding({8, 4}, mesh.mesh_shape(), {Shard(0)}, "weight"));
    EXPECT_NE(out.str().find("| 6-7 "), std::string::npos) << out.str();
  });
  EXPECT_EQ(printed.load(), 1);
}

TEST(VisualizeShardingTest, ChosenRankPrintsOnTwoDimensionalMesh) {
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    DTensor w = distribute_tensor(torch::ones({4, 4}), mesh, {Shard(0), Shard(1)});
    std::ostringstream out;
    EXPECT_EQ(visualize_sharding(w, "", out, /*print_rank=*/3), world.rank() == 3);
    EXPECT_EQ(sharding_table(w),
              dtensor::visualize_sharding({4, 4}, mesh.mesh_shape(), {Shard(0), Shard(1)}));
  });
}

TEST(VisualizeShardingTest, ErrorsNameTheProblem) {
  EXPECT_THROW(sharding_table(torch::ones({2})), c10::Error);
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor t = distribute_tensor(torch::ones({2, 2, 2}), mesh, {Shard(0)});
    try {
      sharding_table(t);
      FAIL() << "expected an error for a 3-D tensor";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("1-D and 2-D"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace dtensor::debug
