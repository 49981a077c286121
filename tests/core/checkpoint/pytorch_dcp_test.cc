// dtensor checkpoints and PyTorch's torch.distributed.checkpoint (DCP) with
// its Hugging Face storage, both ways, by running PyTorch ($DTENSOR_PYTHON,
// tests/core/checkpoint/pytorch_dcp.py, Gloo processes): a checkpoint saved
// from a 2x2 mesh (TP-sharded, FSDP + TP _StridedShard, uneven, plain and
// integer tensors), and one of a trained FSDP + TP model, load in PyTorch on
// 3 ranks sharded otherwise and equal the saved values; one PyTorch saved on 4 ranks (HuggingFaceStorageWriter,
// save_distributed) loads here on 2 ranks and on 1; Hugging Face weights
// written by the safetensors library load onto a mesh, each rank reading only
// its bytes. Note [PyTorch DCP's Hugging Face layout] in
// core/checkpoint/checkpoint.h.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/optim/sgd.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/safetensors.h"
#include "core/dtensor.h"
#include "core/fsdp/fully_shard.h"
#include "tests/core/fsdp/linear_stack.h"
#include "testing/run_command.h"
#include "testing/scratch_dir.h"

namespace dtensor {
namespace {

using PythonRun = testing::CommandRun;

// Runs pytorch_dcp.py with `args`; status -1 when no Python is given (the
// tests then skip).
PythonRun run_python(const std::string& args) {
  const char* python = std::getenv("DTENSOR_PYTHON");
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (python == nullptr || srcdir == nullptr || workspace == nullptr) return {};
  const std::string script = std::string(srcdir) + "/" + workspace + "/tests/core/checkpoint/pytorch_dcp.py";
  return testing::run_command(std::string(python) + " " + script + " " + args);
}

#define SKIP_WITHOUT_PYTORCH(run)                                                       \
  if ((run).status == -1) GTEST_SKIP() << "DTENSOR_PYTHON not set (tools/test.sh sets it)"; \
  if ((run).status == 77) GTEST_SKIP() << "no torch or safetensors: " << (run).output

TEST(PyTorchDcpTest, PyTorchLoadsOurCheckpointOntoThreeRanks) {
  const std::string dir = testing::scratch_dir("ours") + "/ckpt";
  const std::string expected = testing::scratch_dir("expected") + "/full.safetensors";
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(11);
  const std::vector<std::pair<std::string, at::Tensor>> full = {
      {"tp.weight", at::randn({8, 6}, gen, at::kDouble)},
      {"tp.bias", at::randn({6}, gen, at::kDouble)},
      {"fsdp_tp.weight", at::randn({8, 4}, gen, at::kDouble)},
      {"uneven", at::randn({5, 3}, gen, at::kFloat)},
      {"plain.steps", at::arange(7, at::kLong)},
  };
  checkpoint::write_safetensors(expected, full);
  run_fake_world(4, [&](World&) {
    const DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    const std::vector<Placements> placements = {
        {Shard(0), Shard(1)}, {Replicate(), Shard(0)}, {StridedShard(0, 2), Shard(0)}, {Shard(0), Replicate()}};
    checkpoint::StateDict state;
    for (size_t i = 0; i < placements.size(); ++i) {
      state.emplace_back(full[i].first, distribute_tensor(full[i].second, mesh, placements[i]));
    }
    state.emplace_back(full[4]);  // a plain tensor
    checkpoint::save(state, dir);
  });
  const PythonRun run = run_python("load " + dir + " " + expected + " 3");
  SKIP_WITHOUT_PYTORCH(run);
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("DCP_LOAD_OK 5 tensors on 3 ranks"), std::string::npos) << run.output;
}

// An FSDP + TP model (a Linear stack, column-/row-wise on tp, fully_shard on
// dp of a 2x2 mesh; column-wise weights are (_StridedShard(0, 2), Shard(0)))
// after an SGD step: PyTorch loads its checkpoint on 3 ranks.
TEST(PyTorchDcpTest, PyTorchLoadsAnFsdpOverTpModelsCheckpoint) {
  const std::string dir = testing::scratch_dir("fsdp_tp") + "/ckpt";
  const std::string expected = testing::scratch_dir("expected_fsdp_tp") + "/full.safetensors";
  run_fake_world(4, [&](World& w) {
    const DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    testing::LinearStack model = testing::make_linear_stack({6, 10, 6, 4}, 17);
    testing::parallelize_linear_stack(model, mesh["tp"]);
    for (auto& layer : model->layers) fully_shard(*layer, mesh["dp"]);
    fully_shard(*model, mesh["dp"]);
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
    const at::Tensor x = testing::make_batch(8, 6, 3);
    nn::call(model, x.chunk(2, 0)[mesh.get_local_rank("dp")]).pow(2).mean().backward();
    opt.step();
    checkpoint::save(*model, dir);
    std::vector<std::pair<std::string, at::Tensor>> full;
    for (const auto& item : model->named_parameters()) full.emplace_back(item.key(), DTensor(item.value()).full_tensor());
    if (w.rank() == 0) checkpoint::write_safetensors(expected, full);
  });
  const PythonRun run = run_python("load " + dir + " " + expected + " 3");
  SKIP_WITHOUT_PYTORCH(run);
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("DCP_LOAD_OK 6 tensors on 3 ranks"), std::string::npos) << run.output;
}

