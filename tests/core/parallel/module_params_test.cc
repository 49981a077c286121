// Tests of parameter/buffer replacement (registry and C++ members), member
// binders for user modules, the stale-member warning, and distribute_module
// (replicate pass, partition_fn, tied weights, boundary hooks).
#include "core/parallel/module_params.h"

#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/utils.h>

#include <mutex>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/compat/torch_compat.h"
#include "core/dtensor_impl.h"
#include "core/nn/module_call.h"
#include "core/parallel/distribute_module.h"
#include "tests/core/warning_collector.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using testing::error_of;

// A user module keeping its parameter in a member, like the built-ins.
struct ScaleImpl : torch::nn::Module {
  ScaleImpl() {
    w = register_parameter("w", torch::ones({4}));
    b = register_buffer("b", torch::zeros({4}));
  }
  at::Tensor forward(const at::Tensor& x) { return x * w + b; }
  at::Tensor w, b;
};
TORCH_MODULE(Scale);

// A user module reading its parameter by name: needs no binder.
struct ByNameImpl : torch::nn::Module {
  ByNameImpl() { register_parameter("w", torch::full({4}, 2.0)); }
  at::Tensor forward(const at::Tensor& x) { return x * param(*this, "w"); }
};
TORCH_MODULE(ByName);

using testing::WarningCollector;

TEST(ModuleParamsTest, SetParameterUpdatesRegistryAndLinearMembers) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    torch::nn::Linear lin(4, 6);
    DTensor w = distribute_parameter(*lin, "weight", mesh, {Shard(0)});
    EXPECT_TRUE(w.requires_grad());
    EXPECT_TRUE(is_dtensor(lin->weight));
    EXPECT_EQ(lin->weight.unsafeGetTensorImpl(), w.unsafeGetTensorImpl());
    EXPECT_EQ(lin->named_parameters()["weight"].unsafeGetTensorImpl(), w.unsafeGetTensorImpl());
    EXPECT_FALSE(is_dtensor(lin->bias));  // untouched
    EXPECT_EQ(w.local_tensor().sizes(), (std::vector<int64_t>{3, 4}));
  });
}

TEST(ModuleParamsTest, EmbeddingAndLayerNormMembersFollow) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    torch::nn::Embedding emb(8, 4);
    torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({4}));
    distribute_parameter(*emb, "weight", mesh, {Shard(1)});
    replicate_parameter(*norm, "weight", mesh);
    replicate_parameter(*norm, "bias", mesh);
    EXPECT_TRUE(is_dtensor(emb->weight));
    EXPECT_TRUE(is_dtensor(norm->weight));
    EXPECT_TRUE(is_dtensor(norm->bias));
    EXPECT_EQ(DTensor(norm->bias).placements(), (Placements{Replicate()}));
  });
}

TEST(ModuleParamsTest, UserModuleWithBinderSeesDTensors) {
  register_member_binder<ScaleImpl>({{"w", &ScaleImpl::w}, {"b", &ScaleImpl::b}});
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Scale scale;
    distribute_module(*scale, mesh);
    EXPECT_TRUE(is_dtensor(scale->w));
    EXPECT_TRUE(is_dtensor(scale->b));
    EXPECT_TRUE(scale->w.requires_grad());
    EXPECT_FALSE(scale->b.requires_grad());
    at::Tensor x = distribute_tensor(torch::arange(4, torch::kFloat), mesh, {Replicate()});
    EXPECT_TRUE(torch::equal(DTensor(scale->forward(x)).full_tensor(), torch::arange(4, torch::kFloat)));
  });
}

TEST(ModuleParamsTest, ModuleReadingByNameNeedsNoBinder) {
  WarningCollector warnings;
  run_fake_world(2, [&](World&) {
    compat::WarningHandlerGuard guard(&warnings);
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    ByName m;
    distribute_module(*m, mesh, [](const std::string&, torch::nn::Module& mod, const DeviceMesh& mesh) {
      distribute_parameter(mod, "w", mesh, {Shard(0)});
    });
    at::Tensor x = distribute_tensor(torch::ones({4}), mesh, {Replicate()});
    EXPECT_TRUE(torch::equal(DTensor(m->forward(x)).full_tensor(), torch::full({4}, 2.0)));
  });
  EXPECT_TRUE(warnings.messages.empty());
}

// A member the module keeps but no binder knows: the replacement warns.
struct UnboundImpl : torch::nn::Module {
  UnboundImpl() { w = register_parameter("w", torch::ones({4})); }
  at::Tensor w;
};
TORCH_MODULE(Unbound);

