// Tests of dtensor::zeros/ones/empty/full: local shapes and values on 1-D and
// 2-D meshes (even and uneven), options (dtype, requires_grad), local-only
// allocation in a huge solo world, and the errors users see.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "backends/solo/solo_world.h"
#include "core/dtensor_impl.h"
#include "core/factories.h"
#include "layout/shard_layout.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using testing::error_of;

using Shape = std::vector<int64_t>;

// Every placement list of length `mesh_ndim` over R, S(0) .. S(tensor_ndim - 1).
std::vector<Placements> shard_replicate_lists(int mesh_ndim, int64_t tensor_ndim) {
  Placements alphabet = {Replicate()};
  for (int64_t d = 0; d < tensor_ndim; ++d) alphabet.push_back(Shard(d));
  std::vector<Placements> lists = {{}};
  for (int i = 0; i < mesh_ndim; ++i) {
    std::vector<Placements> next;
    for (const Placements& prefix : lists) {
      for (const Placement& p : alphabet) {
        Placements longer = prefix;
        longer.push_back(p);
        next.push_back(longer);
      }
    }
    lists = next;
  }
  return lists;
}

// The block this rank must hold, from the pure layout code.
ShardLayout expected_layout(const Shape& shape, const DeviceMesh& mesh, const Placements& placements) {
  return local_shape_and_offset(shape, mesh.mesh_shape(), placements, mesh.get_coordinate());
}

void expect_contains(const std::string& text, const std::vector<std::string>& parts) {
  EXPECT_FALSE(text.empty()) << "expected an error";
  for (const auto& part : parts) {
    EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
  }
}

struct MeshCase {
  Shape mesh_shape;
  std::vector<Shape> tensor_shapes;
};

const std::vector<MeshCase>& mesh_cases() {
  static const std::vector<MeshCase> cases = {
      {{4}, {{8, 4}, {5, 3}, {13}, {3, 2}, {0, 3}, {}}},
      {{3}, {{6, 2}, {5, 7}, {1}, {2, 0}}},
      {{2, 2}, {{8, 4}, {5, 3}, {7}, {3, 1, 5}}},
      {{2, 3}, {{6, 6}, {5, 4}, {1, 2}}},
      {{1}, {{4, 2}, {}}},
  };
  return cases;
}

