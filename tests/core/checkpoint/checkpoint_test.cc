// Sharded checkpoints: saved once per block, loaded exactly onto other world
// sizes, meshes and placements and onto one device; Partial values; modules;
// errors; and the files open in Python's safetensors.
#include <gtest/gtest.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "backends/fake/fake_world.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/chunks.h"
#include "core/checkpoint/safetensors.h"
#include "core/dtensor.h"
#include "core/parallel/parallelize.h"
#include "testing/error_of.h"
#include "testing/scratch_dir.h"
#include "testing/collective_counter.h"

namespace dtensor::checkpoint {
namespace {

namespace fs = std::filesystem;

// The global values every test saves: deterministic, distinct per element.
struct Globals {
  at::Tensor w = torch::arange(48, torch::kFloat64).reshape({8, 6});
  at::Tensor b = torch::arange(6, torch::kBFloat16);
  at::Tensor uneven = torch::arange(15, torch::kInt64).reshape({5, 3});  // 5 rows on 2x2
  at::Tensor mask = torch::arange(7).remainder(2).to(torch::kBool);
  at::Tensor step = torch::tensor({42}, torch::kInt32);  // plain, written by rank 0
};

TEST(CheckpointChunksTest, ReplicasAreWrittenOnceAndEmptyBlocksNotAtAll) {
  const MeshShape mesh = MeshShape::create({2, 2});
  auto rows = write_chunks({8, 6}, mesh, {Shard(0), Replicate()});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].mesh_rank, 0);
  EXPECT_EQ(rows[1].mesh_rank, 2);
  EXPECT_EQ(rows[1].box, (Box{{4, 0}, {4, 6}}));
  EXPECT_EQ(write_chunks({8, 6}, mesh, {Shard(0), Shard(1)}).size(), 4u);
  EXPECT_EQ(write_chunks({8, 6}, mesh, {Replicate(), Replicate()}).size(), 1u);
  // 3 rows over 4 shards: torch.chunk gives 1, 1, 1, 0 rows.
  auto uneven = write_chunks({3}, MeshShape::create({4}), {Shard(0)});
  ASSERT_EQ(uneven.size(), 3u);
  EXPECT_EQ(uneven[2].box, (Box{{2}, {1}}));
  // An empty tensor keeps one (empty) chunk so that load finds it.
  EXPECT_EQ(write_chunks({0, 6}, mesh, {Shard(0), Replicate()}).size(), 1u);
  EXPECT_EQ(intersect(Box{{2, 0}, {4, 6}}, Box{{4, 0}, {4, 6}}), (Box{{4, 0}, {2, 6}}));
  EXPECT_FALSE(intersect(Box{{0}, {4}}, Box{{4}, {4}}).has_value());
}

TEST(SafetensorsTest, RoundTripsEveryDtypeAndRejectsCorruptHeaders) {
  const std::string dir = testing::scratch_dir("safetensors");
  Globals g;
  const std::string path = dir + "/t.safetensors";
  write_safetensors(path, {{"b", g.b}, {"w", g.w}, {"mask", g.mask}, {"w_t", g.w.t()}});
  SafetensorsFile file(path);
  EXPECT_EQ(file.entries().size(), 4u);
  EXPECT_TRUE(at::equal(file.tensor("w"), g.w));
  EXPECT_TRUE(at::equal(file.tensor("w_t"), g.w.t())) << "non-contiguous input is written row-major";
  EXPECT_TRUE(at::equal(file.tensor("b"), g.b));
  EXPECT_TRUE(at::equal(file.tensor("mask"), g.mask));
  EXPECT_THROW(
      {
        try {
          file.tensor("nope");
        } catch (const c10::Error& e) {
          EXPECT_NE(std::string(e.what()).find("it has: b, mask, w, w_t"), std::string::npos);
          throw;
        }
      },
      c10::Error);

  std::ofstream(dir + "/bad.safetensors", std::ios::binary) << "\xff\xff\xff\xff\xff\xff\xff\x7f{}";
  EXPECT_THROW(SafetensorsFile(dir + "/bad.safetensors"), c10::Error);
  EXPECT_THROW(write_safetensors(dir + "/c.safetensors", {{"c", torch::ones({2}, torch::kComplexFloat)}}),
               c10::Error);
}

