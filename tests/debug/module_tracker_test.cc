// ModuleTracker: FQNs, forward scopes, backward attribution (node sequence
// numbers and tensor hooks), and no hooks left behind.
#include "debug/module_tracker.h"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "debug/comm_debug_mode.h"
#include "testing/dtensor_test.h"
#include "tests/debug/mlp_test_util.h"

namespace dtensor::debug {
namespace {

using testing::make_tp_mlp;
using testing::MLPModule;

std::vector<std::string> fqns(const ModuleTracker& tracker) {
  std::vector<std::string> out;
  for (const trace::ModuleRecord& m : tracker.modules()) out.push_back(m.fqn + "<" + m.parent);
  return out;
}

TEST(ModuleTrackerTest, ClassNames) {
  EXPECT_EQ(ModuleTracker::class_name(*torch::nn::Linear(2, 2)), "Linear");
  EXPECT_EQ(ModuleTracker::module_type(*torch::nn::Linear(2, 2)), "torch::nn::Linear");
  EXPECT_EQ(ModuleTracker::class_name(*MLPModule()), "MLPModule");
}

TEST(ModuleTrackerTest, NamesFromTheRunningParentWithoutARoot) {
  MLPModule model;
  ModuleTracker tracker;
  {
    auto guard = tracker.enter();
    nn::call(model, torch::rand({2, 10}));
  }
  EXPECT_EQ(fqns(tracker),
            (std::vector<std::string>{"MLPModule<Global", "MLPModule.net1<MLPModule",
                                      "MLPModule.relu<MLPModule", "MLPModule.net2<MLPModule"}));
  EXPECT_EQ(tracker.modules()[1].module_type, "torch::nn::Linear");
}

TEST(ModuleTrackerTest, RootNamesItsSubtreeEvenAcrossPlainCalls) {
  auto seq = torch::nn::Sequential(torch::nn::Linear(4, 4), torch::nn::Linear(4, 4));
  auto inner = seq->ptr<torch::nn::LinearImpl>(1);
  ModuleTracker tracker;
  {
    auto guard = tracker.enter(*seq, "Stack");
    // The Sequential itself is called plainly: only the second layer is scoped.
    nn::call(inner, torch::rand({2, 4}));
  }
  EXPECT_EQ(fqns(tracker), (std::vector<std::string>{"Stack.1<Global"}));
}

TEST(ModuleTrackerTest, CurrentModuleAndParentsInForward) {
  MLPModule model;
  ModuleTracker tracker;
  std::string current;
  std::vector<std::string> parents;
  bool bw = true;
  nn::register_forward_hook(*model->net2, [&](torch::nn::Module&, const nn::TensorList&, at::Tensor out) {
    current = tracker.current_module();
    parents = tracker.parents();
    bw = tracker.is_bw();
    return out;
  });
  {
    auto guard = tracker.enter(*model);
    EXPECT_EQ(tracker.current_module(), "Global");
    nn::call(model, torch::rand({2, 10}));
  }
  EXPECT_EQ(current, "MLPModule.net2");
  EXPECT_EQ(parents, (std::vector<std::string>{"Global", "MLPModule", "MLPModule.net2"}));
  EXPECT_FALSE(bw);
  nn::clear_forward_hooks(*model->net2);
}

// P: t = x.redistribute(S(0)) at P's own level, then P.a(t). The backward of
// the redistribute (an all_gather) runs after P.a's backward has finished;
// it belongs to P, not to P.a (PyTorch would name P.a, the last module whose
// backward pre-hook fired).
struct ParentImpl : torch::nn::Module {
  ParentImpl() { a = register_module("a", torch::nn::Linear(4, 4)); }
  at::Tensor forward(at::Tensor x) {
    at::Tensor t = DTensor(x).redistribute({Shard(0)});
    return nn::call(a, t);
  }
  torch::nn::Linear a{nullptr};
};
TORCH_MODULE(Parent);

TEST(ModuleTrackerTest, BackwardWorkBetweenChildrenBelongsToTheParent) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Parent model;
    distribute_parameter(*model->a, "weight", mesh, {Replicate()});
    distribute_parameter(*model->a, "bias", mesh, {Replicate()});
    DTensor x =
        DTensor(distribute_tensor(torch::rand({4, 4}), mesh, {Replicate()}).detach().requires_grad_(true));
    CommDebugMode comm;
    {
      auto guard = comm.enter(*model);
      at::Tensor h = nn::call(model, x);
      DTensor(h).redistribute({Replicate()}).to_local().sum().backward();
    }
    EXPECT_COMM_MODULE_COUNTS(comm, "Global", "forward", {{"all_gather_into_tensor", 1}});
    EXPECT_COMM_MODULE_COUNTS(comm, "Parent", "forward", {});
    EXPECT_COMM_MODULE_COUNTS(comm, "Parent", "backward", {{"all_gather_into_tensor", 1}});
    EXPECT_COMM_MODULE_COUNTS(comm, "Parent.a", "backward", {});
    EXPECT_TRUE(x.grad().defined());
  });
}

