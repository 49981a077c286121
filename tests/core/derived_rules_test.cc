// Rules derived for out= and in-place overloads from the functional
// overload's rule (Note [Derived rules: out= and in-place overloads]): the
// out tensor keeps its placements and the inputs move as PyTorch 2.15 moves
// them (its counts, measured: torch.add(a, b, out=c) on 2 ranks with a, b
// Shard(0) issues nothing for c Shard(0), 2 all_gathers for c Replicate and 2
// all_to_alls for c Shard(1)); values equal the plain ops'.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "backends/fake/fake_world.h"
#include "core/compat/torch_compat.h"
#include "core/dispatch/derived_rules.h"
#include "core/dtensor.h"
#include "debug/comm_debug_mode.h"
#include "testing/error_of.h"
#include "tests/core/test_util.h"

namespace dtensor {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::error_of;

std::optional<std::string> functional_of(const char* name, const char* overload) {
  auto handle = c10::Dispatcher::singleton().findOp({name, overload});
  EXPECT_TRUE(handle.has_value()) << name << "." << overload;
  return handle ? functional_overload(*handle) : std::nullopt;
}

TEST(DerivedRulesTest, FunctionalOverloadIsFoundBySchema) {
  EXPECT_EQ(functional_of("aten::add", "out"), "aten::add.Tensor");
  EXPECT_EQ(functional_of("aten::add", "Scalar_out"), "aten::add.Scalar");
  EXPECT_EQ(functional_of("aten::add_", "Tensor"), "aten::add.Tensor");
  EXPECT_EQ(functional_of("aten::sigmoid_backward", "grad_input"), "aten::sigmoid_backward");
  EXPECT_EQ(functional_of("aten::mm", "out"), "aten::mm");
  EXPECT_EQ(functional_of("aten::add", "Tensor"), std::nullopt);   // functional itself
  EXPECT_EQ(functional_of("aten::max", "dim_max"), "aten::max.dim");  // two outs
  EXPECT_EQ(functional_of("aten::var_mean", "correction_out"), "aten::var_mean.correction");
}

TEST(DerivedRulesTest, OutKeepsItsPlacementsWithPyTorchsCollectives) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    at::Tensor ga = testing::seeded_randn({4, 4}, 1), gb = testing::seeded_randn({4, 4}, 2);
    DTensor a = distribute_tensor(ga, mesh, {Shard(0)});
    DTensor b = distribute_tensor(gb, mesh, {Shard(0)});
    struct Case {
      Placement out;
      trace::KindCounts counts;
    };
    for (const Case& c : {Case{Shard(0), {}}, Case{Replicate(), {{"all_gather_into_tensor", 2}}},
                          Case{Shard(1), {{"all_to_all_single", 2}}}}) {
      SCOPED_TRACE(c.out.to_string());
      DTensor out = distribute_tensor(at::zeros({4, 4}, at::kDouble), mesh, {c.out});
      debug::CommDebugMode comm;
      at::Tensor r = [&] {
        auto guard = comm.enter();
        return at::add_out(out, a, b);
      }();
      EXPECT_TRUE(r.is_same(out));
      EXPECT_EQ(out.placements(), Placements{c.out});
      EXPECT_EQ(comm.get_comm_counts(), c.counts);
      EXPECT_TRUE(at::allclose(out.full_tensor(), ga + gb));
    }
    // A backward's out= form (grad_input) and a matrix product's.
    DTensor y = distribute_tensor(ga.sigmoid(), mesh, {Shard(0)});
    DTensor gi = distribute_tensor(at::empty({4, 4}, at::kDouble), mesh, {Shard(0)});
    at::sigmoid_backward_out(gi, a, y);
    EXPECT_TRUE(at::allclose(gi.full_tensor(), at::sigmoid_backward(ga, ga.sigmoid())));
    DTensor mm_out = distribute_tensor(at::empty({4, 4}, at::kDouble), mesh, {Replicate()});
    at::mm_out(mm_out, a, distribute_tensor(gb, mesh, {Replicate()}));
    EXPECT_TRUE(at::allclose(mm_out.full_tensor(), at::mm(ga, gb)));
  });
}

TEST(DerivedRulesTest, InPlaceOverloadsWithoutTheirOwnRule) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    at::Tensor g = testing::seeded_randn({6, 4}, 3);
    DTensor x = distribute_tensor(g, mesh, {Shard(1)});
    at::Tensor same = x.cumprod_(0);  // aten::cumprod_ derives from aten::cumprod
    EXPECT_TRUE(same.is_same(x));
    EXPECT_EQ(x.placements(), Placements{Shard(1)});
    EXPECT_TRUE(at::allclose(x.full_tensor(), g.cumprod(0)));
    DTensor r = distribute_tensor(g, mesh, {Shard(0)});
    r.round_(2);  // aten::round_.decimals
    EXPECT_TRUE(at::allclose(r.full_tensor(), g.round(2)));
  });
}