// Saves Globals on a (2, 2) mesh of 4 fake ranks.
void save_on_2x2(const std::string& dir) {
  run_fake_world(4, [&](World&) {
    Globals g;
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    StateDict state = {
        {"w", distribute_tensor(g.w, mesh, {Shard(0), Replicate()})},
        {"b", distribute_tensor(g.b, mesh, {Replicate(), Shard(0)})},
        {"uneven", distribute_tensor(g.uneven, mesh, {Shard(0), Shard(0)})},
        {"mask", distribute_tensor(g.mask, mesh, {Replicate(), Replicate()})},
        {"step", g.step},
    };
    save(state, dir);
  });
}

TEST(CheckpointTest, EveryElementIsWrittenOnceByItsOwner) {
  const std::string dir = testing::scratch_dir("written_once");
  save_on_2x2(dir);
  Globals g;
  std::map<std::string, int64_t> written;
  for (int rank = 0; rank < 4; ++rank) {
    SafetensorsFile file(dir + "/" + rank_file_name(rank));
    for (const auto& [name, entry] : file.entries()) {
      written[name] += file.tensor(name).numel();
    }
  }
  EXPECT_EQ(written["w"], g.w.numel());
  EXPECT_EQ(written["b"], g.b.numel());
  EXPECT_EQ(written["uneven"], g.uneven.numel());
  EXPECT_EQ(written["mask"], g.mask.numel());
  EXPECT_EQ(written["step"], 1);
  // Rank 1 replicates rank 0 along tp for w and mask, and holds b's second half.
  SafetensorsFile rank1(dir + "/" + rank_file_name(1));
  EXPECT_FALSE(rank1.contains("w"));
  EXPECT_TRUE(rank1.contains("b"));
  EXPECT_TRUE(at::equal(rank1.tensor("b"), g.b.slice(0, 3, 6)));
}

// Loads into `placements` per tensor on a mesh of `shape`, returns full tensors.
void expect_loads_on(const std::string& dir, int64_t world_size, std::vector<int64_t> shape,
                     Placements w_p, Placements b_p, Placements uneven_p) {
  run_fake_world(world_size, [&](World& world) {
    Globals g;
    auto mesh = DeviceMesh::init(c10::kCPU, shape);
    StateDict state = {
        {"w", distribute_tensor(torch::zeros_like(g.w), mesh, w_p)},
        {"b", distribute_tensor(torch::zeros_like(g.b), mesh, b_p)},
        {"uneven", distribute_tensor(torch::zeros_like(g.uneven), mesh, uneven_p)},
        {"mask", distribute_tensor(torch::zeros_like(g.mask), mesh, b_p)},
        {"step", torch::zeros_like(g.step)},
    };
    testing::CollectiveCounter counter(world);
    load(state, dir);
    EXPECT_EQ(counter.total(), 0) << "load reads files, it does not communicate";
    EXPECT_TRUE(at::equal(DTensor(state[0].second).full_tensor(), g.w)) << "rank " << world.rank();
    EXPECT_TRUE(at::equal(DTensor(state[1].second).full_tensor(), g.b));
    EXPECT_TRUE(at::equal(DTensor(state[2].second).full_tensor(), g.uneven));
    EXPECT_TRUE(at::equal(DTensor(state[3].second).full_tensor(), g.mask));
    EXPECT_TRUE(at::equal(state[4].second, g.step));
  });
}

