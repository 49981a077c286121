// The kit's assertions: EXPECT_DTENSOR_EQ gathers and explains a mismatch
// (rank, shapes, placements, max diff and where), EXPECT_PLACEMENTS,
// EXPECT_COMM_COUNTS on a block with a readable diff, and golden comm reports
// that DTENSOR_UPDATE_GOLDEN=1 regenerates.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/dtensor.h"
#include "debug/comm_debug_mode.h"
#include "debug/fake_world_trace.h"
#include "testing/dtensor_test.h"
#include "tests/testing/capture.h"

namespace dtensor::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

at::Tensor global_values() { return at::arange(32, at::kFloat).reshape({8, 4}); }

DTENSOR_TEST(DTensorEqTest, ShardedAndPartialEqualTheReference, 4) {
  const DeviceMesh mesh = make_mesh();
  const at::Tensor ref = global_values();
  EXPECT_DTENSOR_EQ(distribute_tensor(ref, mesh, {Shard(0)}), ref, 0.0);
  EXPECT_DTENSOR_EQ(distribute_tensor(ref, mesh, {Shard(1)}), ref, 0.0);
  EXPECT_DTENSOR_EQ(DTensor::from_local(at::ones({2, 2}), mesh, {Partial()}), at::full({2, 2}, 4.0), 0.0);
  EXPECT_DTENSOR_EQ(ref, ref.to(at::kDouble), 0.0);  // plain tensors and other dtypes compare too
  EXPECT_DTENSOR_EQ(distribute_tensor(ref, mesh, {Shard(0)}), ref + 1e-4, 1e-3);
}

TEST(DTensorEqTest, MismatchShowsRankShapesPlacementsAndMaxDiff) {
  auto results = capture_results([] {
    run_on_ranks(2, [](World&) {
      const at::Tensor ref = global_values();
      DTensor x = distribute_tensor(ref, make_mesh(), {Shard(0)});
      at::Tensor wrong = ref.clone();
      wrong[3][1] += 0.5;
      EXPECT_DTENSOR_EQ(x, wrong, 1e-6);
    });
  });
  ASSERT_EQ(results.size(), 2u) << all_messages(results);
  for (int r = 0; r < 2; ++r) {
    const std::string message = results[r].message();
    EXPECT_THAT(message, StartsWith("[rank " + std::to_string(r) + "] "));
    EXPECT_THAT(message, HasSubstr("on rank " + std::to_string(r) + " of 2"));
    EXPECT_THAT(message,
                HasSubstr("x: DTensor [S(0)] on DeviceMesh(cpu, Mesh(tp=2)), shape [8, 4] (local [4, 4]), Float"));
    EXPECT_THAT(message, HasSubstr("wrong: tensor, shape [8, 4], Float"));
    EXPECT_THAT(message, HasSubstr("max |x - wrong| = 0.5 at [3, 1] (13 vs 13.5)"));
    EXPECT_THAT(message, HasSubstr("1 of 32 elements differ by more than 1e-06"));
  }
}

TEST(DTensorEqTest, ShapeMismatchAndNaN) {
  auto results = capture_results([] {
    run_on_ranks(2, [](World&) {
      const at::Tensor ref = global_values();
      DTensor x = distribute_tensor(ref, make_mesh(), {Shard(1)});
      if (rank() == 0) {
        EXPECT_DTENSOR_EQ(x, ref.t(), 0.0);
      } else {
        EXPECT_DTENSOR_EQ(x, at::full({8, 4}, NAN), 0.0);
      }
      const at::Tensor nan = at::full({2}, NAN);
      EXPECT_DTENSOR_EQ(nan, nan, 0.0);  // NaN equals NaN
    });
  });
  ASSERT_EQ(results.size(), 2u) << all_messages(results);
  EXPECT_THAT(results[0].message(), HasSubstr("ref.t(): tensor, shape [4, 8]"));
  EXPECT_THAT(results[0].message(), HasSubstr("the shapes differ"));
  EXPECT_THAT(results[1].message(), HasSubstr("= inf"));
  EXPECT_THAT(results[1].message(), HasSubstr("32 of 32 elements"));
}

