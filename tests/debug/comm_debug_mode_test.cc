// CommDebugMode counts what DTensor programs issue, per rank.
#include "debug/comm_debug_mode.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"

namespace dtensor::debug {
namespace {

using Counts = std::map<std::string, int64_t>;

TEST(CommDebugModeTest, CountsCollectivesOfShardedMatmul) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor x = distribute_tensor(torch::ones({8, 4}), mesh, {Shard(1)});
    DTensor w = distribute_tensor(torch::ones({4, 2}), mesh, {Shard(0)});
    CommDebugMode comm;
    {
      auto guard = comm.enter();
      DTensor y = torch::mm(x, w);  // contraction dim sharded: Partial, no comm
      EXPECT_TRUE(y.placements()[0].is_partial());
      at::Tensor full = y.full_tensor();  // Partial -> Replicate: one all_reduce
      EXPECT_TRUE(torch::equal(full, torch::full({8, 2}, 4.0)));
    }
    EXPECT_EQ(comm.get_comm_counts(), (Counts{{"all_reduce", 1}}));
    EXPECT_EQ(comm.get_total_counts(), 1);
    auto extra = x.full_tensor();  // after the guard: not counted
    EXPECT_EQ(comm.get_total_counts(), 1);
  });
}

TEST(CommDebugModeTest, EnteringAgainResetsCounts) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(torch::ones({4}), mesh, {Shard(0)});
    CommDebugMode comm;
    {
      auto guard = comm.enter();
      x.full_tensor();
      x.full_tensor();
    }
    EXPECT_EQ(comm.get_comm_counts(), (Counts{{"all_gather_into_tensor", 2}}));
    {
      auto guard = comm.enter();
    }
    EXPECT_EQ(comm.get_total_counts(), 0);
  });
}

TEST(CommDebugModeTest, EnterOutsideAWorldSaysHowToStartOne) {
  CommDebugMode comm;
  try {
    auto guard = comm.enter();
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("run_fake_world"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtensor::debug
