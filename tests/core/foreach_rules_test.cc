// `_foreach_*` ops on DTensors, each element sharded by its per-tensor
// overload's rule (Note [Foreach rules]). The placements and collectives are
// PyTorch 2.15's for the same calls, measured by running it (2 ranks, xs =
// [S(0) [4, 3], R [5], S(1) [2, 6]], ys = [S(1), S(0), R]):
// _foreach_add(xs, ys) -> [S(0), S(0), S(1)] with 1 all_to_all;
// _foreach_mul_(xs, 2.0) keeps xs' placements, no collective;
// _foreach_add_(xs, ys, 0.5) keeps them with 1 all_to_all + 1 all_gather.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "backends/fake/fake_world.h"
#include "core/dispatch/foreach_rules.h"
#include "core/dtensor.h"
#include "debug/comm_debug_mode.h"
#include "testing/error_of.h"
#include "tests/core/test_util.h"

namespace dtensor {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::error_of;

std::optional<std::string> element_of(const char* name, const char* overload) {
  auto handle = c10::Dispatcher::singleton().findOp({name, overload});
  EXPECT_TRUE(handle.has_value()) << name << "." << overload;
  return handle ? foreach_element_overload(*handle) : std::nullopt;
}

TEST(ForeachRulesTest, PerTensorOverloadIsFoundByArgumentTypes) {
  EXPECT_EQ(element_of("aten::_foreach_add", "List"), "aten::add.Tensor");
  EXPECT_EQ(element_of("aten::_foreach_add", "Scalar"), "aten::add.Scalar");
  EXPECT_EQ(element_of("aten::_foreach_add_", "List"), "aten::add.Tensor");
  EXPECT_EQ(element_of("aten::_foreach_mul", "ScalarList"), "aten::mul.Scalar");
  EXPECT_EQ(element_of("aten::_foreach_sqrt", ""), "aten::sqrt");
  EXPECT_EQ(element_of("aten::add", "Tensor"), std::nullopt);
}

std::vector<at::Tensor> globals() {
  return {testing::seeded_randn({4, 3}, 1), testing::seeded_randn({5}, 2), testing::seeded_randn({2, 6}, 3)};
}

TEST(ForeachRulesTest, ElementsShardAsTheirPerTensorOpAsPyTorchDoes) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    const std::vector<at::Tensor> g = globals(), h = {g[0] * 3, g[1] - 1, g[2] + 2};
    auto lay = [&](const std::vector<at::Tensor>& ts, const std::vector<Placement>& ps) {
      std::vector<at::Tensor> out;
      for (size_t i = 0; i < ts.size(); ++i) out.push_back(distribute_tensor(ts[i], mesh, {ps[i]}));
      return out;
    };
    std::vector<at::Tensor> xs = lay(g, {Shard(0), Replicate(), Shard(1)});
    const std::vector<at::Tensor> ys = lay(h, {Shard(1), Shard(0), Replicate()});
    debug::CommDebugMode comm;
    std::vector<at::Tensor> sums = [&] {
      auto guard = comm.enter();
      return at::_foreach_add(xs, ys);
    }();
    ASSERT_EQ(sums.size(), 3u);
    const std::vector<Placement> want = {Shard(0), Shard(0), Shard(1)};
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(DTensor(sums[i]).placements(), Placements{want[i]}) << i;
      EXPECT_TRUE(at::allclose(DTensor(sums[i]).full_tensor(), g[i] + h[i])) << i;
    }
    EXPECT_EQ(comm.get_comm_counts(), (trace::KindCounts{{"all_to_all_single", 1}}));

    debug::CommDebugMode in_place;
    {
      auto guard = in_place.enter();
      at::_foreach_mul_(xs, 2.0);
    }
    EXPECT_EQ(in_place.get_total_counts(), 0);
    {
      auto guard = in_place.enter();
      at::_foreach_add_(xs, ys, 0.5);
    }
    EXPECT_EQ(in_place.get_comm_counts(), (trace::KindCounts{{"all_gather_into_tensor", 1}, {"all_to_all_single", 1}}));
    const std::vector<Placement> kept = {Shard(0), Replicate(), Shard(1)};
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(DTensor(xs[i]).placements(), Placements{kept[i]}) << i;
      EXPECT_TRUE(at::allclose(DTensor(xs[i]).full_tensor(), g[i] * 2 + h[i] * 0.5)) << i;
    }
  });
}

// _foreach_zero_ derives from the functional zero, which keeps every
// placement (zeros sum to zero); the functional fill replicates a Partial.
TEST(ForeachRulesTest, ZeroKeepsPlacementsAndFillReplicatesAPartial) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor rows = distribute_tensor(testing::seeded_randn({4, 3}, 1), mesh, {Shard(0)});
    DTensor partial = DTensor::from_local(testing::seeded_randn({3}, 2), mesh, {Partial()});
    debug::CommDebugMode comm;
    {
      auto guard = comm.enter();
      at::_foreach_zero_({rows, partial});
    }
    EXPECT_EQ(comm.get_total_counts(), 0);
    EXPECT_EQ(rows.placements(), Placements{Shard(0)});
    EXPECT_EQ(partial.placements(), Placements{Partial()});
    EXPECT_TRUE(at::equal(rows.full_tensor(), at::zeros({4, 3}, at::kDouble)));
    EXPECT_TRUE(at::equal(partial.full_tensor(), at::zeros({3}, at::kDouble)));
    DTensor filled = at::fill(DTensor::from_local(at::ones({3}, at::kDouble), mesh, {Partial()}), 2.5);
    EXPECT_EQ(filled.placements(), Placements{Replicate()});
    EXPECT_TRUE(at::equal(filled.full_tensor(), at::full({3}, 2.5, at::kDouble)));
  });
}

TEST(ForeachRulesTest, AnInPlaceElementThatCannotKeepItsPlacementIsAClearError) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    // sqrt of a Partial(sum) needs it reduced first, which an in-place op cannot do.
    std::vector<at::Tensor> xs = {distribute_tensor(testing::seeded_randn({4, 3}, 1), mesh, {Shard(0)}),
                                  distribute_tensor(testing::seeded_randn({4, 3}, 2), mesh, {Partial()})};
    EXPECT_THAT(error_of([&] { at::_foreach_sqrt_(xs); }),
                AllOf(HasSubstr("aten::_foreach_sqrt_"), HasSubstr("element 1"), HasSubstr("written in place")));
  });
}

}  // namespace
}  // namespace dtensor
