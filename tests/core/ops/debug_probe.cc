// TEMPORARY
#include <torch/torch.h>
#include <iostream>
#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
using namespace dtensor;
int main() {
  for (int i = 0; i < 3; ++i) {
    try {
      run_fake_world(4, [](World& w) {
        auto mesh = DeviceMesh::init(c10::kCPU, {4});
        DTensor x = distribute_tensor(torch::ones({2, 5}), mesh, {Shard(1)});
        DTensor y = distribute_tensor(torch::ones({2, 5}), mesh, {Replicate()});
        DTensor z = x * y;
        std::cout << "rank " << w.rank() << " local x " << x.local_tensor().sizes() << " z " << to_string(z.placements()) << "\n";
      });
    } catch (const std::exception& e) { std::cout << "EXC " << std::string(e.what()).substr(0, 200) << "\n"; }
  }
}
