// The testing kit's rank runner on the fake world: failures on a rank come
// back to the test as "[rank R] ..." failures at the original line, a fatal
// assertion on one rank aborts the others (no hang), exceptions and early
// returns are reported, and DTENSOR_TEST / DTENSOR_TEST_P run their bodies on
// every rank of their configs.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "backends/fake/world_status.h"
#include "testing/dtensor_test.h"
#include "tests/testing/capture.h"

namespace dtensor::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Long enough that a hang would hit the test's own time limit instead of
// turning into a collective timeout error.
RunOptions no_timeout() {
  RunOptions options;
  options.timeout = std::chrono::minutes(30);
  return options;
}

void all_reduce_ones(World& world) {
  at::Tensor t = at::ones({2});
  world.world_group()->all_reduce(t);
  EXPECT_TRUE(at::equal(t, at::full({2}, static_cast<double>(world.size()))));
}

TEST(RunOnRanksTest, PassingBodyReportsNothing) {
  std::atomic<int> ran{0};
  auto results = capture_results([&] {
    run_on_ranks(4, [&](World& world) {
      all_reduce_ones(world);
      EXPECT_EQ(world.rank(), rank());
      EXPECT_EQ(world_size(), 4);
      ++ran;
    });
  });
  EXPECT_TRUE(results.empty()) << all_messages(results);
  EXPECT_EQ(ran.load(), 4);
}

TEST(RunOnRanksTest, FailingRankIsReportedWithRankAndMessage) {
  // gtest-spi form: the failure reaches this thread and names the rank.
  EXPECT_NONFATAL_FAILURE(run_on_ranks(4,
                                       [](World& world) {
                                         if (world.rank() == 2) ADD_FAILURE() << "boom on two";
                                       }),
                          "[rank 2] Failed\nboom on two");
  // In detail: one non-fatal failure, at this file, only for rank 2.
  const int line = __LINE__ + 3;
  auto results = capture_results([] {
    run_on_ranks(4, [](World& world) {
      EXPECT_NE(world.rank(), 2) << "boom on two";
    });
  });
  ASSERT_EQ(results.size(), 1u) << all_messages(results);
  EXPECT_TRUE(results[0].nonfatally_failed());
  EXPECT_THAT(results[0].message(), StartsWith("[rank 2] "));
  EXPECT_THAT(results[0].message(), HasSubstr("boom on two"));
  EXPECT_THAT(results[0].file_name(), HasSubstr("tests/testing/run_on_ranks_test.cc"));
  EXPECT_EQ(results[0].line_number(), line);
}

TEST(RunOnRanksTest, FailuresOfSeveralRanksComeInRankOrder) {
  auto results = capture_results([] {
    run_on_ranks(4, [](World& world) {
      all_reduce_ones(world);
      EXPECT_EQ(world.rank(), 0);
    });
  });
  ASSERT_EQ(results.size(), 3u) << all_messages(results);
  for (int r = 1; r <= 3; ++r) {
    EXPECT_THAT(results[r - 1].message(), StartsWith("[rank " + std::to_string(r) + "] "));
  }
}

TEST(RunOnRanksTest, FatalFailureOnOneRankAbortsTheOthers) {
  std::atomic<int> aborted{0};
  auto results = capture_results([&] {
    run_on_ranks(
        4,
        [&](World& world) {
          if (world.rank() == 1) {
            ASSERT_EQ(world.rank(), 0) << "fatal on rank one";
          }
          // Rank 1 never comes: the others must be released, not wait.
          at::Tensor t = at::ones({2});
          try {
            world.world_group()->all_reduce(t);
          } catch (const PeerFailureError&) {
            ++aborted;
            throw;
          }
          ADD_FAILURE() << "all_reduce completed without rank 1";
        },
        no_timeout());
  });
  ASSERT_EQ(results.size(), 1u) << all_messages(results);
  EXPECT_TRUE(results[0].fatally_failed());
  EXPECT_THAT(results[0].message(), StartsWith("[rank 1] "));
  EXPECT_THAT(results[0].message(), HasSubstr("fatal on rank one"));
  EXPECT_EQ(aborted.load(), 3);
}

TEST(RunOnRanksTest, FatalFailureFailsTheTestFatally) {
  EXPECT_FATAL_FAILURE(run_on_ranks(2,
                                    [](World& world) {
                                      ASSERT_TRUE(world.rank() == 0) << "rank one bails out";
                                      all_reduce_ones(world);
                                    }),
                       "[rank 1] ");
}

