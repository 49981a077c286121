// Op-by-op checks of convolution, pooling, upsampling, grid sampling, batch
// norm and group norm (core/ops/spatial_rules.cc, core/ops/norm_rules.cc):
// every placement of every input equals the single-device run in values and
// gradients, and the layouts PyTorch 2.15 shards with no communication issue
// none here either.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "backends/fake/fake_world.h"
#include "core/compat/torch_compat.h"
#include "testing/error_of.h"
#include "tests/core/ops/op_harness.h"
#include "tests/core/test_util.h"

namespace dtensor::testing {
namespace {

namespace F = torch::nn::functional;

TEST(SpatialOpsTest, Convolution) {
  check_all_placements(OpCase("conv2d", {Input::floats({4, 3, 6, 6}), Input::floats({4, 3, 3, 3}), Input::floats({4})},
                              [](const Tensors& x) {
                                return Tensors{at::conv2d(x[0], x[1], x[2], /*stride=*/1, /*padding=*/1)};
                              }),
                       /*max_combos=*/80, /*samples_2d=*/8);
  // Windows that never straddle a shard of the last dim: stride == kernel width.
  check_all_placements(OpCase("conv1d_patches", {Input::floats({2, 3, 16}), Input::floats({5, 3, 2})},
                              [](const Tensors& x) { return Tensors{at::conv1d(x[0], x[1], {}, /*stride=*/2)}; }),
                       /*max_combos=*/80, /*samples_2d=*/8);
}

TEST(SpatialOpsTest, ConvolutionShardsBatchAndPatchesWithoutComm) {
  OpCase conv("conv2d", {Input::floats({4, 3, 6, 6}), Input::floats({4, 3, 3, 3}), Input::floats({4})},
              [](const Tensors& x) { return Tensors{at::conv2d(x[0], x[1], x[2], 1, 1)}; });
  CommCounts batch = comm_counts(conv, {4}, {{Shard(0)}, {Replicate()}, {Replicate()}});
  EXPECT_EQ(batch.forward, Counts{});
  EXPECT_EQ(batch.outputs, std::vector<Placements>{{Shard(0)}});
  // The weight and bias gradients are partial sums over the batch shards,
  // left Partial by the backward (reduced when read).
  EXPECT_EQ(batch.backward, Counts{});
  OpCase patches("conv1d_patches", {Input::floats({2, 3, 16}), Input::floats({5, 3, 2})},
                 [](const Tensors& x) { return Tensors{at::conv1d(x[0], x[1], {}, 2)}; });
  CommCounts last = comm_counts(patches, {4}, {{Shard(2)}, {Replicate()}});
  EXPECT_EQ(last.forward, Counts{});
  EXPECT_EQ(last.outputs, std::vector<Placements>{{Shard(2)}});
}

TEST(SpatialOpsTest, Pooling) {
  auto x = Input::floats({4, 4, 6, 6});
  check_all_placements(OpCase("max_pool2d", {x}, [](const Tensors& t) { return Tensors{at::max_pool2d(t[0], {2, 2})}; }));
  check_all_placements(OpCase("max_pool2d_indices", {x}, [](const Tensors& t) {
                         auto [out, idx] = at::max_pool2d_with_indices(t[0], {3, 3}, {2, 2}, {1, 1});
                         return Tensors{out, idx};
                       }).no_grads());
  check_all_placements(OpCase("avg_pool2d", {x}, [](const Tensors& t) {
    return Tensors{at::avg_pool2d(t[0], {3, 3}, {2, 2}, {1, 1}, /*ceil_mode=*/true)};
  }));
  check_all_placements(OpCase("adaptive_avg_pool2d", {x}, [](const Tensors& t) { return Tensors{at::adaptive_avg_pool2d(t[0], {2, 3})}; }));
  check_all_placements(OpCase("adaptive_max_pool2d", {x}, [](const Tensors& t) {
    return Tensors{std::get<0>(at::adaptive_max_pool2d(t[0], {3, 2}))};
  }));
  check_all_placements(OpCase("avg_pool3d", {Input::floats({2, 4, 4, 4, 4})}, [](const Tensors& t) {
    return Tensors{at::avg_pool3d(t[0], {2, 2, 2})};
  }));
  check_all_placements(OpCase("max_pool3d", {Input::floats({2, 4, 4, 4, 4})}, [](const Tensors& t) {
    return Tensors{at::max_pool3d(t[0], {2, 2, 2})};
  }));
  // Unbatched [C, H, W]: dim 0 is the channel.
  check_all_placements(OpCase("max_pool2d_unbatched", {Input::floats({4, 6, 6})}, [](const Tensors& t) {
    return Tensors{at::max_pool2d(t[0], {2, 2})};
  }));
}

TEST(SpatialOpsTest, PoolingShardsBatchAndChannelWithoutComm) {
  OpCase pool("max_pool2d", {Input::floats({4, 4, 6, 6})}, [](const Tensors& t) { return Tensors{at::max_pool2d(t[0], {2, 2})}; });
  for (const Placement& p : {Placement(Shard(0)), Placement(Shard(1))}) {
    SCOPED_TRACE(p.to_string());
    CommCounts c = comm_counts(pool, {4}, {{p}});
    EXPECT_EQ(c.forward, Counts{});
    EXPECT_EQ(c.backward, Counts{});
    EXPECT_EQ(c.outputs, std::vector<Placements>{{p}});
  }
  // A spatial shard is gathered when small (PyTorch's shard-to-shard penalty,
  // Note [Choosing among candidates]) and moved to the batch dim by one
  // all_to_all when large (512 KiB).
  CommCounts small = comm_counts(pool, {4}, {{Shard(2)}});
  EXPECT_EQ(small.forward, (Counts{{"all_gather_into_tensor", 1}}));
  EXPECT_EQ(small.outputs, std::vector<Placements>{{Replicate()}});
  OpCase big_pool("max_pool2d", {Input::floats({8, 8, 32, 32})}, [](const Tensors& t) { return Tensors{at::max_pool2d(t[0], {2, 2})}; });
  CommCounts big = comm_counts(big_pool, {4}, {{Shard(2)}});
  EXPECT_EQ(big.forward, (Counts{{"all_to_all_single", 1}}));
  EXPECT_EQ(big.outputs, std::vector<Placements>{{Shard(0)}});
  // Average pooling is linear: a Partial(sum) input stays Partial.
  OpCase avg("avg_pool2d", {Input::floats({4, 4, 6, 6})}, [](const Tensors& t) { return Tensors{at::avg_pool2d(t[0], {2, 2})}; });
  CommCounts partial = comm_counts(avg, {4}, {{Partial()}});
  EXPECT_EQ(partial.forward, Counts{});
  EXPECT_EQ(partial.outputs, std::vector<Placements>{{Partial()}});
}

TEST(SpatialOpsTest, UpsamplingAndItsBackward) {
  // The backward is told the forward's global input size; with dim 0 or 1
  // sharded it takes this rank's (Note [Upsampling backward takes the local input size]).
  auto x = Input::floats({4, 4, 3, 5});
  check_all_placements(OpCase("upsample_bilinear2d", {x}, [](const Tensors& t) {
    return Tensors{at::upsample_bilinear2d(t[0], {6, 7}, /*align_corners=*/false)};
  }));
  check_all_placements(OpCase("upsample_nearest2d", {x}, [](const Tensors& t) {
    return Tensors{at::upsample_nearest2d(t[0], {6, 10})};
  }));
  check_all_placements(OpCase("upsample_bicubic2d_aa", {x}, [](const Tensors& t) {
    return Tensors{at::_upsample_bicubic2d_aa(t[0], {2, 3}, /*align_corners=*/true)};
  }));
  check_all_placements(OpCase("upsample_linear1d", {Input::floats({4, 4, 5})}, [](const Tensors& t) {
    return Tensors{at::upsample_linear1d(t[0], {9}, false)};
  }));
  OpCase up("upsample_bilinear2d", {x}, [](const Tensors& t) { return Tensors{at::upsample_bilinear2d(t[0], {6, 7}, false)}; });
  for (const Placement& p : {Placement(Shard(0)), Placement(Shard(1)), Placement(Partial())}) {
    SCOPED_TRACE(p.to_string());
    CommCounts c = comm_counts(up, {4}, {{p}});
    EXPECT_EQ(c.forward, Counts{});
    EXPECT_EQ(c.outputs, std::vector<Placements>{{p}});
  }
}

TEST(SpatialOpsTest, GridSampler) {
  check_all_placements(OpCase("grid_sample", {Input::floats({4, 3, 5, 5}), Input::floats({4, 3, 2, 2})},
                              [](const Tensors& t) {
                                return Tensors{at::grid_sampler(t[0], t[1], 0, 0, /*align_corners=*/false)};
                              }),
                       /*max_combos=*/80, /*samples_2d=*/8);
}

TEST(SpatialOpsTest, MaxUnpool) {
  check_all_placements(OpCase("max_unpool2d", {Input::floats({4, 4, 6, 6})}, [](const Tensors& t) {
    auto [out, idx] = at::max_pool2d_with_indices(t[0], {2, 2});
    return Tensors{at::max_unpool2d(out, idx, {6, 6})};
  }));
}

// Batch norm in training: every placement of the input equals one device,
// with the module's running statistics updated as on one device.
TEST(SpatialOpsTest, BatchNormTraining) {
  check_all_placements(OpCase("batch_norm", {Input::floats({4, 4, 3, 3}), Input::floats({4}), Input::floats({4})},
                              [](const Tensors& t) {
                                return Tensors{at::batch_norm(t[0], t[1], t[2], {}, {}, /*training=*/true, 0.1, 1e-5,
                                                              /*cudnn_enabled=*/false)};
                              }),
                       /*max_combos=*/80, /*samples_2d=*/8);
  check_all_placements(OpCase("batch_norm_eval", {Input::floats({4, 4, 3}), Input::floats({4}).no_grad().no_partial(),
                                                  Input::floats({4}).no_grad().no_partial().with([](const at::Tensor& v) { return v.abs() + 0.5; })},
                              [](const Tensors& t) {
                                return Tensors{at::batch_norm(t[0], {}, {}, t[1], t[2], /*training=*/false, 0.1, 1e-5, false)};
                              })
                           .no_grads(),
                       /*max_combos=*/80, /*samples_2d=*/8);
}

// Note [Batch norm keeps its running statistics where they are]: a channel-
// sharded BatchNorm with sharded buffers issues nothing and updates them; a
// replicated one runs replicated (the batch is gathered) and updates them
// too; buffers that can be neither are refused with what to do.
TEST(SpatialOpsTest, BatchNormUpdatesTheRunningStatisticsItIsGiven) {
  const at::Tensor gx = seeded_randn({4, 4, 3, 3}, 5), gm = seeded_randn({4}, 6), gv = seeded_randn({4}, 7).abs();
  const at::Tensor want_mean = gm.clone(), want_var = gv.clone();
  const at::Tensor want = at::batch_norm(gx, {}, {}, want_mean, want_var, true, 0.1, 1e-5, false);
  struct Case {
    Placement x, stats;
    Counts counts;
  };
  for (const Case& c : {Case{Shard(1), Shard(0), {}}, Case{Shard(0), Replicate(), {{"all_gather_into_tensor", 1}}}}) {
    SCOPED_TRACE(c.x.to_string() + " " + c.stats.to_string());
    run_fake_world(2, [&](World& world) {
      auto mesh = DeviceMesh::init(c10::kCPU, {2});
      DTensor x = distribute_tensor(gx, mesh, {c.x});
      DTensor mean = distribute_tensor(gm, mesh, {c.stats}), var = distribute_tensor(gv, mesh, {c.stats});
      CollectiveCounter counter(world);
      at::Tensor y = at::batch_norm(x, {}, {}, mean, var, true, 0.1, 1e-5, false);
      EXPECT_EQ(counter.counts(), c.counts);
      EXPECT_TRUE(at::allclose(DTensor(y).full_tensor(), want));
      EXPECT_EQ(mean.placements(), Placements{c.stats});
      EXPECT_TRUE(at::allclose(mean.full_tensor(), want_mean));
      EXPECT_TRUE(at::allclose(var.full_tensor(), want_var));
    });
  }
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(gx, mesh, {Shard(0)});
    DTensor mean = distribute_tensor(gm, mesh, {Shard(0)}), var = distribute_tensor(gv, mesh, {Replicate()});
    const std::string error = error_of([&] { at::batch_norm(x, {}, {}, mean, var, true, 0.1, 1e-5, false); });
    EXPECT_NE(error.find("running_mean and running_var"), std::string::npos) << error;
    EXPECT_NE(error.find("Distribute the BatchNorm buffers"), std::string::npos) << error;
  });
}

