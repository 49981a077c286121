// The kit on Gloo: the same test body runs on fake ranks and on Gloo rank
// processes started from this binary; a failing Gloo rank fails the test with
// its rank and message, and one that leaves early does not hang its peers.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "core/dtensor.h"
#include "testing/dtensor_test.h"
#include "tests/testing/capture.h"

namespace dtensor::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class BothBackendsTest : public DTensorTest {};

DTENSOR_TEST_P(BothBackendsTest, SameBodyOnEachBackend) {
  EXPECT_EQ(world().backend(), config().backend == TestBackend::kGloo ? BackendKind::kGloo : BackendKind::kFake);
  const at::Tensor ref = at::arange(24, at::kFloat).reshape({6, 4});
  DTensor x = distribute_tensor(ref, make_mesh(), {Shard(0)});
  EXPECT_PLACEMENTS(x, "S(0)");
  EXPECT_DTENSOR_EQ(x, ref, 0.0);
  EXPECT_COMM_COUNTS([&] { x.full_tensor(); }, {{"all_gather_into_tensor", 1}});
  DTensor y = x.redistribute({Replicate()});
  EXPECT_DTENSOR_EQ(y * 2, ref * 2, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Backends, BothBackendsTest,
                         ::testing::ValuesIn(rank_configs({{2}}, {TestBackend::kFake, TestBackend::kGloo})),
                         RankConfigName());

const RankConfig kGloo2{{2}, {}, TestBackend::kGloo};

// The statements after run_on_ranks run only in the parent: a rank process
// ends inside the call (see Note [Gloo rank processes]).
TEST(GlooRanksTest, FailingRankIsReportedWithRankAndMessage) {
  auto results = capture_results([] {
    run_on_ranks(kGloo2, [](World& world) {
      EXPECT_NE(world.rank(), 1) << "gloo rank one says no";
    });
  });
  ASSERT_EQ(results.size(), 1u) << all_messages(results);
  EXPECT_TRUE(results[0].failed());
  const std::string message = results[0].message();
  EXPECT_THAT(message, HasSubstr("Gloo job gloo (2) of GlooRanksTest.FailingRankIsReportedWithRankAndMessage failed"));
  EXPECT_THAT(message, HasSubstr("[rank 1] "));
  EXPECT_THAT(message, HasSubstr("gloo rank one says no"));
  EXPECT_THAT(message, Not(HasSubstr("[rank 0] ")));
}

TEST(GlooRanksTest, FatalFailureOnOneRankDoesNotHangThePeer) {
  RunOptions options;
  options.timeout = std::chrono::minutes(30);  // a hang would hit the job timeout instead
  options.job_timeout = std::chrono::minutes(30);
  auto results = capture_results([&] {
    run_on_ranks(
        kGloo2,
        [](World& world) {
          ASSERT_NE(world.rank(), 0) << "rank zero leaves";
          at::Tensor t = at::ones({2});
          world.world_group()->all_reduce(t);
        },
        options);
  });
  ASSERT_EQ(results.size(), 1u) << all_messages(results);
  EXPECT_THAT(results[0].message(), HasSubstr("[rank 0] "));
  EXPECT_THAT(results[0].message(), HasSubstr("rank zero leaves"));
  EXPECT_THAT(results[0].message(), HasSubstr("rank 0 failed first"));
}

TEST(GlooRanksTest, SecondGlooCallOfATestRunsInItsOwnProcesses) {
  int calls = 0;
  for (int value : {3, 5}) {
    ++calls;
    auto results = capture_results([&] {
      run_on_ranks(kGloo2, [value](World& world) {
        at::Tensor t = at::full({1}, static_cast<double>(value));
        world.world_group()->all_reduce(t);
        EXPECT_EQ(t.item<double>(), 2.0 * value);
      });
    });
    EXPECT_TRUE(results.empty()) << all_messages(results);
  }
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace dtensor::testing
