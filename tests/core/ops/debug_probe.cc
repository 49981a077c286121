// TEMPORARY: trace of sdpa backward comms.
#include <torch/torch.h>
#include <iostream>
#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/dispatch/op_observer.h"
using namespace dtensor;
struct Log : OpObserver, CollectiveObserver {
  std::vector<std::string> lines;
  void on_dtensor_op(const OpCall& c) override { lines.push_back(c.describe()); }
  void on_collective(const CollectiveEvent& e) override { lines.push_back("   COMM " + e.to_string()); }
};
int main() {
  Log log;
  run_fake_world(4, [&](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    Log mine; ScopedOpObserver s(&mine); auto reg = w.observers().add(&mine);
    auto q = distribute_tensor(torch::randn({4, 4, 8, 4}, torch::kDouble), mesh, {Shard(0)}).requires_grad_(true);
    auto k = distribute_tensor(torch::randn({4, 4, 8, 4}, torch::kDouble), mesh, {Shard(0)}).requires_grad_(true);
    auto v = distribute_tensor(torch::randn({4, 4, 8, 4}, torch::kDouble), mesh, {Shard(0)}).requires_grad_(true);
    auto out = std::get<0>(at::_scaled_dot_product_attention(q, k, v, {}, 0.0, false, true));
    auto c = distribute_tensor(torch::randn({4, 4, 8, 4}, torch::kDouble), mesh, {Replicate()}, DistributeOptions{std::nullopt});
    auto loss = DTensor(out.mul(c).sum()).redistribute({Replicate()});
    mine.lines.push_back("---- backward");
    loss.backward();
    if (w.rank() == 0) log = mine;
  });
  for (auto& l : log.lines) std::cout << l.substr(0, 200) << "\n";
}