// The out= forms PyTorch 2.15 shards whose functional overload is composite
// here, or has several outs, or is a fill with no tensor input. Collectives
// as PyTorch 2.15 issues them on 4 ranks (LocalTensorMode, measured):
// var_mean.correction_out over the sharded dim into Replicate outs 1
// all_gather; copy.out of two Shard(0) tensors into a Replicate out 2; the
// 1-d poolings and _index_put_impl.out on shards none. eye.m_out into a
// Shard(0) out is refused by PyTorch ("no valid sharding strategy"); here
// each rank writes its rows.
TEST(DerivedRulesTest, OutFormsOfCompositeOrMultiOutputOps) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    const at::Tensor ga = testing::seeded_randn({8, 6}, 1), gb = testing::seeded_randn({8, 6}, 2);
    DTensor a = distribute_tensor(ga, mesh, {Shard(0)});
    DTensor b = distribute_tensor(gb, mesh, {Shard(0)});
    auto replicated = [&](at::IntArrayRef shape) {
      return distribute_tensor(at::zeros(shape, at::kDouble), mesh, {Replicate()});
    };
    debug::CommDebugMode comm;
    auto counted = [&](const std::function<void()>& fn) {
      auto guard = comm.enter();
      fn();
      return comm.get_comm_counts();
    };

    DTensor var = replicated({6}), mean = replicated({6});
    EXPECT_EQ(counted([&] { at::var_mean_out(var, mean, a, at::IntArrayRef{0}, /*correction=*/1, false); }),
              (trace::KindCounts{{"all_gather_into_tensor", 1}}));
    auto [want_var, want_mean] = at::var_mean(ga, at::IntArrayRef{0}, /*correction=*/1, false);
    EXPECT_TRUE(at::allclose(var.full_tensor(), want_var) && at::allclose(mean.full_tensor(), want_mean));

    DTensor values = distribute_tensor(at::zeros({8}, at::kDouble), mesh, {Shard(0)});
    DTensor indices = distribute_tensor(at::zeros({8}, at::kLong), mesh, {Shard(0)});
    at::max_out(values, indices, a, 1);  // max.dim_max: two outs, derived from max.dim
    EXPECT_TRUE(at::equal(values.full_tensor(), std::get<0>(ga.max(1))));
    EXPECT_TRUE(at::equal(indices.full_tensor(), std::get<1>(ga.max(1))));

    DTensor copied = replicated({8, 6});
    EXPECT_EQ(counted([&] { at::copy_out(copied, a, b); }), (trace::KindCounts{{"all_gather_into_tensor", 2}}));
    EXPECT_TRUE(at::equal(copied.full_tensor(), gb));

#if DTENSOR_TORCH_AT_LEAST(2, 1)  // the 1-d poolings' out= forms
    const at::Tensor gx = testing::seeded_randn({4, 4, 8}, 3);
    DTensor pooled = distribute_tensor(at::zeros({4, 4, 4}, at::kDouble), mesh, {Shard(0)});
    DTensor x0 = distribute_tensor(gx, mesh, {Shard(0)});
    EXPECT_EQ(counted([&] { at::avg_pool1d_out(pooled, x0, {2}); }), trace::KindCounts{});
    EXPECT_TRUE(at::allclose(pooled.full_tensor(), at::avg_pool1d(gx, {2})));
    DTensor adaptive = distribute_tensor(at::zeros({4, 4, 4}, at::kDouble), mesh, {Shard(1)});
    at::adaptive_avg_pool1d_out(adaptive, distribute_tensor(gx, mesh, {Shard(1)}), {4});
    EXPECT_TRUE(at::allclose(adaptive.full_tensor(), at::adaptive_avg_pool1d(gx, {4})));