TEST(CheckpointTest, ReshardsOnLoadOntoOtherWorldSizesMeshesAndPlacements) {
  const std::string dir = testing::scratch_dir("reshard");
  save_on_2x2(dir);
  expect_loads_on(dir, 4, {4}, {Shard(1)}, {Replicate()}, {Shard(0)});
  expect_loads_on(dir, 8, {8}, {Shard(0)}, {Shard(0)}, {Shard(1)});
  expect_loads_on(dir, 8, {2, 4}, {Shard(1), Shard(0)}, {Shard(0), Replicate()}, {Replicate(), Shard(0)});
  expect_loads_on(dir, 2, {2}, {Replicate()}, {Shard(0)}, {Shard(0)});
}

TEST(CheckpointTest, LoadsOntoOneDeviceWithoutAWorld) {
  const std::string dir = testing::scratch_dir("one_device");
  save_on_2x2(dir);
  Globals g;
  StateDict state = {{"w", torch::zeros_like(g.w)},
                     {"uneven", torch::zeros_like(g.uneven, torch::kFloat32)},
                     {"b", torch::zeros_like(g.b)}};
  load(state, dir);
  EXPECT_TRUE(at::equal(state[0].second, g.w));
  EXPECT_TRUE(at::equal(state[1].second, g.uneven.to(torch::kFloat32))) << "dtype converted";
  EXPECT_TRUE(at::equal(state[2].second, g.b));
}

TEST(CheckpointTest, PartialValuesAreSavedReducedAndLoadBackAsPartial) {
  const std::string dir = testing::scratch_dir("partial");
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    // Each rank holds rank + 1: the value is 1 + 2 + 3 + 4 = 10.
    at::Tensor local = torch::full({3}, static_cast<double>(world.rank() + 1));
    save({{"p", DTensor::from_local(local, mesh, {Partial()})}}, dir);
  });
  EXPECT_TRUE(at::equal(SafetensorsFile(dir + "/" + rank_file_name(0)).tensor("p"),
                        torch::full({3}, 10.0)));
  run_fake_world(2, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor sum = DTensor::from_local(torch::ones({3}, torch::kFloat64), mesh, {Partial()});
    DTensor max = DTensor::from_local(torch::ones({3}, torch::kFloat64), mesh, {Partial(ReduceOp::kMax)});
    load({{"p", sum}, {"p", max}}, dir);
    // Partial(sum): the value on the first rank, zeros on the other; max: everywhere.
    EXPECT_TRUE(at::equal(sum.to_local(), torch::full({3}, world.rank() == 0 ? 10.0 : 0.0)));
    EXPECT_TRUE(at::equal(max.to_local(), torch::full({3}, 10.0)));
    EXPECT_TRUE(at::equal(sum.full_tensor(), torch::full({3}, 10.0)));
    EXPECT_TRUE(at::equal(max.full_tensor(), torch::full({3}, 10.0)));
  });
}

TEST(CheckpointTest, ModulesSaveShardedAndLoadIntoAnotherSharding) {
  const std::string dir = testing::scratch_dir("module");
  torch::manual_seed(0);
  torch::nn::Sequential reference(torch::nn::Linear(8, 16), torch::nn::Linear(16, 4));
  at::Tensor x = torch::randn({3, 8});
  at::Tensor expected = reference->forward(x);
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    torch::nn::Sequential model(torch::nn::Linear(8, 16), torch::nn::Linear(16, 4));
    {
      torch::NoGradGuard no_grad;
      for (auto& [name, t] : module_state(*model)) t.copy_(reference->named_parameters()[name]);
    }
    parallelize_module(*model, mesh, {{"0", ColwiseParallel()}, {"1", RowwiseParallel()}});
    save(*model, dir);
  });
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    torch::nn::Sequential model(torch::nn::Linear(8, 16), torch::nn::Linear(16, 4));
    parallelize_module(*model, mesh, {{"0", RowwiseParallel()}, {"1", ColwiseParallel()}});
    load(*model, dir);
    for (const auto& [name, t] : module_state(*model)) {
      EXPECT_TRUE(at::equal(DTensor(t).full_tensor(), reference->named_parameters()[name])) << name;
    }
  });
  torch::nn::Sequential plain(torch::nn::Linear(8, 16), torch::nn::Linear(16, 4));
  load(*plain, dir);
  EXPECT_TRUE(at::allclose(plain->forward(x), expected));
}

