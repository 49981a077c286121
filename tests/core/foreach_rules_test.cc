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
#include <torch/version.h>

#include "backends/fake/fake_world.h"
#include "core/compat/torch_compat.h"
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
#if DTENSOR_TORCH_AT_LEAST(2, 1)
  EXPECT_EQ(element_of("aten::_foreach_addcdiv_", "Tensor"), "aten::addcdiv");  // scalars -> value
#endif
  EXPECT_EQ(element_of("aten::_foreach_norm", "Scalar"), "aten::linalg_vector_norm");
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

// _foreach_norm (gradient clipping): PyTorch 2.15 returns a _NormPartial per
// element and reduces it where it is used; clip_grad_norm_ stacks them and
// reduces once. Here (Note [Foreach norms]) elements sharded over the same
// mesh dims share one all_reduce; ord 1 and inf stay Partial, sending
// nothing. With grad, each element's norm is differentiable.
TEST(ForeachRulesTest, NormsShareOneReductionPerMeshDim) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    const std::vector<at::Tensor> g = {testing::seeded_randn({8, 3}, 1), testing::seeded_randn({4, 6}, 2),
                                       testing::seeded_randn({5}, 3), testing::seeded_randn({2, 8}, 4)};
    const std::vector<Placements> layouts = {{Shard(0), Replicate()}, {Shard(1), Replicate()},
                                             {Replicate(), Replicate()}, {Shard(1), Shard(0)}};
    std::vector<at::Tensor> xs;
    for (size_t i = 0; i < g.size(); ++i) xs.push_back(distribute_tensor(g[i], mesh, layouts[i]));
    struct Case {
      double ord;
      trace::KindCounts counts;
      Placement kind;  // the first element's result, on mesh dim 0
    };
    // ord 2: {0, 1} share mesh dim 0's all_reduce, element 3 reduces both dims.
    for (const Case& c : {Case{2.0, {{"all_reduce", 3}}, Replicate()}, Case{3.0, {{"all_reduce", 3}}, Replicate()},
                          Case{1.0, {}, Partial()}, Case{INFINITY, {}, Partial(ReduceOp::kMax)}}) {
      SCOPED_TRACE(c.ord);
      debug::CommDebugMode comm;
      std::vector<at::Tensor> norms = [&] {
        auto guard = comm.enter();
        return at::_foreach_norm(xs, c.ord);
      }();
      EXPECT_EQ(comm.get_comm_counts(), c.counts);
      EXPECT_EQ(DTensor(norms[0]).placements()[0], c.kind);
      for (size_t i = 0; i < g.size(); ++i) {
        EXPECT_TRUE(at::allclose(DTensor(norms[i]).full_tensor(), at::linalg_vector_norm(g[i], c.ord))) << i;
      }
    }
    std::vector<at::Tensor> leaves;
    for (const at::Tensor& x : xs) leaves.push_back(x.detach().requires_grad_(true));
    at::stack(at::_foreach_norm(leaves, 2.0)).sum().backward();
    for (size_t i = 0; i < g.size(); ++i) {
      at::Tensor plain = g[i].clone().requires_grad_(true);
      at::linalg_vector_norm(plain, 2.0).backward();
      EXPECT_TRUE(at::allclose(DTensor(leaves[i].grad()).full_tensor(), plain.grad())) << i;
    }
  });
}

