// Capturing and re-reporting one rank's gtest results.
#include "testing/internal/rank_results.h"

#include <c10/util/Exception.h>
#include <c10/util/Type.h>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <typeinfo>

#include "backends/fake/world_status.h"

namespace dtensor::testing::internal {
namespace {

thread_local const RankConfig* current_config = nullptr;

bool is_failure(const ::testing::TestPartResult& result) { return result.failed(); }

}  // namespace

RankResults::Capture::Capture(RankResults& owner)
    : ::testing::ScopedFakeTestPartResultReporter(INTERCEPT_ONLY_CURRENT_THREAD, &owner.results_),
      owner_(owner) {}

void RankResults::Capture::ReportTestPartResult(const ::testing::TestPartResult& result) {
  if (owner_.echo_ && result.type() != ::testing::TestPartResult::kSuccess) {
    std::cout << format_result(owner_.rank_, result) << std::endl;
  }
  ScopedFakeTestPartResultReporter::ReportTestPartResult(result);
}

void RankResults::record_exception(const std::exception_ptr& error) {
  std::ostringstream out;
  out << "[rank " << rank_ << "] threw ";
  try {
    std::rethrow_exception(error);
  } catch (const RankFatalFailure&) {
    return;  // already reported as the fatal failure itself
  } catch (const PeerFailureError& e) {
    peer_failure_ = true;
    out << "PeerFailureError: " << e.what_without_backtrace();
  } catch (const c10::Error& e) {
    out << c10::demangle(typeid(e).name()) << ": " << e.what_without_backtrace();
  } catch (const std::exception& e) {
    out << c10::demangle(typeid(e).name()) << ": " << e.what();
  } catch (...) {
    out << "an exception of unknown type";
  }
  error_ = out.str();
  if (echo_) std::cout << *error_ << std::endl;
}

bool RankResults::has_fatal_failure() const {
  for (int i = 0; i < results_.size(); ++i) {
    if (results_.GetTestPartResult(i).fatally_failed()) return true;
  }
  return false;
}

bool RankResults::failed() const {
  for (int i = 0; i < results_.size(); ++i) {
    if (is_failure(results_.GetTestPartResult(i))) return true;
  }
  return error_.has_value() && !peer_failure_;
}

bool RankResults::skipped() const {
  for (int i = 0; i < results_.size(); ++i) {
    if (results_.GetTestPartResult(i).skipped()) return true;
  }
  return false;
}

void RankResults::report_here(bool include_peer_failure) const {
  const std::string prefix = "[rank " + std::to_string(rank_) + "] ";
  for (int i = 0; i < results_.size(); ++i) {
    const ::testing::TestPartResult& result = results_.GetTestPartResult(i);
    if (result.type() == ::testing::TestPartResult::kSuccess) continue;
    ::testing::internal::AssertHelper(result.type(), result.file_name(), result.line_number(),
                                      (prefix + result.message()).c_str()) = ::testing::Message();
  }
  if (error_ && (!peer_failure_ || include_peer_failure)) {
    ::testing::internal::AssertHelper(::testing::TestPartResult::kNonFatalFailure, /*file=*/nullptr, /*line=*/-1,
                                      error_->c_str()) = ::testing::Message();
  }
}

std::string format_result(int64_t rank, const ::testing::TestPartResult& result) {
  std::ostringstream out;
  out << "[rank " << rank << "] ";
  if (result.file_name() != nullptr) {
    out << result.file_name();
    if (result.line_number() >= 0) out << ":" << result.line_number();
    out << ": ";
  }
  out << (result.skipped() ? "Skipped" : result.failed() ? "Failure" : "Message") << "\n" << result.message();
  return out.str();
}

ScopedRankConfig::ScopedRankConfig(const RankConfig& config) : previous_(current_config) {
  current_config = &config;
}

ScopedRankConfig::~ScopedRankConfig() { current_config = previous_; }

const RankConfig* thread_rank_config() { return current_config; }

}  // namespace dtensor::testing::internal
