// Solo mode: worlds of up to 65,536 ranks seen from one rank, correctly shaped
// outputs with the documented placeholder contents, meta tensors untouched,
// and error_on_collective.
#include "backends/solo/solo_world.h"

#include <ATen/Functions.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

namespace dtensor {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

struct Counter : CollectiveObserver {
  void on_collective(const CollectiveEvent& event) override { events.push_back(event); }
  std::vector<CollectiveEvent> events;
};

at::Tensor rows(int64_t n, int64_t cols, int64_t start) {
  return at::arange(start, start + n * cols, at::kFloat).reshape({n, cols});
}

TEST(SoloWorldTest, WorldsOfUpTo65536RanksHaveTheRightShapeOfGroups) {
  for (int64_t size : {1, 2, 7, 4096, 65536}) {
    SCOPED_TRACE(size);
    auto world = solo_world(size, size - 1);
    EXPECT_EQ(world->size(), size);
    EXPECT_EQ(world->rank(), size - 1);
    EXPECT_EQ(world->backend(), BackendKind::kSolo);
    auto all = world->world_group();
    EXPECT_EQ(all->size(), size);
    EXPECT_EQ(all->rank(), size - 1);
    EXPECT_STREQ(all->backend_name(), "solo");
  }
}

TEST(SoloWorldTest, MetaTensorsAllocateNothingEvenAtPetabyteScale) {
  SoloOptions options;
  options.device = c10::kMeta;
  auto world = solo_world(65536, 12345, options);
  EXPECT_EQ(world->device(), c10::Device(c10::kMeta));
  auto all = world->world_group();
  const auto meta = at::TensorOptions().dtype(at::kFloat).device(c10::kMeta);
  // 2^30 floats per rank: the gathered output alone would be 256 TiB.
  at::Tensor shard = at::empty({1 << 20, 1 << 10}, meta);
  at::Tensor full = at::empty({int64_t{65536} << 20, 1 << 10}, meta);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    all->all_gather_into_tensor(full, shard);
    all->reduce_scatter_tensor(shard, full);
    all->all_reduce(shard, {ReduceOp::kAvg});
    all->all_to_all_single(full, full);
    all->broadcast(shard, {/*root=*/3});
    all->scatter(shard, {}, {/*root=*/0});
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  EXPECT_TRUE(full.is_meta());
  EXPECT_EQ(full.sizes(), (std::vector<int64_t>{int64_t{65536} << 20, 1 << 10}));
  // Shapes are still validated.
  at::Tensor wrong = at::empty({3}, meta);
  EXPECT_THROW(all->all_gather_into_tensor(wrong, shard), c10::Error);
}

TEST(SoloWorldTest, AllReduceAndBroadcastLeaveTheTensorUnchanged) {
  auto comm = solo_world(8, 3)->world_group();
  at::Tensor t = rows(2, 3, 0);
  comm->all_reduce(t, {ReduceOp::kSum});
  EXPECT_TRUE(at::equal(t, rows(2, 3, 0)));
  comm->broadcast(t, {/*root=*/5});
  EXPECT_TRUE(at::equal(t, rows(2, 3, 0)));
}

TEST(SoloWorldTest, AllGatherRepeatsTheInputInEveryBlock) {
  auto comm = solo_world(4, 1)->world_group();
  at::Tensor input = rows(2, 3, 10);
  at::Tensor output = at::zeros({8, 3});
  comm->all_gather_into_tensor(output, input);
  EXPECT_TRUE(at::equal(output, at::cat({input, input, input, input})));
}

TEST(SoloWorldTest, ReduceScatterTakesThisRanksBlock) {
  auto comm = solo_world(4, 2)->world_group();
  at::Tensor input = rows(8, 3, 0);
  at::Tensor output = at::zeros({2, 3});
  comm->reduce_scatter_tensor(output, input, {ReduceOp::kMax});
  EXPECT_TRUE(at::equal(output, input.narrow(0, 4, 2)));
}

TEST(SoloWorldTest, AllToAllKeepsBlocksOfMatchingSizeAndZerosTheRest) {
  auto comm = solo_world(3, 1)->world_group();
  at::Tensor input = rows(6, 2, 1);             // sends 1, 2, 3 rows to ranks 0, 1, 2
  at::Tensor output = at::full({6, 2}, -1.0f);  // receives 2, 2, 2 rows
  AllToAllOptions options;
  options.input_split_sizes = {1, 2, 3};
  options.output_split_sizes = {2, 2, 2};
  comm->all_to_all_single(output, input, options);
  const at::Tensor expected =
      at::cat({at::zeros({2, 2}), input.narrow(0, 1, 2), at::zeros({2, 2})});
  EXPECT_TRUE(at::equal(output, expected));
}

TEST(SoloWorldTest, ScatterGivesTheRootItsInputAndOthersZeros) {
  auto root = solo_world(3, 2)->world_group();
  at::Tensor out = at::full({2, 2}, -1.0f);
  root->scatter(out, {rows(2, 2, 0), rows(2, 2, 4), rows(2, 2, 8)}, {/*root=*/2});
  EXPECT_TRUE(at::equal(out, rows(2, 2, 8)));
  auto other = solo_world(3, 0)->world_group();
  other->scatter(out, {}, {/*root=*/2});
  EXPECT_TRUE(at::equal(out, at::zeros({2, 2})));
}

TEST(SoloWorldTest, SubGroupsUseGroupRanks) {
  auto world = solo_world(16, 6);
  auto group = world->new_group({2, 6, 10, 14});
  EXPECT_EQ(group->rank(), 1);
  at::Tensor input = rows(8, 1, 0);
  at::Tensor output = at::zeros({2, 1});
  group->reduce_scatter_tensor(output, input);
  EXPECT_TRUE(at::equal(output, input.narrow(0, 2, 2)));
}

TEST(SoloWorldTest, ObserversSeeEveryCollective) {
  auto world = solo_world(65536, 7, {/*error_on_collective=*/false, c10::kMeta});
  Counter counter;
  auto registration = world->observers().add(&counter);
  auto comm = world->world_group();
  at::Tensor t = at::empty({4}, at::TensorOptions().device(c10::kMeta));
  comm->all_reduce(t);
  comm->barrier();
  ASSERT_EQ(counter.events.size(), 2u);
  EXPECT_EQ(counter.events[0].kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(counter.events[0].input_bytes, 16);
  EXPECT_EQ(counter.events[1].seq, 1u);
  EXPECT_EQ(counter.events[1].group_ranks.size(), 65536u);
}

TEST(SoloWorldTest, ErrorOnCollectiveNamesTheCollective) {
  SoloOptions options;
  options.error_on_collective = true;
  auto world = solo_world(4, 1, options);
  Counter counter;
  auto registration = world->observers().add(&counter);
  auto comm = world->world_group();
  at::Tensor t = at::ones({2});
  try {
    comm->all_reduce(t);
    ADD_FAILURE() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(),
                AllOf(HasSubstr("all_reduce on solo group [0, 1, 2, 3]"),
                      HasSubstr("error_on_collective")));
  }
  EXPECT_THROW(comm->barrier(), c10::Error);
  EXPECT_EQ(counter.events.size(), 2u);  // reported, then refused
  EXPECT_TRUE(at::equal(t, at::ones({2})));
}

TEST(SoloWorldTest, RunSoloWorldSetsTheCurrentWorld) {
  EXPECT_EQ(current_world(), nullptr);
  bool ran = false;
  run_solo_world(1024, 5, [&](World& world) {
    ran = true;
    EXPECT_EQ(current_world(), &world);
    EXPECT_EQ(world.rank(), 5);
    EXPECT_EQ(world.size(), 1024);
  });
  EXPECT_TRUE(ran);
  EXPECT_EQ(current_world(), nullptr);
}

TEST(SoloWorldTest, InvalidArgumentsAreRejected) {
  EXPECT_THROW(solo_world(0, 0), c10::Error);
  EXPECT_THROW(solo_world(4, 4), c10::Error);
  EXPECT_THROW(solo_world(4, -1), c10::Error);
  EXPECT_THROW(run_solo_world(4, 0, nullptr), c10::Error);
}

}  // namespace
}  // namespace dtensor
