// FromLocalOptions::run_check: ranks agreeing pass (and Replicate mesh dims
// take their first rank's data); ranks disagreeing on shape or dtype all
// raise the same error naming both ranks; gradients still flow.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <mutex>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "testing/collective_counter.h"

namespace dtensor {
namespace {

FromLocalOptions checked() {
  FromLocalOptions o;
  o.run_check = true;
  return o;
}

TEST(FromLocalCheckTest, AgreeingRanksTakeTheFirstRankOfEachReplicateDim) {
  run_fake_world(4, [](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    testing::CollectiveCounter counter(w);
    // Replicate along tp, but every rank's values differ: run_check fixes them.
    at::Tensor local = torch::full({2, 4}, static_cast<double>(w.rank()));
    DTensor d = DTensor::from_local(local, mesh, {Shard(0), Replicate()}, checked());
    const double first_along_tp = static_cast<double>(w.rank() / 2 * 2);
    EXPECT_TRUE(at::equal(d.to_local(), torch::full({2, 4}, first_along_tp)));
    EXPECT_TRUE(at::equal(local, torch::full({2, 4}, static_cast<double>(w.rank()))))
        << "the caller's tensor is not overwritten";
    // Two all_gathers per mesh dim (dims and dtype, then shapes), one broadcast.
    EXPECT_EQ(counter.counts(), (testing::Counts{{"all_gather_into_tensor", 4}, {"broadcast", 1}}));
    counter.clear();
    DTensor::from_local(local, mesh, {Shard(0), Replicate()});
    EXPECT_EQ(counter.total(), 0) << "no run_check, no communication";
  });
}

// Runs `make_local` on 4 ranks with run_check; returns every rank's error.
std::vector<std::string> errors_of(std::function<at::Tensor(int64_t rank)> make_local) {
  std::mutex mutex;
  std::vector<std::string> errors(4);
  run_fake_world(4, [&](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    try {
      DTensor::from_local(make_local(w.rank()), mesh, {Shard(0), Replicate()}, checked());
    } catch (const c10::Error& e) {
      std::lock_guard<std::mutex> lock(mutex);
      errors[static_cast<size_t>(w.rank())] = e.what_without_backtrace();
    }
  });
  return errors;
}

TEST(FromLocalCheckTest, DisagreeingShapesFailOnEveryRankWithTheSameStory) {
  const auto errors = errors_of([](int64_t rank) { return torch::ones({rank == 3 ? 3 : 2, 4}); });
  for (size_t r = 0; r < errors.size(); ++r) {
    SCOPED_TRACE(r);
    EXPECT_NE(errors[r].find("ranks disagree on the global shape"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("rank 0 has local [2, 4] (global [4, 4])"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("rank 3 has local [3, 4] (global [6, 4])"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("FromLocalOptions::shape"), std::string::npos) << errors[r];
  }
}

TEST(FromLocalCheckTest, DisagreeingDtypesFailOnEveryRank) {
  const auto errors = errors_of([](int64_t rank) {
    return torch::ones({2, 4}, rank == 2 ? torch::kDouble : torch::kFloat);
  });
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("rank 0 has a 2-D Float tensor, rank 2 has a 2-D Double tensor"),
              std::string::npos)
        << e;
  }
}

TEST(FromLocalCheckTest, GradientsFlowToTheLocalTensor) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    at::Tensor local = torch::ones({3, 2}, torch::requires_grad());
    DTensor d = DTensor::from_local(local, mesh, {Shard(0)}, checked());
    d.full_tensor().sum().backward();
    ASSERT_TRUE(local.grad().defined());
    EXPECT_TRUE(at::equal(local.grad(), torch::ones({3, 2})));
  });
}

}  // namespace
}  // namespace dtensor