#endif

    DTensor put = distribute_tensor(at::zeros({8, 6}, at::kDouble), mesh, {Shard(1)});
    const at::Tensor rows = at::tensor({1, 3, 1}, at::kLong);
    const at::Tensor ones = at::ones({3, 6}, at::kDouble);
    DTensor self = distribute_tensor(ga, mesh, {Shard(1)});
    DTensor where = distribute_tensor(rows, mesh, {Replicate()});
    DTensor put_values = distribute_tensor(ones, mesh, {Shard(1)});
    c10::List<c10::optional<at::Tensor>> indices_list;
    indices_list.push_back(c10::optional<at::Tensor>(where));
    EXPECT_EQ(counted([&] {
                at::_index_put_impl_out(put, self, indices_list, put_values, /*accumulate=*/true, false);
              }),
              trace::KindCounts{});
    EXPECT_TRUE(at::allclose(put.full_tensor(), ga.index_put({rows}, ones, /*accumulate=*/true)));

    for (const Placements& p : {Placements{Shard(0)}, Placements{Shard(1)}, Placements{Replicate()},
                                Placements{Partial()}}) {
      SCOPED_TRACE(to_string(p));
      DTensor eye = distribute_tensor(at::full({8, 6}, 7.0, at::kDouble), mesh, p);
      EXPECT_EQ(counted([&] { at::eye_out(eye, 8, 6); }), trace::KindCounts{});
      EXPECT_EQ(eye.placements(), p);
      EXPECT_TRUE(at::equal(eye.full_tensor(), at::eye(8, 6, at::kDouble)));
    }
  });
}

// Note [Out tensors laid out unlike the inputs]: outs no strategy of the
// functional rule reaches from the inputs' layouts, as the validation shards
// found them (PyTorch 2.15 runs each; counts measured there): clone.out of a
// Shard(0) input into a Shard(1) out, 1 all_to_all; max.dim_max over the
// sharded dim into Shard(0) outs (the input moved to Shard(1)), 1 all_to_all;
// gather.out along dim 0 of a whole self by a [S(0), R] index into an
// [R, S(0)] out on 2 x 2 (the index gathered, then chunked), 1 all_gather.
TEST(DerivedRulesTest, OutsLaidOutUnlikeTheInputsMoveTheInputs) {
  const at::Tensor g = testing::seeded_randn({4, 8}, 5);
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor x = distribute_tensor(g, mesh, {Shard(0)});
    DTensor out = distribute_tensor(at::zeros({4, 8}, at::kDouble), mesh, {Shard(1)});
    DTensor values = distribute_tensor(at::zeros({8}, at::kDouble), mesh, {Shard(0)});
    DTensor indices = distribute_tensor(at::zeros({8}, at::kLong), mesh, {Shard(0)});
    debug::CommDebugMode comm;
    {
      auto guard = comm.enter();
      at::clone_out(out, x);
    }
    EXPECT_EQ(comm.get_comm_counts(), (trace::KindCounts{{"all_to_all_single", 1}}));
    EXPECT_EQ(out.placements(), Placements{Shard(1)});
    EXPECT_TRUE(at::equal(out.full_tensor(), g));
    {
      auto guard = comm.enter();
      at::max_out(values, indices, x, 0);
    }
    EXPECT_EQ(comm.get_comm_counts(), (trace::KindCounts{{"all_to_all_single", 1}}));
    EXPECT_TRUE(at::equal(values.full_tensor(), std::get<0>(g.max(0))));
    EXPECT_TRUE(at::equal(indices.full_tensor(), std::get<1>(g.max(0))));
  });
  const at::Tensor self = at::arange(6, at::kLong), index = at::tensor({5, 0, 3, 3, 1, 2}, at::kLong);
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    DTensor s = distribute_tensor(self, mesh, {Replicate(), Replicate()});
    DTensor i = distribute_tensor(index, mesh, {Shard(0), Replicate()});
    DTensor out = distribute_tensor(at::zeros({6}, at::kLong), mesh, {Replicate(), Shard(0)});
    debug::CommDebugMode comm;
    {
      auto guard = comm.enter();
      at::gather_out(out, s, 0, i);
    }
    EXPECT_EQ(comm.get_comm_counts(), (trace::KindCounts{{"all_gather_into_tensor", 1}}));
    EXPECT_TRUE(at::equal(out.full_tensor(), self.gather(0, index)));
  });
}

TEST(DerivedRulesTest, BadOutIsAClearError) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor a = distribute_tensor(testing::seeded_randn({4, 4}, 1), mesh, {Shard(0)});
    DTensor small = distribute_tensor(at::zeros({2, 4}, at::kDouble), mesh, {Shard(0)});
    EXPECT_THAT(error_of([&] { at::add_out(small, a, a); }),
                AllOf(HasSubstr("aten::add.out"), HasSubstr("out has shape [2, 4]"),
                      HasSubstr("result has shape [4, 4]")));
    // cumprod along the sharded dim cannot keep self's Shard(0).
    DTensor x = distribute_tensor(testing::seeded_randn({4, 4}, 2), mesh, {Shard(0)});
    EXPECT_THAT(error_of([&] { x.cumprod_(0); }),
                AllOf(HasSubstr("aten::cumprod_"), HasSubstr("written in place"), HasSubstr("S(0)")));
  });
}

}  // namespace
}  // namespace dtensor