DTENSOR_TEST(PlacementsTest, TextAndValueForms, 4) {
  const DeviceMesh mesh = make_mesh({2, 2}, {"dp", "tp"});
  DTensor x = distribute_tensor(global_values(), mesh, {Shard(0), Replicate()});
  EXPECT_PLACEMENTS(x, "S(0),R");
  EXPECT_PLACEMENTS(x, "[S(0), R]");
  EXPECT_PLACEMENTS(x, (Placements{Shard(0), Replicate()}));
}

TEST(PlacementsTest, MismatchShowsBoth) {
  auto results = capture_results([] {
    run_on_ranks(2, [](World&) {
      DTensor x = distribute_tensor(global_values(), make_mesh(), {Shard(0)});
      EXPECT_PLACEMENTS(x, "R");
      EXPECT_PLACEMENTS(global_values(), "R");
      EXPECT_PLACEMENTS(x, "S(zero)");
    });
  });
  ASSERT_EQ(results.size(), 6u) << all_messages(results);
  EXPECT_THAT(results[0].message(), HasSubstr("actual:   [S(0)]\n  expected: [R]"));
  EXPECT_THAT(results[1].message(), HasSubstr("global_values() is not a DTensor"));
  EXPECT_THAT(results[2].message(), HasSubstr("cannot parse the expected placements"));
}

DTENSOR_TEST(CommCountsTest, BlockCountsItsCollectives, 4) {
  DTensor x = distribute_tensor(global_values(), make_mesh(), {Shard(0)});
  EXPECT_COMM_COUNTS([&] { x.full_tensor(); }, {{"all_gather_into_tensor", 1}});
  EXPECT_COMM_COUNTS([&] { x.redistribute({Shard(1)}); }, {{"all_to_all_single", 1}});
  EXPECT_COMM_COUNTS([] {}, {});
  debug::CommDebugMode comm;  // the object form still works
  {
    auto guard = comm.enter();
    x.full_tensor();
  }
  EXPECT_COMM_COUNTS(comm, {{"all_gather_into_tensor", 1}});
}

TEST(CommCountsTest, MismatchPrintsReadableDiff) {
  auto results = capture_results([] {
    run_on_ranks(2, [](World&) {
      DTensor x = distribute_tensor(global_values(), make_mesh(), {Shard(0)});
      EXPECT_COMM_COUNTS([&] { x.full_tensor(); }, {{"all_reduce", 1}});
    });
  });
  ASSERT_EQ(results.size(), 2u) << all_messages(results);
  const std::string message = results[1].message();
  EXPECT_THAT(message, StartsWith("[rank 1] comm counts [&] { x.full_tensor(); } differ from"));
  EXPECT_THAT(message, HasSubstr("\n  all_gather_into_tensor: 1 (expected 0)"));
  EXPECT_THAT(message, HasSubstr("\n  all_reduce: 0 (expected 1)"));
  EXPECT_THAT(message, HasSubstr("\n  actual:   {all_gather_into_tensor: 1}\n  expected: {all_reduce: 1}"));
}

// ---- strict mode (issue #21) ------------------------------------------------

DTENSOR_TEST(NoImplicitRedistributionTest, ExplicitRedistributionsPass, 4) {
  DTensor a = distribute_tensor(at::randn({64, 16}), make_mesh(), {Shard(0)});
  DTensor b = distribute_tensor(at::randn({16, 8}), make_mesh(), {Shard(0)});
  EXPECT_NO_IMPLICIT_REDISTRIBUTION(at::mm(a, b.redistribute({Replicate()})));
  EXPECT_NO_IMPLICIT_REDISTRIBUTION(a.full_tensor());
}

TEST(NoImplicitRedistributionTest, ImplicitOneFailsNamingTheCallSite) {
  auto results = capture_results([] {
    run_on_ranks(2, [](World&) {
      DTensor a = distribute_tensor(at::randn({64, 16}), make_mesh(), {Shard(0)});
      DTensor b = distribute_tensor(at::randn({16, 8}), make_mesh(), {Shard(0)});
      EXPECT_NO_IMPLICIT_REDISTRIBUTION(at::mm(a, b); at::mm(a, b));
    });
  });
  ASSERT_EQ(results.size(), 2u) << all_messages(results);
  const std::string message = results[0].message();
  EXPECT_THAT(message, HasSubstr("made 1 implicit redistribution (call sites):"));  // twice, one site
  EXPECT_THAT(message, HasSubstr("implicit redistribution of aten::mm input 1"));
  EXPECT_THAT(message, HasSubstr("[S(0)] -> [R]"));
  EXPECT_THAT(message, HasSubstr("all_gather_into_tensor on mesh dim 0 (S(0) -> R)"));
}

