// The fused attention kernels (core/ops/attention_rules.cc): the CPU flash
// kernel on every placement equals one device in values and gradients and
// shards heads and batch with no communication; the CUDA-only kernels
// (flash, memory-efficient, cuDNN) propagate on a solo world's meta ranks
// through their meta kernels (core/ops/meta_kernels.cc), forward
// and backward, without one collective, and place every tensor as PyTorch
// 2.15 does (testdata/attention_plans-2.15.json, recorded by
// pytorch_attention_plans.py on PyTorch's meta kernels). Their values are checked on a GPU
// host (tests/backends/cuda/cuda_dtensor_check.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/collective_event.h"
#include "backends/solo/solo_world.h"
#include "core/compat/torch_compat.h"
#include "core/dtensor.h"
#include "core/init.h"
#include "testing/error_of.h"
#include "tests/core/ops/op_harness.h"
#include "tests/core/test_util.h"

namespace dtensor::testing {
namespace {

// The fused kernels and their schemas as tested here: LibTorch >= 2.5 (the
// meta kernels need >= 2.3; Debian's 1.13 has none of these ops).
#if DTENSOR_TORCH_AT_LEAST(2, 5)

OpCase flash_cpu(bool is_causal) {
  return OpCase(is_causal ? "flash_for_cpu_causal" : "flash_for_cpu",
                {Input::floats({4, 4, 6, 8}), Input::floats({4, 4, 6, 8}), Input::floats({4, 4, 6, 8})},
                [is_causal](const Tensors& x) {
                  return Tensors{std::get<0>(at::_scaled_dot_product_flash_attention_for_cpu(x[0], x[1], x[2], 0.0,
                                                                                             is_causal))};
                });
}

TEST(AttentionOpsTest, CpuFlashKernelOnEveryPlacementEqualsOneDevice) {
  check_all_placements(flash_cpu(/*is_causal=*/false), /*max_combos=*/60, /*samples_2d=*/8);
  check_all_placements(flash_cpu(/*is_causal=*/true), /*max_combos=*/60, /*samples_2d=*/8);
}

TEST(AttentionOpsTest, CpuFlashKernelShardsHeadsAndBatchWithoutComm) {
  const OpCase c = flash_cpu(/*is_causal=*/true);
  for (const Placement& p : {Placement(Shard(0)), Placement(Shard(1))}) {
    SCOPED_TRACE(p.to_string());
    CommCounts counts = comm_counts(c, {4}, {{p}, {p}, {p}});
    EXPECT_EQ(counts.forward, Counts{});
    EXPECT_EQ(counts.backward, Counts{});
    EXPECT_EQ(counts.outputs, std::vector<Placements>{{p}});
  }
  // Batch on one mesh dim, heads on the other.
  CommCounts both = comm_counts(c, {2, 2}, {{Shard(0), Shard(1)}, {Shard(0), Shard(1)}, {Shard(0), Shard(1)}});
  EXPECT_EQ(both.forward, Counts{});
  EXPECT_EQ(both.backward, Counts{});
  EXPECT_EQ(both.outputs, (std::vector<Placements>{{Shard(0), Shard(1)}}));
}

// The sequence dim does not shard: the inputs are gathered, as PyTorch 2.15
// (context parallelism is core/experimental/context_parallel.h).
TEST(AttentionOpsTest, CpuFlashKernelGathersASequenceShard) {
  CommCounts counts = comm_counts(flash_cpu(false), {2}, {{Shard(2)}, {Shard(2)}, {Shard(2)}});
  EXPECT_EQ(counts.forward, (Counts{{"all_gather_into_tensor", 3}}));
  EXPECT_EQ(counts.outputs, std::vector<Placements>{{Replicate()}});
}

// One rank (5) of 8 on meta tensors; any collective throws.
template <typename Fn>
void on_meta_rank(Fn fn) {
  init();
  SoloOptions options;
  options.error_on_collective = true;
  options.device = c10::kMeta;
  run_solo_world(8, 5, [&](World& world) { fn(DeviceMesh::init(c10::kMeta, {world.size()})); }, options);
}

// A leaf DTensor of global `shape` on meta tensors, placed as `placements`
// (each sharded dim a multiple of its mesh dim's size).
DTensor meta_input(const DeviceMesh& mesh, const Placements& placements, std::vector<int64_t> shape,
                   at::ScalarType dtype) {
  for (size_t d = 0; d < placements.size(); ++d) {
    if (placements[d].is_shard()) shape[static_cast<size_t>(placements[d].shard_dim())] /= mesh.size(static_cast<int>(d));
  }
  DTensor t = DTensor::from_local(at::empty(shape, at::TensorOptions().dtype(dtype).device(c10::kMeta)), mesh,
                                  placements);
  t.requires_grad_(true);
  return t;
}

struct FusedKernel {
  const char* name;
  std::function<std::vector<at::Tensor>(const at::Tensor&, const at::Tensor&, const at::Tensor&)> run;
};

std::vector<at::Tensor> tensors_of(const std::vector<at::Tensor>& outputs) { return outputs; }

std::vector<FusedKernel> cuda_kernels() {
  return {
      {"flash",
       [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
         auto r = at::_scaled_dot_product_flash_attention(q, k, v, 0.0, /*is_causal=*/true);
         return tensors_of({std::get<0>(r), std::get<1>(r), std::get<6>(r), std::get<7>(r), std::get<8>(r)});
       }},
      {"efficient",
       [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
         auto r = at::_scaled_dot_product_efficient_attention(q, k, v, {}, /*compute_log_sumexp=*/true);
         return tensors_of({std::get<0>(r), std::get<1>(r), std::get<2>(r), std::get<3>(r)});
       }},
      {"cudnn",
       [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
         auto r = at::_scaled_dot_product_cudnn_attention(q, k, v, {}, /*compute_log_sumexp=*/true);
         return tensors_of({std::get<0>(r), std::get<1>(r), std::get<6>(r), std::get<7>(r)});
       }},
  };
}

// PyTorch 2.15's placements of each output: the output and the log-sum-exp
// follow the inputs' heads or batch shard, the RNG state, the philox seed and
// offset and the empty debug mask are Replicate.
TEST(AttentionOpsTest, CudaKernelsShardHeadsAndBatchOnMetaRanks) {
  for (const FusedKernel& kernel : cuda_kernels()) {
    for (const Placement& p : {Placement(Shard(0)), Placement(Shard(1))}) {
      SCOPED_TRACE(std::string(kernel.name) + " " + p.to_string());
      on_meta_rank([&](const DeviceMesh& mesh) {
        DTensor q = meta_input(mesh, {p}, {16, 8, 128, 64}, at::kBFloat16);
        DTensor k = meta_input(mesh, {p}, {16, 8, 256, 64}, at::kBFloat16);
        DTensor v = meta_input(mesh, {p}, {16, 8, 256, 64}, at::kBFloat16);
        std::vector<at::Tensor> outputs = kernel.run(q, k, v);
        DTensor out(outputs[0]);
        EXPECT_EQ(out.placements(), Placements{p});
        EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{16, 8, 128, 64}));
        EXPECT_EQ(out.to_local().size(p.shard_dim()), p.is_shard(0) ? 2 : 1);
        DTensor lse(outputs[1]);
        EXPECT_EQ(lse.placements(), Placements{p});
        EXPECT_EQ(lse.size(2), 128);  // efficient: ceil(128 / 32) * 32
        for (size_t i = 2; i < outputs.size(); ++i) {
          if (outputs[i].defined()) {
            EXPECT_EQ(DTensor(outputs[i]).placements(), Placements{Replicate()}) << i;
          }
        }
        // Backward through the kernel's own fused backward, on the same shards.
        out.sum().backward();
        for (const DTensor& input : {q, k, v}) {
          ASSERT_TRUE(input.grad().defined());
          EXPECT_EQ(DTensor(input.grad()).placements(), Placements{p});
        }
      });
    }
  }
}