TEST(ModuleParamsTest, StaleMemberWithoutBinderWarns) {
  WarningCollector warnings;
  run_fake_world(1, [&](World&) {
    compat::WarningHandlerGuard guard(&warnings);
    auto mesh = DeviceMesh::init(c10::kCPU, {1});
    Unbound m;
    distribute_module(*m, mesh);
  });
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_NE(warnings.messages[0].find("register_member_binder"), std::string::npos) << warnings.messages[0];
  EXPECT_NE(warnings.messages[0].find("'w'"), std::string::npos) << warnings.messages[0];
}

TEST(ModuleParamsTest, DistributingTwiceDifferentlyThrowsSameWayIsANoOp) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    torch::nn::Linear lin(4, 6);
    DTensor w = distribute_parameter(*lin, "weight", mesh, {Shard(0)});
    EXPECT_EQ(distribute_parameter(*lin, "weight", mesh, {Shard(0)}).unsafeGetTensorImpl(),
              w.unsafeGetTensorImpl());
    std::string err = error_of([&] { distribute_parameter(*lin, "weight", mesh, {Shard(1)}); });
    EXPECT_NE(err.find("already a DTensor"), std::string::npos) << err;
    err = error_of([&] { distribute_parameter(*lin, "nope", mesh, {Shard(1)}); });
    EXPECT_NE(err.find("no registered parameter 'nope'"), std::string::npos) << err;
    EXPECT_NE(err.find("weight, bias"), std::string::npos) << err;
  });
}

// Two children sharing one parameter, like output.weight tied to an embedding.
struct TiedImpl : torch::nn::Module {
  TiedImpl() {
    emb = register_module("emb", torch::nn::Embedding(8, 4));
    out = register_module("out", torch::nn::Linear(torch::nn::LinearOptions(4, 8).bias(false)));
    set_parameter(*out, "weight", emb->weight);
  }
  torch::nn::Embedding emb{nullptr};
  torch::nn::Linear out{nullptr};
};
TORCH_MODULE(Tied);

TEST(DistributeModuleTest, TiedWeightsStayTied) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Tied m;
    ASSERT_EQ(m->emb->weight.unsafeGetTensorImpl(), m->out->weight.unsafeGetTensorImpl());
    distribute_module(*m, mesh, [](const std::string& name, torch::nn::Module& mod, const DeviceMesh& mesh) {
      if (name == "emb") distribute_parameter(mod, "weight", mesh, {Shard(0)});
    });
    EXPECT_TRUE(is_dtensor(m->out->weight));
    EXPECT_EQ(m->emb->weight.unsafeGetTensorImpl(), m->out->weight.unsafeGetTensorImpl());
    EXPECT_EQ(DTensor(m->out->weight).placements(), (Placements{Shard(0)}));
  });
}

TEST(DistributeModuleTest, ReplicatesEverythingByDefaultAndRunsHooks) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    torch::manual_seed(0);  // values come from rank 0 (src_data_rank) anyway
    torch::nn::Linear lin(3, 2);
    distribute_module(
        *lin, mesh, nullptr,
        [](torch::nn::Module&, nn::TensorList in, const DeviceMesh& mesh) {
          in[0] = DTensor::from_local(in[0], mesh, {Replicate(), Replicate()});
          return in;
        },
        [](torch::nn::Module&, at::Tensor out, const DeviceMesh&) { return DTensor(out).to_local(); });
    for (const auto& p : lin->parameters()) {
      ASSERT_TRUE(is_dtensor(p));
      EXPECT_EQ(DTensor(p).placements(), (Placements{Replicate(), Replicate()}));
    }
    at::Tensor y = nn::call(lin, torch::ones({5, 3}));
    EXPECT_FALSE(is_dtensor(y));
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{5, 2}));
  });
}

TEST(ModuleParamsTest, ReplicateLikeWrapsOnlyForDTensors) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    at::Tensor plain = torch::ones({2});
    EXPECT_FALSE(is_dtensor(replicate_like(plain, plain)));
    at::Tensor d = distribute_tensor(torch::ones({4}), mesh, {Shard(0)});
    at::Tensor r = replicate_like(plain, d);
    ASSERT_TRUE(is_dtensor(r));
    EXPECT_EQ(DTensor(r).placements(), (Placements{Replicate()}));
  });
}

}  // namespace
}  // namespace dtensor
