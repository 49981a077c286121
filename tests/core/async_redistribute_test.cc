// redistribute(async_op = true) on the CPU fake world runs synchronously with
// the same values, placements, collectives (kind, mesh dim, bytes) and
// gradients as async_op = false, for every placement pair on a 2x2 mesh; and
// the deferred wait of DTensorImpl: a pending work is waited once, at the
// shard's first read (an op, to_local), shared by shallow copies, dropped by
// set_local_and_spec, and its failure reported once. The stream path itself
// runs on a GPU host (tests/backends/cuda). See Note [Async redistribution].
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "tests/core/test_util.h"

namespace dtensor {
namespace {

using testing::all_placement_lists;
using testing::public_redistribute_refuses;
using testing::trace;

// What a collective event says about the data moved, without the sequence
// number and timing: async and sync must issue the same.
std::vector<std::string> event_summaries(const testing::CollectiveCounter& counter) {
  std::vector<std::string> out;
  for (const CollectiveEvent& e : counter.events()) {
    out.push_back(std::string(collective_name(e.kind)) + " mesh_dim " +
                  std::to_string(e.mesh ? e.mesh->mesh_dim : -1) + " bytes " + std::to_string(e.input_bytes) +
                  "/" + std::to_string(e.output_bytes));
  }
  return out;
}

TEST(AsyncRedistributeTest, SameResultsCollectivesAndGradientsAsSynchronous) {
  const at::Tensor global = testing::seeded_randn({5, 6}, 11);
  const auto lists = all_placement_lists(2, {Replicate(), Shard(0), Shard(1), Partial()});
  int64_t expected_pairs = 0;
  for (const Placements& from : lists) {
    for (const Placements& to : lists) expected_pairs += public_redistribute_refuses(from, to) ? 0 : 1;
  }
  std::atomic<int64_t> pairs{0};
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    const at::Tensor weights = at::arange(30, at::kDouble).view({5, 6});
    for (const Placements& from : lists) {
      for (const Placements& to : lists) {
        if (public_redistribute_refuses(from, to)) continue;
        SCOPED_TRACE(trace(from, to, {5, 6}));
        std::vector<at::Tensor> locals, grads;
        std::vector<std::vector<std::string>> events;
        for (bool async_op : {false, true}) {
          DTensor x = distribute_tensor(global, mesh, from);
          x.requires_grad_(true);
          testing::CollectiveCounter counter(world);
          RedistributeOptions options;
          options.async_op = async_op;
          DTensor y = x.redistribute(to, options);
          EXPECT_FALSE(dtensor_impl(y)->has_pending()) << "the CPU has no streams: nothing is deferred";
          EXPECT_EQ(y.placements(), to);
          locals.push_back(y.to_local().detach());
          events.push_back(event_summaries(counter));
          y.full_tensor().mul(weights).sum().backward();
          grads.push_back(DTensor(x.grad()).full_tensor());
        }
        EXPECT_TRUE(at::equal(locals[0], locals[1]));
        EXPECT_EQ(events[0], events[1]);
        EXPECT_TRUE(at::equal(grads[0], grads[1]));
        if (world.rank() == 0) ++pairs;
      }
    }
  });
  EXPECT_EQ(pairs, expected_pairs);
  EXPECT_LT(expected_pairs, 256) << "new-Partial targets are refused and skipped";
}

// A work that counts its waits, and fails when told to.
class CountingWork final : public Work {
 public:
  explicit CountingWork(bool fail = false) : fail_(fail) {}
  void wait() override {
    ++waits;
    if (fail_) throw std::runtime_error("collective failed on rank 0");
  }
  bool is_completed() override { return waits > 0; }
  std::atomic<int> waits{0};

 private:
  bool fail_;
};

TEST(AsyncRedistributeTest, PendingWorkIsWaitedOnceAtTheFirstRead) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = DTensor::from_local(at::ones({2, 3}, at::kDouble), mesh, {Shard(0)});
    auto work = std::make_shared<CountingWork>();
    dtensor_impl(x)->set_pending(work);
    EXPECT_TRUE(dtensor_impl(x)->has_pending());
    EXPECT_EQ(work->waits, 0) << "setting the work must not wait";
    DTensor y = DTensor(x * 2);  // the kernel reads the shard: one wait
    EXPECT_EQ(work->waits, 1);
    EXPECT_FALSE(dtensor_impl(x)->has_pending());
    (void)x.to_local();
    (void)(x + 1);
    EXPECT_EQ(work->waits, 1) << "waited once, not at every read";
    EXPECT_TRUE(at::equal(y.to_local(), at::full({2, 3}, 2.0, at::kDouble)));
  });
}

TEST(AsyncRedistributeTest, ShallowCopiesShareThePendingWork) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = DTensor::from_local(at::ones({2, 3}, at::kDouble), mesh, {Shard(0)});
    auto work = std::make_shared<CountingWork>();
    dtensor_impl(x)->set_pending(work);
    at::Tensor copy = x.variable_data();  // shallow_copy_and_detach, no kernel
    EXPECT_TRUE(dtensor_impl(copy)->has_pending());
    (void)dtensor_impl(copy)->local();
    EXPECT_EQ(work->waits, 1);
    EXPECT_TRUE(dtensor_impl(x)->has_pending()) << "each holder waits before its own first read";
    (void)x.to_local();
    EXPECT_EQ(work->waits, 2);

    // A new shard does not come from the pending work: nothing to wait for.
    auto other = std::make_shared<CountingWork>();
    dtensor_impl(x)->set_pending(other);
    dtensor_impl(x)->set_local_and_spec(at::zeros({2, 3}, at::kDouble), x.spec());
    (void)x.to_local();
    EXPECT_EQ(other->waits, 0);
  });
}

TEST(AsyncRedistributeTest, AFailedPendingWorkIsReportedOnceAtTheFirstRead) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = DTensor::from_local(at::ones({2, 3}, at::kDouble), mesh, {Shard(0)});
    auto work = std::make_shared<CountingWork>(/*fail=*/true);
    dtensor_impl(x)->set_pending(work);
    EXPECT_THROW((void)x.to_local(), std::runtime_error);
    EXPECT_NO_THROW((void)x.to_local()) << "the failure is reported once";
    EXPECT_EQ(work->waits, 1);
  });
}

}  // namespace
}  // namespace dtensor