int64_t mesh_size(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// Runs check(mesh, shape, placements) for every case and placement list on every rank.
void for_each_layout(
    const std::function<void(const DeviceMesh&, const Shape&, const Placements&)>& check) {
  for (const MeshCase& mc : mesh_cases()) {
    run_fake_world(mesh_size(mc.mesh_shape), [&](World&) {
      auto mesh = DeviceMesh::init(c10::kCPU, mc.mesh_shape);
      for (const Shape& shape : mc.tensor_shapes) {
        for (const Placements& placements :
             shard_replicate_lists(mesh.ndim(), static_cast<int64_t>(shape.size()))) {
          SCOPED_TRACE(mesh.to_string() + " shape " + c10::str(c10::IntArrayRef(shape)) + " " +
                       to_string(placements));
          check(mesh, shape, placements);
        }
      }
    });
  }
}

TEST(FactoriesTest, ZerosOnesFullHoldTheirLocalBlockAndGatherToTheGlobalTensor) {
  for_each_layout([](const DeviceMesh& mesh, const Shape& shape, const Placements& placements) {
    const ShardLayout layout = expected_layout(shape, mesh, placements);
    DTensor z = zeros(shape, mesh, placements);
    DTensor o = ones(shape, mesh, placements);
    DTensor f = full(shape, 2.5, mesh, placements);
    for (const DTensor* d : {&z, &o, &f}) {
      EXPECT_EQ(d->sizes().vec(), shape);
      EXPECT_EQ(d->placements(), placements);
      EXPECT_EQ(d->scalar_type(), at::kFloat);
      EXPECT_EQ(d->local_tensor().sizes().vec(), layout.local_shape);
      EXPECT_TRUE(d->local_tensor().is_contiguous());
      EXPECT_FALSE(d->requires_grad());
    }
    EXPECT_TRUE(torch::equal(z.full_tensor(), torch::zeros(shape)));
    EXPECT_TRUE(torch::equal(o.full_tensor(), torch::ones(shape)));
    EXPECT_TRUE(torch::equal(f.full_tensor(), torch::full(shape, 2.5)));
  });
}

// PyTorch 2.15's linspace / logspace: each rank starts at start + offset * step.
TEST(FactoriesTest, LinspaceAndLogspaceHoldTheirPieceOfTheGlobalRange) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    // 5 steps over 4 ranks: 2, 2, 1, 0 elements.
    DTensor lin = dtensor::linspace(-1.0, 3.0, 5, mesh, {Shard(0)}, at::kDouble);
    const int64_t offsets[] = {0, 2, 4, 5}, counts[] = {2, 2, 1, 0};
    const int r = world.rank();
    const double step = 4.0 / 4;
    EXPECT_TRUE(at::equal(lin.local_tensor(),
                          at::linspace(-1.0 + offsets[r] * step, -1.0 + offsets[r] * step + step * (counts[r] - 1),
                                       counts[r], at::kDouble)));
    EXPECT_TRUE(at::allclose(lin.full_tensor(), at::linspace(-1.0, 3.0, 5, at::kDouble)));
    DTensor log = dtensor::logspace(0.0, 3.0, 7, 2.0, mesh, {Replicate()}, at::kDouble);
    EXPECT_TRUE(at::allclose(log.full_tensor(), at::logspace(0.0, 3.0, 7, 2.0, at::kDouble)));
    auto mesh2 = DeviceMesh::init(c10::kCPU, {2, 2});
    DTensor nested = dtensor::linspace(0.0, 1.0, 9, mesh2, {Shard(0), Shard(0)});
    EXPECT_EQ(nested.scalar_type(), at::kFloat);  // the default dtype, as at::linspace
    EXPECT_TRUE(at::allclose(nested.full_tensor(), at::linspace(0.0, 1.0, 9)));
    EXPECT_TRUE(at::allclose(dtensor::linspace(2.0, 5.0, 1, mesh, {Shard(0)}).full_tensor(),
                             at::linspace(2.0, 5.0, 1)));
    EXPECT_NE(error_of([&] { dtensor::linspace(0, 1, -1, mesh, {Shard(0)}); }).find("steps must be >= 0"),
              std::string::npos);
    EXPECT_NE(error_of([&] { dtensor::linspace(0, 1, 4, mesh, {Partial()}); }).find("not a valid factory placement"),
              std::string::npos);
  });
}

TEST(FactoriesTest, EmptyAllocatesOnlyTheLocalBlock) {
  for_each_layout([](const DeviceMesh& mesh, const Shape& shape, const Placements& placements) {
    DTensor e = empty(shape, mesh, placements, at::kDouble);
    EXPECT_EQ(e.sizes().vec(), shape);
    EXPECT_EQ(e.scalar_type(), at::kDouble);
    EXPECT_EQ(e.local_tensor().sizes().vec(), expected_layout(shape, mesh, placements).local_shape);
  });
}

TEST(FactoriesTest, NegativeShardDimsAreNormalized) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    DTensor d = ones({5, 6}, mesh, {Shard(-1), Shard(-2)});
    EXPECT_EQ(d.placements(), (Placements{Shard(1), Shard(0)}));
    EXPECT_EQ(d.local_tensor().sizes().vec(),
              expected_layout({5, 6}, mesh, {Shard(1), Shard(0)}).local_shape);
    EXPECT_TRUE(torch::equal(d.full_tensor(), torch::ones({5, 6})));
  });
}

TEST(FactoriesTest, DtypeOptionIsHonoured) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    for (at::ScalarType dtype : {at::kDouble, at::kHalf, at::kBFloat16, at::kInt, at::kLong, at::kBool}) {
      SCOPED_TRACE(c10::toString(dtype));
      DTensor o = ones({3, 4}, mesh, {Shard(1)}, dtype);
      EXPECT_EQ(o.scalar_type(), dtype);
      EXPECT_EQ(o.local_tensor().scalar_type(), dtype);
      EXPECT_TRUE(torch::equal(o.full_tensor(), torch::ones({3, 4}, dtype)));
      EXPECT_EQ(zeros({3}, mesh, {Replicate()}, dtype).local_tensor().scalar_type(), dtype);
    }
  });
}

