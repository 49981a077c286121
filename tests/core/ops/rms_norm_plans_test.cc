// _fused_rms_norm_backward (core/ops/norm_rules.cc) has no CPU kernel, so the
// differential corpus cannot run it; its placements are checked against
// what PyTorch 2.15's strategy does on meta tensors instead
// (testdata/rms_norm_plans-2.15.json, recorded by pytorch_rms_norm_plans.py):
// each case replayed on a solo world's meta rank gives PyTorch's placements
// of grad_input and grad_weight, and communicates where PyTorch did; or,
// where it lays them out otherwise, issues fewer collectives over the
// program (row fewer-collectives-overall of tests/diff/README.md: an input
// sharded on the normalized dim is gathered, 2 all_gathers, where PyTorch
// moves it to a leading dim, 2 all_to_alls, and leaves grad_weight a
// Partial sum that a later all_reduce must reduce).
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/collective_event.h"
#include "backends/solo/solo_world.h"
#include "core/dtensor.h"
#include "core/init.h"

namespace dtensor {
namespace {

struct CollectiveCount : CollectiveObserver {
  int count = 0;
  void on_collective(const CollectiveEvent&) override { ++count; }
};

// Collectives a result still owes: one reduction per Partial mesh dim.
int pending(const std::vector<std::string>& placements) {
  int n = 0;
  for (const std::string& p : placements) n += p.rfind("P(", 0) == 0 ? 1 : 0;
  return n;
}

Placements parse_all(const nlohmann::json& names) {
  Placements out;
  for (const auto& p : names) out.push_back(parse_placement(p.get<std::string>()));
  return out;
}

std::vector<std::string> spelled(const Placements& placements) {
  std::vector<std::string> out;
  for (const Placement& p : placements) out.push_back(p.to_string());
  return out;
}

// A meta DTensor of global `shape` laid out as `placements` (even shards).
DTensor meta_input(const DeviceMesh& mesh, const Placements& placements, std::vector<int64_t> shape) {
  for (size_t d = 0; d < placements.size(); ++d) {
    if (placements[d].is_shard()) shape[static_cast<size_t>(placements[d].shard_dim())] /= mesh.size(static_cast<int>(d));
  }
  return DTensor::from_local(at::empty(shape, at::TensorOptions().dtype(at::kFloat).device(c10::kMeta)), mesh,
                             placements);
}

TEST(RmsNormPlansTest, FusedBackwardPlacesEveryTensorAsPyTorch) {
  auto op = c10::Dispatcher::singleton().findSchema({"aten::_fused_rms_norm_backward", ""});
  if (!op) GTEST_SKIP() << "this LibTorch has no _fused_rms_norm_backward";
  std::ifstream file("tests/core/ops/testdata/rms_norm_plans-2.15.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json golden = nlohmann::json::parse(file);
  init();
  const auto input_shape = golden["input"].get<std::vector<int64_t>>();
  const auto rstd_shape = golden["rstd"].get<std::vector<int64_t>>();
  int compared = 0, deviations = 0;
  for (const auto& c : golden["cases"]) {
    SCOPED_TRACE(c.dump());
    SoloOptions options;
    options.device = c10::kMeta;
    run_solo_world(golden["world_size"].get<int64_t>(), golden["rank"].get<int64_t>(), [&](World& world) {
      CollectiveCount collectives;
      auto registration = world.observers().add(&collectives);
      auto mesh = DeviceMesh::init(c10::kMeta, c["mesh"].get<std::vector<int64_t>>());
      const Placements x = parse_all(c["input"]);
      DTensor grad = meta_input(mesh, x, input_shape), input = meta_input(mesh, x, input_shape);
      DTensor rstd = meta_input(mesh, parse_all(c["rstd"]), rstd_shape);
      DTensor weight = meta_input(mesh, parse_all(c["weight"]), {input_shape.back()});
      torch::jit::Stack stack{grad, input, c10::List<int64_t>({input_shape.back()}), rstd, weight,
                              c10::List<bool>({true, true})};
      if (c.contains("raised")) {
        EXPECT_THROW(op->callBoxed(&stack), c10::Error);
        return;
      }
      op->callBoxed(&stack);
      ASSERT_EQ(stack.size(), 2u);
      const auto grad_input = spelled(DTensor(stack[0].toTensor()).placements());
      const auto grad_weight = spelled(DTensor(stack[1].toTensor()).placements());
      const auto theirs_input = c["grad_input"].get<std::vector<std::string>>();
      const auto theirs_weight = c["grad_weight"].get<std::vector<std::string>>();
      int theirs = pending(theirs_weight) + pending(theirs_input);
      for (const auto& [kind, n] : c["comms"].items()) theirs += n.get<int>();
      if (grad_input == theirs_input && grad_weight == theirs_weight) {
        EXPECT_EQ(collectives.count > 0, theirs > pending(theirs_weight) + pending(theirs_input));
      } else {
        ++deviations;
        EXPECT_LT(collectives.count + pending(grad_weight) + pending(grad_input), theirs)
            << "laid out unlike PyTorch without saving a collective";
      }
    }, options);
    ++compared;
  }
  EXPECT_EQ(compared, 11);
  EXPECT_EQ(deviations, 1);  // [S(2)] on the 1-D mesh (on the 2-D one PyTorch gathers too)
}

}  // namespace
}  // namespace dtensor