// ---- goldens ------------------------------------------------------------------

class GoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    path_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/kit_golden_" + std::to_string(getpid()) + ".json";
    std::remove(path_.c_str());
    unsetenv("DTENSOR_GOLDEN_DIR");
    unsetenv("DTENSOR_UPDATE_GOLDEN");
  }
  void TearDown() override {
    std::remove(path_.c_str());
    unsetenv("DTENSOR_UPDATE_GOLDEN");
  }
  // Each rank traces `reduces` all_reduces and checks them against the golden.
  std::vector<::testing::TestPartResult> check(int reduces) {
    const std::string path = path_;
    return capture_results([&] {
      run_on_ranks(2, [&](World& world) {
        debug::CommDebugMode comm;
        {
          auto guard = comm.enter();
          for (int i = 0; i < reduces; ++i) {
            at::Tensor t = at::ones({4});
            world.world_group()->all_reduce(t);
          }
        }
        EXPECT_MATCHES_GOLDEN(comm, path);
      });
    });
  }
  std::string path_;
};

TEST_F(GoldenTest, RegeneratesWithTheEnvironmentVariable) {
  auto missing = check(1);
  ASSERT_EQ(missing.size(), 2u) << all_messages(missing);
  EXPECT_THAT(missing[0].message(), HasSubstr("is missing; create it with DTENSOR_UPDATE_GOLDEN=1"));

  setenv("DTENSOR_UPDATE_GOLDEN", "1", 1);
  auto update = check(1);
  EXPECT_TRUE(update.empty()) << all_messages(update);
  unsetenv("DTENSOR_UPDATE_GOLDEN");
  std::ifstream file(path_);
  ASSERT_TRUE(file.good()) << path_ << " was not written";
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("\"program\": \"GoldenTest.RegeneratesWithTheEnvironmentVariable\""));
  EXPECT_THAT(text, HasSubstr("\"all_reduce\": 1"));

  auto same = check(1);
  EXPECT_TRUE(same.empty()) << all_messages(same);

  auto changed = check(2);
  ASSERT_EQ(changed.size(), 2u) << all_messages(changed);
  EXPECT_THAT(changed[0].message(), HasSubstr("differs from golden"));
  EXPECT_THAT(changed[0].message(), HasSubstr("counts[\"all_reduce\"]: expected 1, got 2"));

  setenv("DTENSOR_UPDATE_GOLDEN", "1", 1);
  auto regenerate = check(2);
  unsetenv("DTENSOR_UPDATE_GOLDEN");
  EXPECT_TRUE(regenerate.empty()) << all_messages(regenerate);
  auto after = check(2);
  EXPECT_TRUE(after.empty()) << all_messages(after);
}

TEST_F(GoldenTest, MergedFakeWorldTrace) {
  debug::FakeWorldTrace world_trace;
  auto traced = capture_results([&] {
    run_on_ranks(2, [&](World&) {
      DTensor x = distribute_tensor(global_values(), make_mesh(), {Shard(0)});
      debug::CommDebugMode comm(&world_trace);
      auto guard = comm.enter();
      x.full_tensor();
    });
  });
  ASSERT_TRUE(traced.empty()) << all_messages(traced);
  setenv("DTENSOR_UPDATE_GOLDEN", "1", 1);
  EXPECT_MATCHES_GOLDEN(world_trace, path_);
  unsetenv("DTENSOR_UPDATE_GOLDEN");
  EXPECT_MATCHES_GOLDEN(world_trace, path_);
  EXPECT_COMM_COUNTS(world_trace, {{"all_gather_into_tensor", 1}});
}

}  // namespace
}  // namespace dtensor::testing