// _native_batch_norm_legit.out writes its three outs and, like the
// functional form whose rule it derives, the running statistics (positional
// `(a!)` arguments: state, not outs). Called boxed, it returns the outs.
TEST(SpatialOpsTest, BatchNormOutFormUpdatesStatisticsAndReturnsItsOuts) {
#if !DTENSOR_TORCH_AT_LEAST(2, 0)
  GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no _native_batch_norm_legit";
#else
  const at::Tensor gx = seeded_randn({4, 4, 3, 3}, 8), gm = seeded_randn({4}, 9), gv = seeded_randn({4}, 10).abs();
  at::Tensor want_mean = gm.clone(), want_var = gv.clone();
  const auto [want, want_save_mean, want_save_invstd] =
      at::_native_batch_norm_legit(gx, {}, {}, want_mean, want_var, true, 0.1, 1e-5);
  run_fake_world(2, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(gx, mesh, {Shard(1)});
    DTensor mean = distribute_tensor(gm, mesh, {Shard(0)}), var = distribute_tensor(gv, mesh, {Shard(0)});
    DTensor out = distribute_tensor(at::zeros_like(gx), mesh, {Shard(1)});
    DTensor save_mean = distribute_tensor(at::zeros({4}, gx.options()), mesh, {Shard(0)});
    DTensor save_invstd = distribute_tensor(at::zeros({4}, gx.options()), mesh, {Shard(0)});
    auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::_native_batch_norm_legit", "out");
    // Absent weight and bias are None, as a boxed caller passes them.
    torch::jit::Stack stack{x, c10::IValue(), c10::IValue(), mean, var, true, 0.1, 1e-5, out, save_mean, save_invstd};
    CollectiveCounter counter(world);
    op.callBoxed(&stack);
    EXPECT_EQ(counter.counts(), Counts{});  // channel-sharded throughout
    ASSERT_EQ(stack.size(), 3u);
    EXPECT_TRUE(stack[0].toTensor().is_same(out));
    EXPECT_TRUE(stack[1].toTensor().is_same(save_mean));
    EXPECT_TRUE(stack[2].toTensor().is_same(save_invstd));
    EXPECT_TRUE(at::allclose(out.full_tensor(), want, 1e-5, 1e-6));
    EXPECT_TRUE(at::allclose(save_mean.full_tensor(), want_save_mean));
    EXPECT_TRUE(at::allclose(save_invstd.full_tensor(), want_save_invstd));
    EXPECT_TRUE(at::allclose(mean.full_tensor(), want_mean));
    EXPECT_TRUE(at::allclose(var.full_tensor(), want_var));
  });