// _foreach_addcdiv_ / _foreach_addcmul_ with a tensor of one scalar per
// element (Adam's capturable path): each element scaled by its own scalar.
// PyTorch 2.15 refuses a list of more than one ("Attempting to broadcast a
// dimension of length 2": its pointwise rule broadcasts `scalars` against
// every element); the scalars tensor is Replicate here.
TEST(ForeachRulesTest, AddcdivWithAScalarsTensorScalesEachElementByItsOwn) {
#if !DTENSOR_TORCH_AT_LEAST(2, 1)
  GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no _foreach_addcdiv_.Tensor";
#else
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    const std::vector<at::Tensor> g = globals();
    const at::Tensor scalars = at::tensor({0.5, -2.0, 3.0}, at::kDouble);
    for (bool mul : {false, true}) {
      SCOPED_TRACE(mul ? "addcmul" : "addcdiv");
      std::vector<at::Tensor> xs, t1, t2;
      const std::vector<Placement> ps = {Shard(0), Replicate(), Shard(1)};
      for (size_t i = 0; i < g.size(); ++i) {
        xs.push_back(distribute_tensor(g[i], mesh, {ps[i]}));
        t1.push_back(distribute_tensor(g[i] + 1, mesh, {ps[i]}));
        t2.push_back(distribute_tensor(g[i].abs() + 1, mesh, {ps[i]}));
      }
      DTensor s = distribute_tensor(scalars, mesh, {Replicate()});
      debug::CommDebugMode comm;
      {
        auto guard = comm.enter();
        if (mul) {
          at::_foreach_addcmul_(xs, t1, t2, s);
        } else {
          at::_foreach_addcdiv_(xs, t1, t2, s);
        }
      }
      EXPECT_EQ(comm.get_total_counts(), 0);
      for (size_t i = 0; i < g.size(); ++i) {
        const at::Tensor quotient = mul ? (g[i] + 1) * (g[i].abs() + 1) : (g[i] + 1) / (g[i].abs() + 1);
        EXPECT_EQ(DTensor(xs[i]).placements(), Placements{ps[i]});
        EXPECT_TRUE(at::allclose(DTensor(xs[i]).full_tensor(), g[i] + scalars[static_cast<int64_t>(i)] * quotient)) << i;
      }
    }
  });
#endif
}

// A shared Replicate argument the elements want laid out differently:
// _foreach_add.Tensor(xs, other) with xs [P(sum), R, P(avg)] and a 0-d other.
// The P(sum) element takes other as P(sum) (other / n on each rank), the
// others as it is; PyTorch 2.15 redistributes a shared argument per element
// (x18_0166: outputs [P(sum), R, P(avg)], no collective), and so does the
// element-by-element kernel here (Note [Foreach rules]). The in-place form
// likewise.
TEST(ForeachRulesTest, ASharedReplicateArgumentIsSlicedPerElement) {
#if !DTENSOR_TORCH_AT_LEAST(2, 1)
  GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no _foreach_add.Tensor";
#else
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    const std::vector<at::Tensor> local = {testing::seeded_randn({4, 3}, 1), testing::seeded_randn({5}, 2),
                                           testing::seeded_randn({2, 6}, 3)};
    const std::vector<Placements> layouts = {{Partial()}, {Replicate()}, {Partial(ReduceOp::kAvg)}};
    std::vector<at::Tensor> xs;
    for (size_t i = 0; i < local.size(); ++i) {
      xs.push_back(i == 1 ? distribute_tensor(local[i], mesh, layouts[i])
                          : DTensor::from_local(local[i], mesh, layouts[i]));
    }
    std::vector<at::Tensor> full;
    for (const at::Tensor& x : xs) full.push_back(DTensor(x).full_tensor().clone());  // a Replicate one aliases
    DTensor other = distribute_tensor(at::full({}, 0.75, at::kDouble), mesh, {Replicate()});
    debug::CommDebugMode comm;
    std::vector<at::Tensor> sums = [&] {
      auto guard = comm.enter();
      return at::_foreach_add(xs, other);
    }();
    EXPECT_EQ(comm.get_total_counts(), 0);
    for (size_t i = 0; i < xs.size(); ++i) {
      EXPECT_EQ(DTensor(sums[i]).placements(), layouts[i]) << i;
      EXPECT_TRUE(at::allclose(DTensor(sums[i]).full_tensor(), full[i] + 0.75)) << i;
    }
    at::_foreach_add_(xs, other);
    for (size_t i = 0; i < xs.size(); ++i) {
      EXPECT_EQ(DTensor(xs[i]).placements(), layouts[i]) << i;
      EXPECT_TRUE(at::allclose(DTensor(xs[i]).full_tensor(), full[i] + 0.75)) << i;
    }
  });
#endif
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
