// The fake world's happy paths: the collective suite on 1..8 ranks (world
// group and sub-groups), per-rank worlds and generators, fixed reduction
// order, groups, and the events observers see.
#include "backends/fake/fake_world.h"

#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>

#include "tests/backends/collective_suite.h"

namespace dtensor {
namespace {

using std::chrono::milliseconds;

// Generous for a 2-core machine running 8 rank threads, short enough that a
// bug fails the test instead of hanging it.
FakeWorldOptions test_options() { return {/*timeout=*/milliseconds(20000)}; }

class FakeWorldSuiteTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(FakeWorldSuiteTest, EveryCollectiveMatchesTheSerialReferenceBitForBit) {
  run_fake_world(
      GetParam(), [](World& world) { testing::check_all_collectives(world); }, test_options());
}

TEST_P(FakeWorldSuiteTest, ExactValuesAlsoMatchWithTolerance) {
  testing::CollectiveSuiteOptions options;
  options.bit_exact = false;
  options.sub_groups = false;
  options.large = false;
  run_fake_world(
      GetParam(), [&](World& world) { testing::check_all_collectives(world, options); },
      test_options());
}

INSTANTIATE_TEST_SUITE_P(Ranks, FakeWorldSuiteTest, ::testing::Range<int64_t>(1, 9),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return std::to_string(info.param) + "Ranks";
                         });

TEST(FakeWorldTest, EachRankThreadHasItsOwnWorldAsCurrentWorld) {
  std::atomic<int> seen{0};
  EXPECT_EQ(current_world(), nullptr);
  run_fake_world(5, [&](World& world) {
    EXPECT_EQ(current_world(), &world);
    EXPECT_EQ(&require_current_world("test"), &world);
    EXPECT_EQ(world.size(), 5);
    EXPECT_EQ(world.backend(), BackendKind::kFake);
    EXPECT_EQ(world.device(), c10::Device(c10::kCPU));
    EXPECT_EQ(world.timeout(), milliseconds(30000));
    seen.fetch_or(1 << world.rank());
  });
  EXPECT_EQ(seen.load(), 0b11111);
  EXPECT_EQ(current_world(), nullptr);
}

TEST(FakeWorldTest, GeneratorsStartFromTheSeedOnEveryRankAndAreIndependent) {
  std::mutex mutex;
  std::vector<at::Tensor> draws(4);
  FakeWorldOptions options = test_options();
  options.seed = 1234;
  run_fake_world(
      4,
      [&](World& world) {
        at::Tensor first = at::randn({8}, world.generator());
        at::Tensor second = at::randn({8}, world.generator());
        EXPECT_FALSE(at::equal(first, second));
        std::lock_guard<std::mutex> lock(mutex);
        draws[static_cast<size_t>(world.rank())] = first;
      },
      options);
  for (const at::Tensor& draw : draws) EXPECT_TRUE(at::equal(draw, draws[0]));
  at::Tensor with_other_seed;
  run_fake_world(1, [&](World& world) { with_other_seed = at::randn({8}, world.generator()); });
  EXPECT_FALSE(at::equal(with_other_seed, draws[0]));
}

TEST(FakeWorldTest, ReductionsFollowGroupRankOrderWhereOrderChangesTheBits) {
  // Inputs where (a + b) + c != a + (b + c) for some element, so that only
  // the documented left-to-right order in group order reproduces the result.
  testing::CollectiveSuiteOptions suite;
  const std::vector<int64_t> shape = {4096};
  std::vector<at::Tensor> inputs;
  for (int64_t r = 0; r < 3; ++r)
    inputs.push_back(testing::suite_input(r, shape, at::kFloat, 1, false, suite));
  const at::Tensor forward = testing::serial_reduce(inputs, ReduceOp::kSum);
  const at::Tensor backward =
      testing::serial_reduce({inputs[2], inputs[1], inputs[0]}, ReduceOp::kSum);
  ASSERT_FALSE(at::equal(forward, backward)) << "inputs too tame to tell orders apart";
  for (const std::vector<int64_t>& group : {std::vector<int64_t>{0, 1, 2}, {2, 1, 0}}) {
    run_fake_world(
        3,
        [&](World& world) {
          auto comm = world.new_group(group);
          at::Tensor t = inputs[static_cast<size_t>(world.rank())].clone();
          comm->all_reduce(t);
          EXPECT_TRUE(at::equal(t, group[0] == 0 ? forward : backward));
        },
        test_options());
  }
}

TEST(FakeWorldTest, AvgIsTheSumDividedByTheGroupSize) {
  run_fake_world(
      3,
      [](World& world) {
        at::Tensor t = at::full({2}, static_cast<double>(world.rank() + 1), at::kDouble);
        world.world_group()->all_reduce(t, {ReduceOp::kAvg});
        EXPECT_TRUE(at::equal(t, at::full({2}, 2.0, at::kDouble)));
      },
      test_options());
}

TEST(FakeWorldTest, NewGroupWithTheSameRanksReturnsTheSameCommunicator) {
  run_fake_world(
      4,
      [](World& world) {
        auto all = world.world_group();
        EXPECT_EQ(world.new_group({0, 1, 2, 3}), all);
        const std::vector<int64_t> reversed = {3, 2, 1, 0};
        auto backwards = world.new_group(reversed);
        EXPECT_NE(backwards, all);
        EXPECT_EQ(backwards->rank(), 3 - world.rank());
        EXPECT_EQ(backwards->group_ranks(), reversed);
        EXPECT_STREQ(backwards->backend_name(), "fake");
        // Group order decides block order: group rank 0 (global rank 3) comes first.
        at::Tensor out = at::empty({4}, at::kLong);
        backwards->all_gather_into_tensor(out, at::full({1}, world.rank(), at::kLong));
        EXPECT_TRUE(at::equal(out, at::arange(3, -1, -1, at::kLong)));
      },
      test_options());
}

TEST(FakeWorldTest, UnevenAllToAllPlacesRowsInRankOrder) {
  run_fake_world(
      3,
      [](World& world) {
        const int64_t me = world.rank();
        // Rank i sends i + j + 1 rows of value 10 * i + j to rank j.
        std::vector<at::Tensor> blocks;
        AllToAllOptions options;
        for (int64_t j = 0; j < 3; ++j) {
          blocks.push_back(at::full({me + j + 1, 2}, 10 * me + j, at::kInt));
          options.input_split_sizes.push_back(me + j + 1);
          options.output_split_sizes.push_back(j + me + 1);
        }
        at::Tensor input = at::cat(blocks);
        at::Tensor output = at::empty({3 * me + 6, 2}, at::kInt);
        world.world_group()->all_to_all_single(output, input, options);
        std::vector<at::Tensor> expected;
        for (int64_t j = 0; j < 3; ++j)
          expected.push_back(at::full({j + me + 1, 2}, 10 * j + me, at::kInt));
        EXPECT_TRUE(at::equal(output, at::cat(expected)));
      },
      test_options());
}

TEST(FakeWorldTest, AsyncCollectivesReturnCompletedWork) {
  run_fake_world(
      2,
      [](World& world) {
        at::Tensor t = at::ones({3});
        WorkPtr work = world.world_group()->all_reduce(t, {ReduceOp::kSum, {}, /*async_op=*/true});
        EXPECT_TRUE(work->is_completed());  // documented: fake collectives complete synchronously
        work->wait();
        work->wait();  // waiting twice is fine
        EXPECT_TRUE(at::equal(t, at::full({3}, 2.0)));
      },
      test_options());
}

struct Recorder : CollectiveObserver {
  void on_collective(const CollectiveEvent& event) override { events.push_back(event); }
  std::vector<CollectiveEvent> events;
};

void issue_one_of_each(Communicator& comm) {
  const int64_t n = comm.size();
  at::Tensor t = at::ones({4, 8});
  at::Tensor gathered = at::empty({4 * n, 8});
  at::Tensor scattered = at::empty({4, 8});
  at::Tensor a2a = at::empty({4 * n, 8});
  comm.all_reduce(t, {ReduceOp::kMax});
  comm.all_gather_into_tensor(gathered, t);
  comm.reduce_scatter_tensor(scattered, gathered);
  comm.all_to_all_single(a2a, gathered);
  comm.broadcast(t, {/*root=*/1});
  std::vector<at::Tensor> inputs;
  if (comm.rank() == 0) inputs.assign(static_cast<size_t>(n), t);
  comm.scatter(scattered, inputs, {/*root=*/0});
  comm.barrier();
}

TEST(FakeWorldTest, ObserversSeeOneEventPerCollectiveOnlyOnTheirOwnRank) {
  run_fake_world(
      3,
      [](World& world) {
        Recorder recorder;
        auto registration = world.observers().add(&recorder);
        auto comm = world.world_group();
        issue_one_of_each(*comm);
        registration.reset();
        comm->barrier();  // not recorded any more
        const std::vector<CollectiveKind> kinds = {CollectiveKind::kAllReduce,
                                                   CollectiveKind::kAllGatherIntoTensor,
                                                   CollectiveKind::kReduceScatterTensor,
                                                   CollectiveKind::kAllToAllSingle,
                                                   CollectiveKind::kBroadcast,
                                                   CollectiveKind::kScatter,
                                                   CollectiveKind::kBarrier};
        ASSERT_EQ(recorder.events.size(), kinds.size());
        const int64_t block = 4 * 8 * 4;  // bytes of a float [4, 8]
        const std::vector<std::pair<int64_t, int64_t>> bytes = {
            {block, block},
            {block, 3 * block},
            {3 * block, block},
            {3 * block, 3 * block},
            {block, block},
            {world.rank() == 0 ? 3 * block : 0, block},
            {0, 0}};
        for (size_t i = 0; i < kinds.size(); ++i) {
          const CollectiveEvent& e = recorder.events[i];
          SCOPED_TRACE(e.to_string());
          EXPECT_EQ(e.kind, kinds[i]);
          EXPECT_EQ(e.seq, i);
          EXPECT_EQ(e.global_rank, world.rank());
          EXPECT_EQ(e.group_rank, world.rank());
          EXPECT_EQ(e.group_ranks, (std::vector<int64_t>{0, 1, 2}));
          EXPECT_EQ(e.input_bytes, bytes[i].first);
          EXPECT_EQ(e.output_bytes, bytes[i].second);
        }
        EXPECT_EQ(recorder.events[0].reduce_op, ReduceOp::kMax);
        EXPECT_EQ(recorder.events[4].root, 1);
      },
      test_options());
}

TEST(FakeWorldTest, SequenceNumbersArePerGroup) {
  run_fake_world(
      4,
      [](World& world) {
        Recorder recorder;
        auto registration = world.observers().add(&recorder);
        auto all = world.world_group();
        auto pair = world.new_group({world.rank() / 2 * 2, world.rank() / 2 * 2 + 1});
        all->barrier();
        pair->barrier();
        pair->barrier();
        all->barrier();
        ASSERT_EQ(recorder.events.size(), 4u);
        EXPECT_EQ(recorder.events[0].seq, 0u);
        EXPECT_EQ(recorder.events[1].seq, 0u);
        EXPECT_EQ(recorder.events[2].seq, 1u);
        EXPECT_EQ(recorder.events[3].seq, 1u);
        EXPECT_EQ(pair->sequence_number(), 2u);
      },
      test_options());
}

}  // namespace
}  // namespace dtensor
