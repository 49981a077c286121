// Per-rank capture of gtest results and the rank's RankConfig, shared by the
// fake and Gloo runners of testing/ranks.h. See Note [Rank failures].
//   RankResults results(rank, /*echo=*/false);
//   { auto capture = results.capture(); fn(world); }   // on the rank's thread
//   results.report_here();                              // later, on the test's thread
#pragma once

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "testing/ranks.h"

namespace dtensor::testing::internal {

/// What one rank's body produced: gtest results and the exception it threw.
class RankResults {
 public:
  /// `echo`: also print each failure to stdout at once, "[rank R] file:line:
  /// Failure" (Gloo ranks, whose output the parent shows).
  RankResults(int64_t rank, bool echo) : rank_(rank), echo_(echo) {}

  /// Intercepts the calling thread's gtest results while alive.
  class Capture : public ::testing::ScopedFakeTestPartResultReporter {
   public:
    explicit Capture(RankResults& owner);
    void ReportTestPartResult(const ::testing::TestPartResult& result) override;

   private:
    RankResults& owner_;
  };
  std::unique_ptr<Capture> capture() { return std::make_unique<Capture>(*this); }

  /// Records an exception that left the body (call inside the catch).
  void record_exception(const std::exception_ptr& error);

  int64_t rank() const { return rank_; }
  bool has_fatal_failure() const;
  /// A failure, or an exception that is not a PeerFailureError.
  bool failed() const;
  bool skipped() const;
  /// The exception, when the body threw one: "[rank R] threw <type>: <what>".
  const std::optional<std::string>& error() const { return error_; }
  /// The body threw because another rank failed (PeerFailureError).
  bool peer_failure() const { return peer_failure_; }

  /// Re-reports every captured result on the calling thread (prefixed
  /// "[rank R] "), then the exception unless it is a peer failure or
  /// `include_peer_failure` is set.
  void report_here(bool include_peer_failure) const;

 private:
  int64_t rank_;
  bool echo_;
  ::testing::TestPartResultArray results_;
  std::optional<std::string> error_;
  bool peer_failure_ = false;
};

/// "[rank R] file:line: Failure\n<message>", as gtest prints one.
std::string format_result(int64_t rank, const ::testing::TestPartResult& result);

/// Makes `config` the calling thread's config() while alive.
class ScopedRankConfig {
 public:
  explicit ScopedRankConfig(const RankConfig& config);
  ~ScopedRankConfig();
  ScopedRankConfig(const ScopedRankConfig&) = delete;
  ScopedRankConfig& operator=(const ScopedRankConfig&) = delete;

 private:
  const RankConfig* previous_;
};

/// The calling thread's RankConfig, or nullptr outside run_on_ranks.
const RankConfig* thread_rank_config();

/// Thrown on a rank after its body returned with a fatal failure, so that the
/// fake world aborts the other ranks (see Note [Rank failures]).
class RankFatalFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dtensor::testing::internal
