// DeviceMesh over explicit rank arrays (a subset of the world, any order),
// flattening dims, and the errors of both.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <string>

#include "backends/fake/fake_world.h"
#include "core/device_mesh.h"
#include "core/dtensor.h"
#include "testing/error_of.h"
#include "testing/collective_counter.h"

namespace dtensor {
namespace {

using testing::error_of;

TEST(DeviceMeshTest, ExplicitRankArraysPlaceRanksWhereTheArraySays) {
  run_fake_world(4, [](World& w) {
    // Rank 3 at (0, 0), rank 1 at (0, 1), rank 2 at (1, 0), rank 0 at (1, 1).
    auto mesh = DeviceMesh::from_ranks(c10::kCPU, {2, 2}, {3, 1, 2, 0}, {"dp", "tp"});
    const std::vector<std::vector<int64_t>> where = {{1, 1}, {0, 1}, {1, 0}, {0, 0}};
    EXPECT_EQ(mesh.get_coordinate(), where[static_cast<size_t>(w.rank())]);
    EXPECT_EQ(mesh.mesh_ranks(), (std::vector<int64_t>{3, 1, 2, 0}));
    EXPECT_EQ(mesh.to_string(), "DeviceMesh(cpu, Mesh(dp=2, tp=2), ranks [3, 1, 2, 0])");
    // The tp group of rank 3 is {3, 1}, in mesh order.
    if (w.rank() == 3) {
      EXPECT_EQ(mesh.communicator(1).group_ranks(), (std::vector<int64_t>{3, 1}));
    }
    EXPECT_EQ(mesh["tp"].mesh_ranks(), mesh.get_coordinate()[0] == 0
                                           ? (std::vector<int64_t>{3, 1})
                                           : (std::vector<int64_t>{2, 0}));

    at::Tensor global = torch::arange(16, torch::kFloat64).reshape({4, 4});
    DTensor d = distribute_tensor(global, mesh, {Shard(0), Shard(1)});
    const auto& c = mesh.get_coordinate();
    EXPECT_TRUE(at::equal(d.to_local(), global.slice(0, 2 * c[0], 2 * c[0] + 2).slice(1, 2 * c[1], 2 * c[1] + 2)));
    EXPECT_TRUE(at::equal(d.full_tensor(), global));
    // The same array as a tensor, as PyTorch's DeviceMesh("cpu", [[3, 1], [2, 0]]).
    auto same = DeviceMesh::from_tensor(c10::kCPU, torch::tensor({3, 1, 2, 0}).reshape({2, 2}), {"dp", "tp"});
    EXPECT_EQ(same, mesh);
    EXPECT_EQ(same.hash(), mesh.hash());
  });
}

TEST(DeviceMeshTest, SubsetMeshesCommunicateOnlyAmongTheirRanks) {
  run_fake_world(8, [](World& w) {
    // Two pipeline stages of 4 ranks; every rank builds both, as SPMD code does.
    auto first = DeviceMesh::from_ranks(c10::kCPU, {4}, {0, 1, 2, 3}, {"tp"});
    auto second = DeviceMesh::from_ranks(c10::kCPU, {4}, {4, 5, 6, 7}, {"tp"});
    const DeviceMesh& mine = w.rank() < 4 ? first : second;
    const DeviceMesh& other = w.rank() < 4 ? second : first;
    EXPECT_TRUE(mine.is_member());
    EXPECT_FALSE(other.is_member());
    EXPECT_NE(error_of([&] { other.get_coordinate(); })
                  .find("this rank is not in DeviceMesh(cpu, Mesh(tp=4)"),
              std::string::npos);
    EXPECT_NE(error_of([&] { distribute_tensor(torch::ones({4}), other, {Shard(0)}); })
                  .find("check is_member()"),
              std::string::npos);

    testing::CollectiveCounter counter(w);
    DTensor partial = DTensor::from_local(torch::full({2}, static_cast<double>(w.rank())), mine, {Partial()});
    const double stage_sum = w.rank() < 4 ? 0 + 1 + 2 + 3 : 4 + 5 + 6 + 7;
    EXPECT_TRUE(at::equal(partial.full_tensor(), torch::full({2}, stage_sum)));
    EXPECT_EQ(counter.counts(), (testing::Counts{{"all_reduce", 1}}));
  });
}

TEST(DeviceMeshTest, FlattenSpansEveryRankOfTheSlicedDims) {
  run_fake_world(8, [](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2, 2}, {"dp", "cp", "tp"});
    DeviceMesh dp_cp = mesh[{"dp", "cp"}].flatten();
    EXPECT_EQ(dp_cp.ndim(), 1);
    EXPECT_EQ(dp_cp.dim_names(), (std::vector<std::string>{"dp_cp"}));
    const int64_t tp = mesh.get_local_rank("tp");
    EXPECT_EQ(dp_cp.mesh_ranks(), (std::vector<int64_t>{tp, 2 + tp, 4 + tp, 6 + tp}));
    EXPECT_EQ(dp_cp.get_local_rank(0), mesh.get_local_rank("dp") * 2 + mesh.get_local_rank("cp"));
    EXPECT_EQ(mesh.flatten("world").dim_names(), (std::vector<std::string>{"world"}));

    // One all_reduce over the flattened dim = reducing over dp and cp.
    testing::CollectiveCounter counter(w);
    at::Tensor local = torch::full({3}, static_cast<double>(w.rank()));
    DTensor flat = DTensor::from_local(local, dp_cp, {Partial()});
    DTensor nested = DTensor::from_local(local, mesh[{"dp", "cp"}], {Partial(), Partial()});
    EXPECT_TRUE(at::equal(flat.full_tensor(), nested.full_tensor()));
    EXPECT_TRUE(at::equal(flat.full_tensor(), torch::full({3}, static_cast<double>(4 * tp + 12))));
    // The nested [P, P] -> R is one all_reduce too: dp_cp exists (Note
    // [Merged collectives over a flattened mesh]).
    EXPECT_EQ(counter.counts(), (testing::Counts{{"all_reduce", 3}})) << "1 flat + 1 nested merged, then 1 flat again";
  });
}

TEST(DeviceMeshTest, BadRankArraysSayWhatIsWrong) {
  run_fake_world(4, [](World&) {
    EXPECT_NE(error_of([] { DeviceMesh::from_ranks(c10::kCPU, {2}, {0, 0}); }).find("rank 0 appears twice"),
              std::string::npos);
    EXPECT_NE(error_of([] { DeviceMesh::from_ranks(c10::kCPU, {2}, {0, 4}); })
                  .find("rank 4 in [0, 4] is outside the world of 4 ranks"),
              std::string::npos);
    EXPECT_NE(error_of([] { DeviceMesh::from_ranks(c10::kCPU, {2, 2}, {0, 1, 2}); })
                  .find("needs 4 ranks, got 3"),
              std::string::npos);
    EXPECT_NE(error_of([] { DeviceMesh::from_tensor(c10::kCPU, torch::ones({2})); })
                  .find("must be an integer tensor"),
              std::string::npos);
  });
}

}  // namespace
}  // namespace dtensor
