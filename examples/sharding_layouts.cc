// The first demo: how a few tensors are laid out on a few device meshes, and
// what a redistribution between two layouts costs. Pure layout/: no
// LibTorch, no ranks are started.
//   bazel run //examples:sharding_layouts
#include <iostream>
#include <string>
#include <vector>

#include "layout/mesh_shape.h"
#include "layout/placement.h"
#include "layout/redistribute_plan.h"
#include "layout/visualize_sharding.h"

namespace {

struct Example {
  std::vector<int64_t> mesh;
  std::vector<std::string> dim_names;
  std::vector<int64_t> shape;
  std::string placements;
};

void show(const Example& e) {
  auto mesh = dtensor::MeshShape::create(e.mesh, e.dim_names);
  auto placements = dtensor::parse_placements(e.placements);
  std::string header = "tensor " + std::to_string(e.shape[0]) +
                       (e.shape.size() > 1 ? "x" + std::to_string(e.shape[1]) : std::string()) +
                       " as " + dtensor::to_string(placements) + " on " + mesh.to_string();
  std::cout << dtensor::visualize_sharding(e.shape, mesh, placements, header) << "\n";
}

void show_plan(const std::vector<int64_t>& mesh_shape, const std::vector<int64_t>& shape,
               const std::string& from, const std::string& to) {
  auto mesh = dtensor::MeshShape::create(mesh_shape);
  auto plan = dtensor::plan_redistribute(shape, /*element_size=*/4, mesh,
                                         dtensor::parse_placements(from), dtensor::parse_placements(to));
  std::cout << plan.to_string() << "\n";
}

}  // namespace

int main() {
  std::cout << "== Sharding layouts (which rank holds which block) ==\n\n";
  show({{4}, {"tp"}, {8, 6}, "S(0)"});
  show({{4}, {"tp"}, {13}, "S(0)"});  // uneven: 4, 4, 4, 1 rows
  show({{2, 2}, {"dp", "tp"}, {8, 6}, "S(0),S(1)"});
  show({{2, 2}, {"dp", "tp"}, {8, 6}, "R,S(1)"});
  show({{2, 2}, {"dp", "tp"}, {8, 6}, "S(0),S(0)"});  // dim 0 split over both mesh dims
  show({{2, 2}, {"dp", "tp"}, {4, 4}, "P(sum),R"});
  std::cout << "== Redistribution plans (float32) ==\n\n";
  show_plan({2, 2}, {8, 8}, "S(0),S(1)", "S(1),S(0)");
  show_plan({2, 2}, {8, 8}, "P(sum),P(sum)", "S(0),S(1)");
  show_plan({4}, {13, 8}, "S(0)", "S(1)");
  return 0;
}