TEST(FactoriesTest, FullInfersItsDtypeFromTheFillValueLikeAtFull) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    EXPECT_EQ(full({2, 6}, 3, mesh, {Shard(1)}).scalar_type(), at::kLong);
    EXPECT_EQ(full({2, 6}, true, mesh, {Shard(1)}).scalar_type(), at::kBool);
    EXPECT_EQ(full({2, 6}, 0.5, mesh, {Shard(1)}).scalar_type(), at::kFloat);
    EXPECT_EQ(full({2, 6}, c10::complex<double>(1, 2), mesh, {Shard(1)}).scalar_type(), at::kComplexFloat);
    EXPECT_EQ(full({2, 6}, 3, mesh, {Shard(1)}, at::kDouble).scalar_type(), at::kDouble);
    for (const auto& value : {at::Scalar(7), at::Scalar(true), at::Scalar(-1.25)}) {
      DTensor d = full({5, 3}, value, mesh, {Shard(0)});
      EXPECT_TRUE(torch::equal(d.full_tensor(), torch::full({5, 3}, value)));
    }
  });
}

TEST(FactoriesTest, RequiresGradMakesALeafWhoseGradientIsADTensor) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    DTensor w = ones({5, 3}, mesh, {Shard(0), Replicate()},
                     at::TensorOptions().dtype(at::kDouble).requires_grad(true));
    EXPECT_TRUE(w.requires_grad());
    EXPECT_TRUE(w.is_leaf());
    EXPECT_FALSE(w.local_tensor().requires_grad());
    (w * 3).sum().backward();
    ASSERT_TRUE(w.grad().defined());
    ASSERT_TRUE(is_dtensor(w.grad()));
    EXPECT_TRUE(torch::equal(DTensor(w.grad()).full_tensor(), torch::full({5, 3}, 3.0, at::kDouble)));
    DTensor z = zeros({4}, mesh, {Replicate(), Shard(0)}, at::TensorOptions().requires_grad(true));
    EXPECT_TRUE(z.requires_grad());
    EXPECT_TRUE(z.is_leaf());
  });
}

TEST(FactoriesTest, ZerosAcceptPartialBecauseEveryReductionOfZerosIsZero) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kProduct}) {
      DTensor z = zeros({5, 3}, mesh, {Partial(op), Shard(1)});
      SCOPED_TRACE(to_string(z.placements()));
      EXPECT_TRUE(z.placements()[0].is_partial());
      EXPECT_TRUE(torch::equal(z.full_tensor(), torch::zeros({5, 3})));
    }
  });
}

TEST(FactoriesTest, PartialIsRefusedWithAMessageNamingOpShapePlacementsMeshAndRank) {
  run_fake_world(2, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    const std::string rank = "rank " + std::to_string(world.rank());
    expect_contains(error_of<c10::Error>([&] { ones({4, 2}, mesh, {Partial()}); }),
                    {"dtensor::ones", "[4, 2]", "P(sum)", "DeviceMesh(cpu", rank, "redistribute"});
    expect_contains(error_of<c10::Error>([&] { full({4}, 1.0, mesh, {Partial(ReduceOp::kMax)}); }),
                    {"dtensor::full", "P(max)"});
    expect_contains(error_of<c10::Error>([&] { empty({4}, mesh, {Partial()}); }), {"dtensor::empty", "P(sum)"});
    expect_contains(error_of<c10::Error>([&] { rand({4}, mesh, {Partial()}); }), {"dtensor::rand", "P(sum)"});
    expect_contains(error_of<c10::Error>([&] { randn({4}, mesh, {Partial(ReduceOp::kAvg)}); }),
                    {"dtensor::randn", "P(avg)"});
  });
}