// Outside autograd nodes (in tensor hooks) the hook stack answers: an output's
// gradient hook enters the module, an input's leaves it.
TEST(ModuleTrackerTest, TensorHooksMarkBackwardEntryAndExit) {
  Parent model;
  ModuleTracker tracker;
  std::vector<std::string> seen;
  {
    auto guard = tracker.enter(*model);
    at::Tensor x = torch::rand({4, 4}, torch::requires_grad());
    nn::ModuleScope scope(*model, {x});
    at::Tensor t = x * 2;  // at Parent's level
    at::Tensor h = nn::call(model->a, t);
    at::Tensor y = scope.output(h * 3);
    // Registered after the tracker's hooks, so they see its state.
    h.register_hook([&](const at::Tensor&) { seen.push_back("h:" + tracker.current_module()); });
    t.register_hook([&](const at::Tensor&) { seen.push_back("t:" + tracker.current_module()); });
    x.register_hook([&](const at::Tensor&) { seen.push_back("x:" + tracker.current_module()); });
    y.sum().backward();
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"h:Parent.a", "t:Parent", "x:Global"}));
}

// Q: c = C(y) then a = A(x) with x not requiring grad: A's backward never
// "leaves". When C enters, A (not an ancestor of C) is dropped, so after C
// leaves the stack is back at Q, not at the stale A.
struct QImpl : torch::nn::Module {
  QImpl() {
    c = register_module("c", torch::nn::Linear(4, 4));
    a = register_module("a", torch::nn::Linear(4, 4));
  }
  torch::nn::Linear c{nullptr}, a{nullptr};
};
TORCH_MODULE(Q);

TEST(ModuleTrackerTest, InputsWithoutGradientsLeaveNoStaleEntry) {
  Q model;
  ModuleTracker tracker;
  std::vector<std::string> seen;
  {
    auto guard = tracker.enter(*model);
    at::Tensor y = torch::rand({2, 4}, torch::requires_grad());
    at::Tensor x = torch::rand({2, 4});
    nn::ModuleScope scope(*model, {y, x});
    at::Tensor y2 = y * 2;  // Q's own work, before both children
    at::Tensor c = nn::call(model->c, y2);
    at::Tensor a = nn::call(model->a, x);
    at::Tensor out = scope.output(a + c);
    y2.register_hook([&](const at::Tensor&) { seen.push_back(tracker.current_module()); });
    out.sum().backward();
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"Q"}));  // after leaving Q.c; not the stale Q.a
}

TEST(ModuleTrackerTest, PhaseIsBackwardInsideBackward) {
  MLPModule model;
  ModuleTracker tracker;
  std::vector<bool> phases;
  {
    auto guard = tracker.enter(*model);
    at::Tensor y = nn::call(model, torch::rand({2, 10}));
    phases.push_back(tracker.is_bw());
    y.register_hook([&](const at::Tensor&) { phases.push_back(tracker.is_bw()); });
    y.sum().backward();
  }
  EXPECT_EQ(phases, (std::vector<bool>{false, true}));
}

size_t live_hooks(const at::Tensor& t) {
  auto* meta = torch::autograd::impl::get_autograd_meta(t);
  if (meta == nullptr || !meta->cpp_hooks_list_) return 0;
  size_t n = 0;
  for (const auto& hook : *meta->cpp_hooks_list_) n += hook ? 1 : 0;
  return n;
}

TEST(ModuleTrackerTest, NoHooksOutliveTheSession) {
  MLPModule model;
  at::Tensor x = torch::rand({2, 10}, torch::requires_grad());
  at::Tensor y;
  {
    ModuleTracker tracker;
    auto guard = tracker.enter(*model);
    y = nn::call(model, x);
    EXPECT_EQ(live_hooks(y), 2u);  // entering MLPModule and MLPModule.net2
    EXPECT_EQ(live_hooks(x), 2u);  // leaving MLPModule and MLPModule.net1
  }
  EXPECT_EQ(live_hooks(y), 0u);
  EXPECT_EQ(live_hooks(x), 0u);
  y.sum().backward();  // the tracker is gone: nothing may call into it
  EXPECT_TRUE(x.grad().defined());
}

TEST(ModuleTrackerTest, BackwardAfterTheTrackerIsGoneIsHarmless) {
  MLPModule model;
  at::Tensor y;
  auto tracker = std::make_unique<ModuleTracker>();
  {
    auto guard = tracker->enter(*model);
    y = nn::call(model, torch::rand({2, 10}));
    tracker.reset();  // destroyed while entered: exits itself
  }
  y.sum().backward();
  SUCCEED();
}

}  // namespace
}  // namespace dtensor::debug