// An efficient-attention bias shards with the heads; its gradient too.
TEST(AttentionOpsTest, EfficientKernelBiasFollowsTheHeads) {
  on_meta_rank([&](const DeviceMesh& mesh) {
    DTensor q = meta_input(mesh, {Shard(1)}, {2, 8, 64, 32}, at::kFloat);
    DTensor bias = meta_input(mesh, {Shard(1)}, {2, 8, 64, 64}, at::kFloat);
    auto [out, lse, seed, offset] = at::_scaled_dot_product_efficient_attention(q, q, q, bias, true);
    EXPECT_EQ(DTensor(out).placements(), Placements{Shard(1)});
    out.sum().backward();
    EXPECT_EQ(DTensor(bias.grad()).placements(), Placements{Shard(1)});
    EXPECT_EQ(DTensor(q.grad()).placements(), Placements{Shard(1)});
  });
}

// A sequence shard cannot stay: of 8 heads of 64 x 32 over 8 ranks, moving
// it to the heads (all_to_all) costs less than gathering it, which the solo
// world here refuses, naming the collective.
TEST(AttentionOpsTest, CudaKernelsMoveASequenceShard) {
  on_meta_rank([&](const DeviceMesh& mesh) {
    DTensor q = meta_input(mesh, {Shard(2)}, {2, 8, 64, 32}, at::kBFloat16);
    EXPECT_THAT(error_of([&] { at::_scaled_dot_product_flash_attention(q, q, q); }),
                ::testing::HasSubstr("all_to_all_single"));
  });
}