TEST(FactoriesTest, InvalidArgumentsRaiseC10ErrorsNamingTheFactory) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    const std::string rank = "rank " + std::to_string(world.rank());
    // A shard dim outside the tensor.
    expect_contains(error_of<c10::Error>([&] { zeros({4, 2}, mesh, {Shard(2), Replicate()}); }),
                    {"dtensor::zeros", "[4, 2]", "S(2)", "DeviceMesh(cpu", rank});
    expect_contains(error_of<c10::Error>([&] { ones({4}, mesh, {Shard(-2), Replicate()}); }), {"dtensor::ones"});
    expect_contains(error_of<c10::Error>([&] { randn({}, mesh, {Shard(0), Replicate()}); }), {"dtensor::randn"});
    // Placement count differs from the mesh's ndim.
    expect_contains(error_of<c10::Error>([&] { ones({4, 2}, mesh, {Shard(0)}); }), {"dtensor::ones", "[S(0)]", rank});
    expect_contains(error_of<c10::Error>([&] { full({4}, 1, mesh, {Shard(0), Replicate(), Replicate()}); }),
                    {"dtensor::full"});
    // Negative size.
    expect_contains(error_of<c10::Error>([&] { zeros({4, -1}, mesh, {Replicate(), Replicate()}); }),
                    {"dtensor::zeros", "negative"});
    // requires_grad on an integer dtype.
    expect_contains(error_of<c10::Error>([&] {
                      ones({4}, mesh, {Replicate(), Shard(0)},
                           at::TensorOptions().dtype(at::kLong).requires_grad(true));
                    }),
                    {"dtensor::ones", "requires_grad", "Long"});
    // A device other than the mesh's.
    expect_contains(error_of<c10::Error>([&] { zeros({4}, mesh, {Replicate(), Shard(0)}, c10::Device(c10::kCUDA, 0)); }),
                    {"dtensor::zeros", "cuda:0", "mesh's device"});
    // Non-strided layout.
    expect_contains(error_of<c10::Error>([&] { zeros({4}, mesh, {Replicate(), Replicate()}, at::kSparse); }),
                    {"dtensor::zeros", "strided"});
  });
}

TEST(FactoriesTest, ExplicitMeshDeviceIsAccepted) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor d = ones({4}, mesh, {Shard(0)}, at::TensorOptions().device(c10::kCPU));
    EXPECT_EQ(d.local_tensor().device(), mesh.device());
  });
}

TEST(FactoriesTest, MetaMeshAllocatesNoData) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kMeta, {2, 2});
    DTensor d = full({1 << 20, 1 << 20}, 1.0, mesh, {Shard(0), Shard(1)});
    EXPECT_TRUE(d.local_tensor().is_meta());
    EXPECT_EQ(d.local_tensor().sizes().vec(), (Shape{1 << 19, 1 << 19}));
  });
}

// A 2^36-element global tensor on 2^20 ranks: only the 2^16-element local
// block may be allocated, and building it must not communicate.
TEST(FactoriesTest, HugeSoloWorldAllocatesOnlyTheLocalBlockWithoutCollectives) {
  SoloOptions options;
  options.error_on_collective = true;
  run_solo_world(
      1 << 20, 12345,
      [](World&) {
        auto mesh = DeviceMesh::init(c10::kCPU, {1 << 10, 1 << 10});
        const Shape shape = {int64_t{1} << 18, int64_t{1} << 18};
        DTensor d = ones(shape, mesh, {Shard(0), Shard(1)});
        EXPECT_EQ(d.sizes().vec(), shape);
        EXPECT_EQ(d.local_tensor().sizes().vec(), (Shape{1 << 8, 1 << 8}));
        EXPECT_TRUE(torch::equal(d.local_tensor(), torch::ones({1 << 8, 1 << 8})));
        DTensor z = zeros(shape, mesh, {Replicate(), Shard(0)}, at::kDouble);
        EXPECT_EQ(z.local_tensor().sizes().vec(), (Shape{1 << 8, 1 << 18}));
      },
      options);
}

}  // namespace
}  // namespace dtensor
