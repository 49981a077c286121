// The FSDP programs of programs.json on the fake world against PyTorch's
// fully_shard on Gloo processes (pytorch-<version>.json, written by
// pytorch_fsdp_runner.py): the collectives of every forward and backward of
// every step, in all and per module fully_shard was applied to (CommDebugMode,
// cumulative over children), equal PyTorch's, and the parameters after the
// steps equal one device's (float64, 1e-10).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/fsdp/fully_shard.h"
#include "debug/comm_debug_mode.h"
#include "testing/collective_counter.h"
#include "examples/models/transformer.h"
#include "examples/models/transformer_training.h"
#include "tests/core/fsdp/linear_stack.h"
#include "tests/diff/data_files.h"

namespace dtensor {
namespace {

using nlohmann::json;
using testing::Counts;

json read_json(const std::string& name) { return diff::read_json_file("tests/diff/fsdp/" + name); }

// One forward + backward: counts by key, "forward" and "backward" for the
// totals, "<path> <phase>" per fully_shard module ("layer0 backward"; the
// root's path is empty). Empty counts are left out.
using MicroStep = std::map<std::string, Counts>;
// [step][micro step], as the runner writes.
using Record = std::vector<std::vector<MicroStep>>;

Record parse_record(const json& steps) {
  Record record;
  for (const json& step : steps) {
    record.emplace_back();
    for (const json& micro : step.at("micro_steps")) {
      MicroStep counts;
      for (const char* phase : {"forward", "backward"}) {
        if (!micro.at(phase).empty()) counts[phase] = micro.at(phase).get<Counts>();
      }
      for (const auto& [path, phases] : micro.at("modules").items()) {
        for (const auto& [phase, kinds] : phases.items()) {
          if (!kinds.empty()) counts[path + " " + phase] = kinds.get<Counts>();
        }
      }
      record.back().push_back(counts);
    }
  }
  return record;
}

// A program's model (one of each per rank and for the one-device
// reference) and its loss on some rows of a step's batch, through nn::call.
struct ProgramModel {
  std::shared_ptr<torch::nn::Module> root;
  std::string root_name;                                  // as traces name it
  std::vector<std::shared_ptr<torch::nn::Module>> layers;  // fully_shard'ed before the root
  std::function<void(const DeviceMesh& tp_mesh)> tensor_parallel;  // programs with "tp"
  std::function<at::Tensor(int64_t step, int64_t ranks, int64_t rank)> loss;  // rows `rank` of `ranks`
};

ProgramModel make_model(const json& program) {
  const int64_t batch = program.value("batch", 12);
  ProgramModel m;
  if (program.value("model", std::string("linear_stack")) == "transformer") {
    const examples::ModelArgs args = examples::ModelArgs()
                                         .n_layers(program.at("n_layers"))
                                         .dim(program.at("dim"))
                                         .n_heads(program.at("n_heads"))
                                         .vocab_size(program.at("vocab_size"))
                                         .max_seq_len(program.at("seq_len"))
                                         .dropout_p(0.0)
                                         .checkpoint_every(program.value("ac", std::string("none")) == "full" ? 1 : 0)
                                         .checkpoint_ops(program.value("ac", std::string("none")) == "op")
                                         .seed(3);
    examples::Transformer model(args);
    model->to(at::kDouble);
    for (const auto& block : *model->layers) m.layers.push_back(block);
    m.root = model.ptr();
    m.root_name = "Transformer";
    const bool sequence_parallel = program.value("sp", true);
    m.tensor_parallel = [model, sequence_parallel](const DeviceMesh& tp_mesh) mutable {
      examples::parallelize_transformer(*model, tp_mesh, sequence_parallel);
    };
    examples::TrainingConfig config;
    config.model = args;
    config.batch = batch;
    config.seq_len = program.at("seq_len");
    m.loss = [model, config](int64_t step, int64_t ranks, int64_t rank) mutable {
      config.data_seed = 100 + static_cast<uint64_t>(step);
      auto [tokens, targets] = examples::training_batch(config);
      return examples::transformer_loss(nn::call(model, tokens.chunk(ranks, 0)[rank]),
                                        targets.chunk(ranks, 0)[rank]);
    };
  } else {
    const auto widths = program.at("widths").get<std::vector<int64_t>>();
    testing::LinearStack model = testing::make_linear_stack(widths, 3);
    for (auto& layer : model->layers) m.layers.push_back(layer.ptr());
    m.root = model.ptr();
    m.root_name = "LinearStack";
    m.tensor_parallel = [model](const DeviceMesh& tp_mesh) mutable { testing::parallelize_linear_stack(model, tp_mesh); };
    m.loss = [model, widths, batch](int64_t step, int64_t ranks, int64_t rank) mutable {
      const at::Tensor x = testing::make_batch(batch, widths.front(), 100 + static_cast<uint64_t>(step));
      return nn::call(model, x.chunk(ranks, 0)[rank]).pow(2).mean();
    };
  }
  return m;
}

// Runs `program` with fully_shard on the fake world and on one device;
// returns rank 0's record and checks the values.
Record run_program(const json& program) {
  const int64_t world = program.at("world");
  const int steps = program.value("steps", 2);
  const int micro_steps = program.value("micro_steps", 1);
  FullyShardOptions options;
  if (program.contains("reshard_after_forward")) {
    const json& reshard = program.at("reshard_after_forward");
    if (reshard.is_boolean()) {
      options.reshard_after_forward = reshard.get<bool>();
    } else {
      options.reshard_after_forward_to = reshard.get<int64_t>();  // PyTorch's int
    }
  }
  Record record;
  run_fake_world(world, [&](World& w) {
    const auto shape = program.value("mesh", std::vector<int64_t>{world});
    const bool tp = program.value("tp", false);
    auto mesh = tp                  ? DeviceMesh::init(c10::kCPU, shape, {"dp", "tp"})
                : shape.size() == 2 ? DeviceMesh::init(c10::kCPU, shape, {"replicate", "shard"})
                                    : DeviceMesh::init(c10::kCPU, shape, {"dp"});
    ProgramModel model = make_model(program);
    ProgramModel reference = make_model(program);
    // The batch is split over the data-parallel ranks: all of them, or dp's.
    int64_t data_ranks = world;
    int64_t data_rank = w.rank();
    if (tp) {
      model.tensor_parallel(mesh["tp"]);
      mesh = mesh["dp"];
      data_ranks = mesh.size();
      data_rank = mesh.get_local_rank(0);
    }
    std::vector<FSDPModule> layers;
    for (const auto& layer : model.layers) layers.push_back(fully_shard(*layer, mesh, options));
    FSDPModule root = fully_shard(*model.root, mesh, options);
    const int64_t n = static_cast<int64_t>(layers.size());
    for (int64_t i = 0; i < n; ++i) {
      if (const int64_t f = program.value("forward_prefetch", 0); f > 0) {
        layers[i].set_modules_to_forward_prefetch(
            {layers.begin() + std::min(n, i + 1), layers.begin() + std::min(n, i + 1 + f)});
      }
      if (const int64_t b = program.value("backward_prefetch", 0); b > 0) {
        std::vector<FSDPModule> previous(layers.begin() + std::max<int64_t>(0, i - b), layers.begin() + i);
        std::reverse(previous.begin(), previous.end());
        layers[i].set_modules_to_backward_prefetch(previous);
      }
    }
    // Paths of the fully_shard modules: "" for the root, then each layer's.
    std::map<std::string, std::string> managed = {{model.root_name, ""}};
    for (const auto& item : model.root->named_modules(model.root_name)) {
      for (const auto& layer : model.layers) {
        if (item.value() == layer) managed[item.key()] = item.key().substr(model.root_name.size() + 1);
      }
    }
    torch::optim::SGD opt(model.root->parameters(), torch::optim::SGDOptions(0.1));
    torch::optim::SGD ref_opt(reference.root->parameters(), torch::optim::SGDOptions(0.1));
    testing::CollectiveCounter counter(w);
    Record mine;
    for (int step = 0; step < steps; ++step) {
      mine.emplace_back();
      for (int m = 0; m < micro_steps; ++m) {
        if (micro_steps > 1) root.set_requires_gradient_sync(m == micro_steps - 1);
        const int64_t data = step * 10 + m;
        counter.clear();
        debug::CommDebugMode comm;
        MicroStep counts;
        {
          auto guard = comm.enter(*model.root, model.root_name);
          at::Tensor loss = model.loss(data, data_ranks, data_rank);
          counts["forward"] = counter.take();
          loss.backward();
          counts["backward"] = counter.take();
        }
        for (const auto& [module, phases] : comm.get_comm_module_counts()) {
          const auto path = managed.find(module);
          if (path == managed.end()) continue;  // Global, and modules that are not fully_shard'ed
          for (const auto& [phase, kinds] : phases) {
            if (!kinds.empty()) counts[path->second + " " + phase] = kinds;
          }
        }
        for (auto it = counts.begin(); it != counts.end();) it = it->second.empty() ? counts.erase(it) : std::next(it);
        mine.back().push_back(counts);
        reference.loss(data, 1, 0).backward();
      }
      opt.step();
      opt.zero_grad();
      ref_opt.step();
      ref_opt.zero_grad();
    }
    auto ref = reference.root->named_parameters();
    for (const auto& item : model.root->named_parameters()) {
      const at::Tensor full = DTensor(item.value()).full_tensor();
      EXPECT_TRUE(torch::allclose(full, ref[item.key()], 1e-10, 1e-10))
          << program.at("name") << ": " << item.key() << " differs from one device's by "
          << (full - ref[item.key()]).abs().max().item<double>();
    }
    if (w.rank() == 0) record = mine;
  });
  return record;
}

std::string describe(const Counts& counts) { return testing::to_string(counts); }

TEST(FsdpGoldenTest, CollectivesEqualPyTorchsAndValuesEqualOneDevice) {
  const json programs = read_json("programs.json").at("programs");
  const std::vector<std::string> versions = {"2.15", "2.11"};
  std::map<std::string, json> recorded;
  for (const std::string& v : versions) recorded[v] = read_json("pytorch-" + v + ".json");
  for (const json& program : programs) {
    const std::string name = program.at("name");
    SCOPED_TRACE(name);
    const Record ours = run_program(program);
    for (const std::string& v : versions) {
      const std::vector<std::string> runs_on = program.value("pytorch", versions);
      if (std::find(runs_on.begin(), runs_on.end(), v) == runs_on.end()) continue;  // that version cannot run it
      Record theirs = parse_record(recorded[v].at("programs").at(name));
      // Known divergences: what we issue beyond PyTorch (programs.json's "about").
      const json extra = program.value("ours_extra", json::object());
      for (const auto& [key, kinds] : extra.items()) {
        for (auto& step : theirs) {
          for (auto& micro : step) {
            for (const auto& [kind, n] : kinds.items()) micro[key][kind] += n.get<int64_t>();
          }
        }
      }
      ASSERT_EQ(ours.size(), theirs.size()) << "PyTorch " << v;
      for (size_t s = 0; s < ours.size(); ++s) {
        ASSERT_EQ(ours[s].size(), theirs[s].size());
        for (size_t m = 0; m < ours[s].size(); ++m) {
          std::set<std::string> keys;
          for (const auto& [key, counts] : ours[s][m]) keys.insert(key);
          for (const auto& [key, counts] : theirs[s][m]) keys.insert(key);
          for (const std::string& key : keys) {
            const Counts none;
            const auto mine = ours[s][m].find(key);
            const auto pytorch = theirs[s][m].find(key);
            const Counts& a = mine == ours[s][m].end() ? none : mine->second;
            const Counts& b = pytorch == theirs[s][m].end() ? none : pytorch->second;
            EXPECT_EQ(a, b) << "PyTorch " << v << ", step " << s << ", micro step " << m << ", " << key
                            << ": ours " << describe(a) << ", PyTorch's " << describe(b);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace dtensor
