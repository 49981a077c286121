// Run a GoogleTest body on every rank of a world: N fake ranks (threads), or
// N Gloo processes started from this test binary; gtest failures come back to
// the test as "[rank R] ..." failures. Part of //testing:gtest.
//   TEST(MyShardingTest, Mm) {
//     dtensor::testing::run_on_ranks(4, [](dtensor::World&) { EXPECT_EQ(dtensor::testing::world_size(), 4); });
//   }
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/world.h"
#include "core/device_mesh.h"

namespace dtensor::testing {

/// Where the ranks of a test run.
enum class TestBackend {
  kFake,  // threads of this process (backends/fake); always available
  kGloo,  // one process per rank, c10d Gloo on loopback (CPU)
};

/// "fake", "gloo".
const char* test_backend_name(TestBackend backend);

/// One world a test body runs on: a mesh shape (its product is the world
/// size) and a backend. Example: RankConfig{{2, 2}, {"dp", "tp"}, TestBackend::kGloo}.
struct RankConfig {
  std::vector<int64_t> mesh_shape = {1};
  /// Names of the mesh dims for make_mesh(); empty: default_dim_names(ndim).
  std::vector<std::string> dim_names;
  TestBackend backend = TestBackend::kFake;

  int64_t world_size() const;
  /// "fake_4", "gloo_2x2": a valid gtest parameter name.
  std::string name() const;
};

std::ostream& operator<<(std::ostream& out, const RankConfig& config);

/// {"tp"}, {"dp", "tp"}, {"pp", "dp", "tp"}, then "d0", "d1", ... for more dims.
std::vector<std::string> default_dim_names(size_t ndim);

/// How ranks run.
struct RunOptions {
  /// Timeout of each collective (fake: FakeWorldOptions::timeout; Gloo: the
  /// Gloo timeout). A rank that waits longer fails naming who is missing.
  std::chrono::milliseconds timeout{60000};
  /// Gloo only: the whole job is killed after this (a hung job fails the test).
  std::chrono::milliseconds job_timeout{240000};
  /// Fake only: seed of every rank's World::generator().
  uint64_t seed = 0;
};

// Note [Rank failures]
// Fake world: each rank thread runs the body under its own gtest result
// reporter (gtest-spi's per-thread interception), so assertions never race on
// gtest's state. When all ranks have ended, the main thread re-reports every
// failure, skip and message in rank order with "[rank R] " in front, at the
// original file and line. A fatal failure (ASSERT_*) that makes a rank return
// early is turned into an exception, so the fake world aborts: the other
// ranks' pending and later collectives fail at once (no hang) and those
// secondary errors are not reported. An exception that leaves the body is
// reported as "[rank R] threw <type>: <message>".
// Gloo: the test's binary is started once per rank with a gtest filter naming
// this test (see testing/internal/gloo_ranks.h); each rank prints its failures
// with the same prefix and exits non-zero, and the parent fails the test with
// the job's report (every rank's status and output).

/// Runs fn(world) on every rank of `config`'s world (see Note [Rank
/// failures]) and returns when all ranks ended. Call it from the test's main
/// thread. Inside fn: rank(), world_size(), config(), make_mesh().
/// Preconditions: config.world_size() >= 1. With TestBackend::kGloo the whole
/// test function also runs in every rank process, up to this call: keep
/// side effects before it cheap.
void run_on_ranks(const RankConfig& config, const std::function<void(World&)>& fn,
                  const RunOptions& options = {});
/// A 1-D world of `world_size` fake ranks. Example:
///   run_on_ranks(4, [](World& w) { ASSERT_EQ(w.size(), 4); });
void run_on_ranks(int64_t world_size, const std::function<void(World&)>& fn, const RunOptions& options = {});

/// The backends a test runs on by default: fake, plus those named in the
/// comma-separated environment variable DTENSOR_TEST_BACKENDS
/// (e.g. DTENSOR_TEST_BACKENDS=fake,gloo).
std::vector<TestBackend> test_backends();

/// Every mesh shape on every backend, for INSTANTIATE_TEST_SUITE_P. Example:
///   ::testing::ValuesIn(rank_configs({{4}, {2, 2}}))
std::vector<RankConfig> rank_configs(const std::vector<std::vector<int64_t>>& mesh_shapes,
                                     const std::vector<TestBackend>& backends = test_backends());

/// Names parametrised tests after RankConfig::name().
struct RankConfigName {
  std::string operator()(const ::testing::TestParamInfo<RankConfig>& info) const { return info.param.name(); }
};

// ---- inside a rank ----------------------------------------------------------

/// This rank's world. Precondition: called inside run_on_ranks (any thread
/// with a current world).
World& world();
/// This rank (0 .. world_size() - 1).
int64_t rank();
int64_t world_size();
/// The RankConfig being run; inside run_on_ranks(n, ...) a 1-D fake config.
const RankConfig& config();
/// A mesh of config().mesh_shape named config().dim_names (or the defaults).
DeviceMesh make_mesh();
/// A mesh of `shape` over this world. Example: make_mesh({2, 2}, {"dp", "tp"}).
DeviceMesh make_mesh(std::vector<int64_t> shape, std::vector<std::string> dim_names = {});

// ---- fixtures and macros -------------------------------------------------------

/// A value-parametrised fixture over RankConfig. Example:
///   class MlpTest : public dtensor::testing::DTensorTest {};
///   TEST_P(MlpTest, Forward) { run_on_ranks([](World&) { auto mesh = make_mesh(); ... }); }
///   INSTANTIATE_TEST_SUITE_P(Meshes, MlpTest, ::testing::ValuesIn(rank_configs({{4}, {2, 2}})),
///                            RankConfigName());
class DTensorTest : public ::testing::TestWithParam<RankConfig> {
 protected:
  /// run_on_ranks(GetParam(), fn, options).
  void run_on_ranks(const std::function<void(World&)>& fn, const RunOptions& options = {}) {
    ::dtensor::testing::run_on_ranks(GetParam(), fn, options);
  }
};

/// Runs `body` on a 1-D world of `world_size` ranks, once on every backend of
/// test_backends() (fake, and Gloo with DTENSOR_TEST_BACKENDS=fake,gloo).
void run_on_ranks_all_backends(int64_t world_size, const std::function<void()>& body);

}  // namespace dtensor::testing