#endif
}

// An out= op with two outs called boxed returns each out, not the first twice.
TEST(SpatialOpsTest, BoxedOutFormReturnsEachOut) {
  const at::Tensor g = seeded_randn({4, 6}, 11);
  const auto [want_values, want_indices] = g.max(1);
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(g, mesh, {Shard(0)});
    DTensor values = distribute_tensor(at::zeros({4}, g.options()), mesh, {Shard(0)});
    DTensor indices = distribute_tensor(at::zeros({4}, at::kLong), mesh, {Shard(0)});
    auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::max", "dim_max");
    torch::jit::Stack stack{x, int64_t{1}, false, values, indices};
    op.callBoxed(&stack);
    ASSERT_EQ(stack.size(), 2u);
    EXPECT_TRUE(stack[0].toTensor().is_same(values));
    EXPECT_TRUE(stack[1].toTensor().is_same(indices));
    EXPECT_TRUE(at::equal(indices.full_tensor(), want_indices));
    EXPECT_TRUE(at::allclose(values.full_tensor(), want_values));
  });
}

TEST(SpatialOpsTest, GroupNorm) {
  // The local batch size reaches the kernel (Note [Group norm takes the local batch size]).
  check_all_placements(OpCase("group_norm", {Input::floats({4, 4, 3, 3}), Input::floats({4}), Input::floats({4})},
                              [](const Tensors& t) { return Tensors{at::group_norm(t[0], 2, t[1], t[2])}; }),
                       /*max_combos=*/80, /*samples_2d=*/8);
  OpCase gn("group_norm", {Input::floats({6, 4, 3, 3}), Input::floats({4}), Input::floats({4})},
            [](const Tensors& t) { return Tensors{at::group_norm(t[0], 2, t[1], t[2])}; });
  CommCounts c = comm_counts(gn, {4}, {{Shard(0)}, {Replicate()}, {Replicate()}});  // uneven: 2, 2, 2, 0
  EXPECT_EQ(c.forward, Counts{});
  EXPECT_EQ(c.outputs, std::vector<Placements>{{Shard(0)}});
}

}  // namespace
}  // namespace dtensor::testing