TEST(RunOnRanksTest, ExceptionIsReportedWithRankAndType) {
  auto results = capture_results([] {
    run_on_ranks(
        4,
        [](World& world) {
          if (world.rank() == 3) throw std::runtime_error("kaboom");
          all_reduce_ones(world);
        },
        no_timeout());
  });
  ASSERT_EQ(results.size(), 1u) << all_messages(results);
  EXPECT_THAT(results[0].message(), HasSubstr("[rank 3] threw std::runtime_error: kaboom"));
}

TEST(RunOnRanksTest, EarlyReturnWithoutFailureIsReportedByAWaitingRank) {
  auto results = capture_results([] {
    run_on_ranks(
        3,
        [](World& world) {
          if (world.rank() == 0) return;  // a bug: skips the collective
          all_reduce_ones(world);
        },
        no_timeout());
  });
  // Rank 1, rank 2 or both notice first (a root error each); never a timeout.
  ASSERT_GE(results.size(), 1u);
  ASSERT_LE(results.size(), 2u) << all_messages(results);
  for (const auto& r : results) {
    EXPECT_THAT(r.message(), ::testing::ContainsRegex("^\\[rank [12]\\] threw "));
    EXPECT_THAT(r.message(), HasSubstr("global rank 0 returned from its function without issuing all_reduce"));
    EXPECT_THAT(r.message(), Not(HasSubstr("timed out")));
  }
}

TEST(RunOnRanksTest, SkipOnEveryRankSkips) {
  auto results = capture_results([] { run_on_ranks(2, [](World&) { GTEST_SKIP() << "not today"; }); });
  ASSERT_EQ(results.size(), 2u) << all_messages(results);
  for (const auto& r : results) EXPECT_TRUE(r.skipped());
}

TEST(RunOnRanksTest, ConfigAndMeshInsideRanks) {
  auto results = capture_results([] {
    run_on_ranks(RankConfig{{2, 3}, {"dp", "tp"}, TestBackend::kFake}, [](World&) {
      EXPECT_EQ(world_size(), 6);
      EXPECT_EQ(config().name(), "fake_2x3");
      DeviceMesh mesh = make_mesh();
      EXPECT_EQ(mesh.shape(), (std::vector<int64_t>{2, 3}));
      EXPECT_EQ(mesh.dim_names(), (std::vector<std::string>{"dp", "tp"}));
      EXPECT_EQ(mesh["tp"].size(), 3);
    });
  });
  EXPECT_TRUE(results.empty()) << all_messages(results);
}

TEST(RankConfigTest, NamesAndBackends) {
  auto configs = rank_configs({{4}, {2, 2}}, {TestBackend::kFake, TestBackend::kGloo});
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_EQ(configs[0].name(), "fake_4");
  EXPECT_EQ(configs[1].name(), "fake_2x2");
  EXPECT_EQ(configs[3].name(), "gloo_2x2");
  EXPECT_EQ(configs[1].world_size(), 4);
  EXPECT_EQ(default_dim_names(2), (std::vector<std::string>{"dp", "tp"}));

  const char* saved = std::getenv("DTENSOR_TEST_BACKENDS");
  const std::string saved_value = saved == nullptr ? "" : saved;
  setenv("DTENSOR_TEST_BACKENDS", "fake,gloo", 1);
  EXPECT_EQ(test_backends(), (std::vector<TestBackend>{TestBackend::kFake, TestBackend::kGloo}));
  setenv("DTENSOR_TEST_BACKENDS", "tpu", 1);
  EXPECT_THROW(test_backends(), c10::Error);
  unsetenv("DTENSOR_TEST_BACKENDS");
  EXPECT_EQ(test_backends(), (std::vector<TestBackend>{TestBackend::kFake}));
  if (saved != nullptr) setenv("DTENSOR_TEST_BACKENDS", saved_value.c_str(), 1);
}

// ---- the macros, as users write them ------------------------------------------

DTENSOR_TEST(DTensorTestMacro, BodyRunsOnEveryRank, 4) {
  all_reduce_ones(world());  // completes only if all 4 ranks run the body
  EXPECT_EQ(config().world_size(), 4);
  EXPECT_EQ(make_mesh().dim_names(), (std::vector<std::string>{"tp"}));
}

class KitParamTest : public DTensorTest {};

DTENSOR_TEST_P(KitParamTest, MeshFollowsTheConfig) {
  EXPECT_EQ(make_mesh().shape(), config().mesh_shape);
  all_reduce_ones(world());
}

INSTANTIATE_TEST_SUITE_P(Meshes, KitParamTest,
                         ::testing::ValuesIn(rank_configs({{1}, {4}, {2, 2}, {2, 1, 2}}, {TestBackend::kFake})),
                         RankConfigName());

}  // namespace
}  // namespace dtensor::testing