TEST(PyTorchDcpTest, OurLoadReadsPyTorchsCheckpointOnTwoRanksAndOne) {
  const std::string dir = testing::scratch_dir("pytorch") + "/ckpt";
  const std::string expected = testing::scratch_dir("expected") + "/full.safetensors";
  const PythonRun run = run_python("save " + dir + " " + expected);
  SKIP_WITHOUT_PYTORCH(run);
  ASSERT_EQ(run.status, 0) << run.output;
  const checkpoint::SafetensorsFile want(expected);
  ASSERT_EQ(want.entries().size(), 4u);
  // One rank: plain tensors.
  checkpoint::StateDict plain;
  for (const auto& [name, entry] : want.entries()) plain.emplace_back(name, at::zeros(entry.shape, at::TensorOptions().dtype(entry.dtype)));
  checkpoint::load(plain, dir);
  for (const auto& [name, tensor] : plain) EXPECT_TRUE(at::equal(tensor, want.tensor(name))) << name;
  // Two ranks, sharded on dim 0 (the uneven 5 rows too).
  run_fake_world(2, [&](World&) {
    const DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {2});
    checkpoint::StateDict state;
    for (const auto& [name, entry] : want.entries()) {
      state.emplace_back(name, distribute_tensor(at::zeros(entry.shape, at::TensorOptions().dtype(entry.dtype)), mesh,
                                                 {Shard(0)}));
    }
    checkpoint::load(state, dir);
    for (const auto& [name, tensor] : state) {
      EXPECT_TRUE(at::equal(DTensor(tensor).full_tensor(), want.tensor(name))) << name;
    }
  });
}

// Published weights (two Hugging Face files written by the safetensors
// library, float32, "model." names) onto a 2-rank mesh of float64 DTensors
// through a name mapping: the values equal the file's, and each rank reads
// only its own shards' bytes (replicated tensors whole).
TEST(PyTorchDcpTest, HuggingFaceWeightsLoadOntoAMeshReadingOnlyEachRanksBytes) {
  const std::string dir = testing::scratch_dir("hf") + "/model";
  const PythonRun run = run_python("hf " + dir);
  SKIP_WITHOUT_PYTORCH(run);
  ASSERT_EQ(run.status, 0) << run.output;
  const checkpoint::SafetensorsFile first(dir + "/model-00001-of-00002.safetensors");
  const checkpoint::SafetensorsFile second(dir + "/model-00002-of-00002.safetensors");
  const std::vector<std::pair<std::string, Placements>> layout = {
      {"embed.weight", {Shard(0)}}, {"proj.weight", {Shard(1)}}, {"proj.bias", {Replicate()}}};
  run_fake_world(2, [&](World&) {
    const DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {2});
    checkpoint::StateDict state;
    int64_t expected_bytes = 0;
    for (const auto& [name, placements] : layout) {
      const auto& entries = (name == "embed.weight" ? first : second).entries();
      const auto& shape = entries.at("model." + name).shape;
      DTensor t = distribute_tensor(at::zeros(shape, at::kDouble), mesh, placements);
      expected_bytes += t.local_tensor().numel() * 4;  // float32 in the file
      state.emplace_back(name, t);
    }
    checkpoint::LoadOptions options;
    options.checkpoint_name = [](const std::string& name) { return "model." + name; };
    const checkpoint::LoadStats stats = checkpoint::load(state, dir, options);
    EXPECT_EQ(stats.bytes_read, expected_bytes);
    EXPECT_EQ(stats.files_opened, 2);
    for (const auto& [name, tensor] : state) {
      const at::Tensor want = (name == "embed.weight" ? first : second).tensor("model." + name).to(at::kDouble);
      EXPECT_TRUE(at::equal(DTensor(tensor).full_tensor(), want)) << name;
    }
    // A name the mapping sends nowhere is named both ways.
    options.checkpoint_name = [](const std::string& name) { return "transformer." + name; };
    EXPECT_THROW(
        {
          try {
            checkpoint::load(state, dir, options);
          } catch (const c10::Error& e) {
            EXPECT_NE(std::string(e.what()).find("no tensor \"transformer.embed.weight\" (the checkpoint name "
                                                 "of \"embed.weight\")"),
                      std::string::npos)
                << e.what();
            throw;
          }
        },
        c10::Error);
  });
}

}  // namespace
}  // namespace dtensor