#define DTENSOR_TEST_BODY_NAME_(suite, name) dtensor_test_body_##suite##_##name##_

/// DTENSOR_TEST(Suite, Name, world_size) { body }: a gtest TEST whose body
/// runs on every rank of a 1-D world of `world_size` fake ranks (and on Gloo
/// processes when DTENSOR_TEST_BACKENDS names gloo). The body is a void
/// function: ASSERT_* returns from it; use rank(), world(), make_mesh().
///   DTENSOR_TEST(Redistribute, ShardToReplicate, 4) {
///     auto mesh = dtensor::testing::make_mesh();
///     ...
///   }
#define DTENSOR_TEST(suite, name, world_size)                                                     \
  static void DTENSOR_TEST_BODY_NAME_(suite, name)();                                             \
  TEST(suite, name) {                                                                             \
    ::dtensor::testing::run_on_ranks_all_backends((world_size), &DTENSOR_TEST_BODY_NAME_(suite, name)); \
  }                                                                                               \
  static void DTENSOR_TEST_BODY_NAME_(suite, name)()

/// DTENSOR_TEST_P(Fixture, Name) { body }: TEST_P of a DTensorTest subclass
/// whose body runs on the ranks of GetParam() (use config(), make_mesh()).
#define DTENSOR_TEST_P(fixture, name)                                      \
  static void DTENSOR_TEST_BODY_NAME_(fixture, name)();                    \
  TEST_P(fixture, name) {                                                  \
    run_on_ranks([](::dtensor::World&) { DTENSOR_TEST_BODY_NAME_(fixture, name)(); }); \
  }                                                                        \
  static void DTENSOR_TEST_BODY_NAME_(fixture, name)()
