// TEMPORARY: per-rank op / collective trace of one case.
#include <torch/torch.h>
#include <iostream>
#include <mutex>
#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/dispatch/op_observer.h"
#include "core/dispatch/op_dispatcher.h"

using namespace dtensor;
std::mutex m;
struct Log : OpObserver, CollectiveObserver {
  int rank; std::vector<std::string> lines;
  void on_dtensor_op(const OpCall& c) override { lines.push_back(c.describe()); }
  void on_collective(const CollectiveEvent& e) override { lines.push_back("   COMM " + e.to_string()); }
};
int main(int argc, char** argv) {
  dtensor::init();
  std::string which = argc > 1 ? argv[1] : "split";
  std::vector<Log> logs(4);
  try {
  run_fake_world(4, [&](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    Log& log = logs[w.rank()]; log.rank = w.rank();
    ScopedOpObserver s(&log); auto reg = w.observers().add(&log);
    torch::manual_seed(0);
    at::Tensor g = torch::randn({7, 5}, torch::kDouble);
    DTensorSpec spec{mesh, {Shard(1)}, TensorMeta{{7, 5}, {5, 1}, at::kDouble}};
    auto off = spec.global_offset(); auto shp = spec.local_shape();
    at::Tensor x = make_dtensor(g.narrow(1, off[1], shp[1]).clone(), spec);
    x = x.detach().requires_grad_(true);
    auto p = torch::split(x, 2, 0);
    at::Tensor loss;
    for (auto& t : p) { auto c = distribute_tensor(torch::ones(t.sizes(), torch::kDouble), mesh, {Replicate()}, DistributeOptions{std::nullopt}); auto term = t.mul(c).sum(); loss = loss.defined() ? loss.add(term) : term; }
    log.lines.push_back("--- backward");
    DTensor(loss).redistribute({Replicate()}).backward();
  });
  } catch (std::exception& e) { std::cout << "EXC " << std::string(e.what()).substr(0, 400) << "\n"; }
  for (auto& l : logs) { std::cout << "== rank " << l.rank << "\n"; for (auto& s : l.lines) std::cout << s << "\n"; }
}