using testing::error_of;

TEST(CheckpointTest, BadInputNamesTheTensorAndWhatToDo) {
  const std::string dir = testing::scratch_dir("errors");
  save_on_2x2(dir);
  Globals g;
  EXPECT_NE(error_of([&] { load({{"missing", torch::zeros({2})}}, dir); })
                .find("has no tensor \"missing\" (it has: w, b, uneven, mask, step)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load({{"w", torch::zeros({6, 8}, torch::kFloat64)}}, dir); })
                .find("tensor \"w\" has global shape [6, 8] but the checkpoint holds [8, 6]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load({{"w", g.w}}, dir + "/nowhere"); }).find("no checkpoint index"),
            std::string::npos);
  fs::remove(dir + "/" + rank_file_name(2));
  EXPECT_NE(error_of([&] { load({{"w", torch::zeros_like(g.w)}}, dir); }).find("cannot open"),
            std::string::npos);

  // Ranks that disagree about what they save all fail, naming the odd rank.
  std::mutex mutex;
  std::vector<std::string> errors(4);
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    at::Tensor t = torch::zeros({world.rank() == 3 ? 5 : 4, 2});
    const std::string e = error_of([&] { save({{"t", t}}, testing::scratch_dir("disagree")); });
    std::lock_guard<std::mutex> lock(mutex);
    errors[static_cast<size_t>(world.rank())] = e;
  });
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("ranks [3] save other tensors than rank 0"), std::string::npos) << e;
  }
}

// Python's safetensors reads every rank file; it reassembles the global
// tensors from the index and writes them whole, which we read back.
TEST(CheckpointTest, PythonSafetensorsOpensTheFiles) {
  const char* python = std::getenv("DTENSOR_PYTHON");
  if (python == nullptr) GTEST_SKIP() << "DTENSOR_PYTHON not set (tools/test.sh sets it)";
  const std::string dir = testing::scratch_dir("python");
  save_on_2x2(dir);
  const std::string script = dir + "/reassemble.py";
  std::ofstream(script) << R"(import json, sys
try:
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file
except ImportError:
    sys.exit(77)
d = sys.argv[1]
index = json.load(open(f"{d}/index.json"))
out = {}
for name, entry in index["tensors"].items():
    full = None
    for c in entry["chunks"]:
        with safe_open(f"{d}/{c['file']}", framework="pt") as f:
            block = f.get_tensor(name)
        if full is None:
            full = torch.empty(entry["shape"], dtype=block.dtype)
        view = full
        for dim, (o, s) in enumerate(zip(c["offsets"], c["sizes"])):
            view = view.narrow(dim, o, s)
        view.copy_(block)
    out[name] = full
save_file(out, f"{d}/whole.safetensors")
)";
  const int status = std::system((std::string(python) + " " + script + " " + dir).c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    GTEST_SKIP() << python << " lacks torch or safetensors (tools/setup.sh installs them)";
  }
  ASSERT_EQ(status, 0);
  SafetensorsFile whole(dir + "/whole.safetensors");
  Globals g;
  EXPECT_TRUE(at::equal(whole.tensor("w"), g.w));
  EXPECT_TRUE(at::equal(whole.tensor("b"), g.b));
  EXPECT_TRUE(at::equal(whole.tensor("uneven"), g.uneven));
  EXPECT_TRUE(at::equal(whole.tensor("mask"), g.mask));
  EXPECT_TRUE(at::equal(whole.tensor("step"), g.step));
}

}  // namespace
}  // namespace dtensor::checkpoint