// Counts the collectives a rank reports.
struct CollectiveCount : CollectiveObserver {
  int count = 0;
  void on_collective(const CollectiveEvent&) override { ++count; }
};

std::vector<std::string> spelled(const Placements& placements) {
  std::vector<std::string> out;
  for (const Placement& p : placements) out.push_back(p.to_string());
  return out;
}

TEST(AttentionOpsTest, CudaKernelsPlaceEveryTensorAsPyTorch) {
  std::ifstream file("tests/core/ops/testdata/attention_plans-2.15.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json golden = nlohmann::json::parse(file);
  std::map<std::string, FusedKernel> kernels;
  for (const FusedKernel& k : cuda_kernels()) kernels.emplace(k.name, k);
  init();
  int compared = 0;
  for (const auto& c : golden["cases"]) {
    SCOPED_TRACE(c.dump());
    const std::vector<int64_t> mesh_shape = c["mesh"].get<std::vector<int64_t>>();
    Placements placements;
    for (const auto& p : c["inputs"]) placements.push_back(parse_placement(p.get<std::string>()));
    SoloOptions options;
    options.device = c10::kMeta;
    run_solo_world(golden["world_size"].get<int64_t>(), golden["rank"].get<int64_t>(), [&](World& world) {
      CollectiveCount collectives;
      auto registration = world.observers().add(&collectives);
      auto mesh = DeviceMesh::init(c10::kMeta, mesh_shape);
      auto leaf = [&](std::vector<int64_t> shape) { return meta_input(mesh, placements, std::move(shape), at::kBFloat16); };
      const auto kv_shape = golden["shapes"]["kv"].get<std::vector<int64_t>>();
      DTensor q = leaf(golden["shapes"]["q"].get<std::vector<int64_t>>()), k = leaf(kv_shape), v = leaf(kv_shape);
      std::vector<at::Tensor> outputs = kernels.at(c["kernel"].get<std::string>()).run(q, k, v);
      outputs[0].sum().backward();
      EXPECT_EQ(spelled(DTensor(outputs[0]).placements()), c["output"].get<std::vector<std::string>>());
      EXPECT_EQ(spelled(DTensor(outputs[1]).placements()), c["logsumexp"].get<std::vector<std::string>>());
      for (size_t i = 0; i < 3; ++i) {
        const DTensor& input = i == 0 ? q : i == 1 ? k : v;
        EXPECT_EQ(spelled(DTensor(input.grad()).placements()), c["grads"][i].get<std::vector<std::string>>()) << i;
      }
      EXPECT_EQ(collectives.count > 0, c["communicates"].get<bool>());
    }, options);
    ++compared;
  }
  EXPECT_EQ(compared, 30);
}

#endif  // DTENSOR_TORCH_AT_LEAST(2, 5)

}  // namespace
}  // namespace dtensor::testing
