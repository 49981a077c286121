// The FSDP programs of programs.json on the fake world against PyTorch's
// fully_shard on Gloo processes (pytorch-<version>.json, written by
// pytorch_fsdp_runner.py): the collectives of every forward and backward of
// every step, in all and per module fully_shard was applied to (CommDebugMode,
// cumulative over children), equal PyTorch's, and the parameters after the
// steps equal one device's (float64, 1e-10).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/optim/sgd.h>

#include <cstdlib>
#include <fstream>
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
#include "tests/core/fsdp/linear_stack.h"

namespace dtensor {
namespace {

using nlohmann::json;
using testing::Counts;

std::string data_path(const std::string& name) {
  const std::string rel = "tests/diff/fsdp/" + name;
  if (const char* srcdir = std::getenv("TEST_SRCDIR")) {
    const std::string full = std::string(srcdir) + "/dtensor/" + rel;
    if (std::ifstream(full).good()) return full;
  }
  return rel;
}

json read_json(const std::string& name) {
  std::ifstream in(data_path(name));
  if (!in) throw std::runtime_error("cannot read " + data_path(name));
  return json::parse(in);
}

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

// Runs `program` with fully_shard on the fake world and on one device;
// returns rank 0's record and checks the values.
Record run_program(const json& program) {
  const int64_t world = program.at("world");
  const auto widths = program.at("widths").get<std::vector<int64_t>>();
  const int steps = program.value("steps", 2);
  const int micro_steps = program.value("micro_steps", 1);
  const int64_t batch = program.value("batch", 12);
  FullyShardOptions options;
  options.reshard_after_forward = program.value("reshard_after_forward", true);
  Record record;
  run_fake_world(world, [&](World& w) {
    const auto shape = program.value("mesh", std::vector<int64_t>{world});
    auto mesh = shape.size() == 2 ? DeviceMesh::init(c10::kCPU, shape, {"replicate", "shard"})
                                  : DeviceMesh::init(c10::kCPU, shape, {"dp"});
    testing::LinearStack model = testing::make_linear_stack(widths, 3);
    testing::LinearStack reference = testing::make_linear_stack(widths, 3);
    for (auto& layer : model->layers) fully_shard(*layer, mesh, options);
    FSDPModule root = fully_shard(*model, mesh, options);
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
    torch::optim::SGD ref_opt(reference->parameters(), torch::optim::SGDOptions(0.1));
    testing::CollectiveCounter counter(w);
    const int64_t rank = w.rank();  // the batch is split over every rank (HSDP too)
    Record mine;
    for (int step = 0; step < steps; ++step) {
      mine.emplace_back();
      for (int m = 0; m < micro_steps; ++m) {
        if (micro_steps > 1) root.set_requires_gradient_sync(m == micro_steps - 1);
        const at::Tensor x = testing::make_batch(batch, widths.front(), 100 + step * 10 + m);
        counter.clear();
        debug::CommDebugMode comm;
        MicroStep counts;
        {
          auto guard = comm.enter(*model, "LinearStack");
          at::Tensor loss = nn::call(model, x.chunk(world, 0)[rank]).pow(2).mean();
          counts["forward"] = counter.take();
          loss.backward();
          counts["backward"] = counter.take();
        }
        for (const auto& [module, phases] : comm.get_comm_module_counts()) {
          const std::string prefix = "LinearStack.layer";
          const bool managed = module == "LinearStack" || module.rfind(prefix, 0) == 0;
          if (!managed) continue;  // Global, and nothing else is fully_shard'ed here
          const std::string path = module == "LinearStack" ? "" : module.substr(prefix.size() - 5);
          for (const auto& [phase, kinds] : phases) {
            if (!kinds.empty()) counts[path + " " + phase] = kinds;
          }
        }
        for (auto it = counts.begin(); it != counts.end();) it = it->second.empty() ? counts.erase(it) : std::next(it);
        mine.back().push_back(counts);
        reference->forward(x).pow(2).mean().backward();
      }
      opt.step();
      opt.zero_grad();
      ref_opt.step();
      ref_opt.zero_grad();
    }
    auto ref = reference->named_parameters();
    for (const auto& item : model->named_parameters()) {
      const at::Tensor full = DTensor(item.value()).full_tensor();
      EXPECT_TRUE(torch::allclose(full, ref[item.key()], 1e-10, 1e-10))
          << program.at("name") << ": " << item.key() << " differs from one device's by "
          << (full - ref[item.key()]).abs().max().item<double>();
    }
    if (rank == 0) record = mine;
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
      const Record theirs = parse_record(recorded[v].at("programs").at(name));
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
