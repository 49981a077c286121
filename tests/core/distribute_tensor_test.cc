// distribute_tensor's source data on N-D meshes: src_data_rank is a rank
// within each mesh dim's group, as in PyTorch (Note [src_data_rank is a group
// rank]); nullopt slices every rank's own copy.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <string>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using testing::error_of;

// What PyTorch 2.11 printed for the same program on 4 gloo processes:
//   [R, R], src_data_rank=1:   every rank [3, 3, 3, 3]
//   [S(0), R], src_data_rank=1 with arange(4) + 10 * rank: [30, 31] on ranks 0, 1; [32, 33] on 2, 3
TEST(DistributeTensorTest, SrcDataRankIsAGroupRankOnEveryMeshDim) {
  run_fake_world(4, [](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    DistributeOptions from_one;
    from_one.src_data_rank = 1;
    DTensor replicated = distribute_tensor(torch::full({4}, static_cast<double>(w.rank())), mesh,
                                           {Replicate(), Replicate()}, from_one);
    EXPECT_TRUE(at::equal(replicated.to_local(), torch::full({4}, 3.0)));
    DTensor sharded = distribute_tensor(torch::arange(4, torch::kFloat64) + 10 * w.rank(), mesh,
                                        {Shard(0), Replicate()}, from_one);
    at::Tensor expected = w.rank() < 2 ? torch::tensor({30.0, 31.0}, torch::kFloat64)
                                       : torch::tensor({32.0, 33.0}, torch::kFloat64);
    EXPECT_TRUE(at::equal(sharded.to_local(), expected)) << "rank " << w.rank();

    DistributeOptions own_copy;
    own_copy.src_data_rank = std::nullopt;
    DTensor local = distribute_tensor(torch::arange(4, torch::kFloat64) + 10 * w.rank(), mesh,
                                      {Shard(0), Replicate()}, own_copy);
    EXPECT_TRUE(at::equal(local.to_local(),
                          (torch::arange(4, torch::kFloat64) + 10 * w.rank()).slice(0, w.rank() / 2 * 2, w.rank() / 2 * 2 + 2)));
  });
}

TEST(DistributeTensorTest, SrcDataRankMustBeInEveryMeshDimsGroup) {
  run_fake_world(8, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 4});
    DistributeOptions from_three;
    from_three.src_data_rank = 3;  // a rank of the 4-wide dim, not of the 2-wide one
    try {
      distribute_tensor(torch::ones({8}), mesh, {Shard(0), Replicate()}, from_three);
      ADD_FAILURE() << "src_data_rank 3 on a (2, 4) mesh must be refused";
    } catch (const c10::Error& e) {
      const std::string message = e.what_without_backtrace();
      EXPECT_NE(message.find("src_data_rank 3 is not a rank of every mesh dim's group"), std::string::npos) << message;
      EXPECT_NE(message.find("pass 0 <= src_data_rank < 2"), std::string::npos) << message;
    }
  });
}

// PyTorch 2.15's from_local(grad_placements=...): the gradient of the local
// tensor is laid out as asked, here a partial sum (no all_reduce needed).
TEST(FromLocalTest, GradPlacementsLayOutTheLocalGradient) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    at::Tensor local = at::ones({2, 4}, at::kDouble).requires_grad_(true);
    FromLocalOptions partial_grad;
    partial_grad.grad_placements = Placements{Partial()};
    DTensor x = DTensor::from_local(local, mesh, {Replicate()}, partial_grad);
    x.sum().backward();
    // The Replicate gradient of ones, as a Partial(sum): half on each rank.
    EXPECT_TRUE(at::equal(local.grad(), at::full({2, 4}, 0.5, at::kDouble)));
    at::Tensor plain = at::ones({2, 4}, at::kDouble).requires_grad_(true);
    DTensor::from_local(plain, mesh, {Replicate()}).sum().backward();
    EXPECT_TRUE(at::equal(plain.grad(), at::ones({2, 4}, at::kDouble)));  // the default: Replicate
    // A layout that does not give the local shape is refused at once.
    FromLocalOptions replicated_grad;
    replicated_grad.grad_placements = Placements{Replicate()};
    const std::string error = testing::error_of([&] {
      DTensor::from_local(at::ones({2, 4}).requires_grad_(true), mesh, {Shard(0)}, replicated_grad);
    });
    for (const char* part : {"grad_placements [R]", "[4, 4]", "[2, 4]", "rank"}) {
      EXPECT_NE(error.find(part), std::string::npos) << part << " missing in: " << error;
    }
  });
}

TEST(AliasFormTest, EntryPointsTakeTheAliasFormOnNamedMeshes) {
  run_fake_world(4, [](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    at::Tensor global = torch::arange(24, torch::kFloat64).reshape({8, 3});
    DTensor by_alias = distribute_tensor(global, mesh, AliasSpec{{"dp", "tp"}, {}});
    EXPECT_EQ(by_alias.placements(), (Placements{Shard(0), Shard(0)}));
    EXPECT_TRUE(at::equal(by_alias.to_local(), distribute_tensor(global, mesh, {Shard(0), Shard(0)}).to_local()));
    EXPECT_EQ(by_alias.alias(), (AliasSpec{{"dp", "tp"}, {}}));

    DTensor moved = by_alias.redistribute(AliasSpec{{"None"}, {"tp"}});
    EXPECT_EQ(moved.placements(), (Placements{Replicate(), Shard(1)}));
    EXPECT_TRUE(at::equal(moved.full_tensor(), global));

    DTensor local = DTensor::from_local(torch::ones({2, 3}), mesh, AliasSpec{{"tp"}, {}});
    EXPECT_EQ(local.placements(), (Placements{Replicate(), Shard(0)}));
    EXPECT_EQ(local.sizes(), (c10::IntArrayRef{4, 3}));

    EXPECT_NE(error_of([&] { distribute_tensor(global, mesh, AliasSpec{{"dp"}}); })
                  .find("the alias ('dp',) has 1 entries but the tensor has 2 dims"),
              std::string::npos);
    EXPECT_NE(error_of([&] { distribute_tensor(global, mesh, AliasSpec{{"pp"}, {}}); }).find("pp"),
              std::string::npos);
    EXPECT_NE(error_of([&] { distribute_tensor(global, mesh, AliasSpec{{"tp", "dp"}, {}}); })
                  .find("distribute_tensor"),
              std::string::npos);
    DTensor partial = DTensor::from_local(torch::ones({2}), mesh, {Partial(), Replicate()});
    EXPECT_NE(error_of([&] { partial.alias(); }).find("DTensor::alias"), std::string::npos);
    (void)w;
  });
}

}  // namespace
}  // namespace dtensor
