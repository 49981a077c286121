// CommDebugMode counts what DTensor programs issue, per rank, per module and
// phase, and dumps it as tables and JSON.
#include "debug/comm_debug_mode.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/fake/fake_world.h"
#include "core/dispatch/sharding_propagator.h"
#include "core/dtensor.h"
#include "testing/dtensor_test.h"
#include "trace/trace_json.h"
#include "debug/tracing_table.h"
#include "tests/debug/mlp_test_util.h"

namespace dtensor::debug {
namespace {

using Counts = std::map<std::string, int64_t>;
using Json = nlohmann::json;
using testing::make_tp_mlp;
using testing::MLPModule;

TEST(CommDebugModeTest, CountsCollectivesOfShardedMatmul) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor x = distribute_tensor(torch::ones({8, 4}), mesh, {Shard(1)});
    DTensor w = distribute_tensor(torch::ones({4, 2}), mesh, {Shard(0)});
    CommDebugMode comm;
    {
      auto guard = comm.enter();
      DTensor y = torch::mm(x, w);  // contraction dim sharded: Partial, no comm
      EXPECT_TRUE(y.placements()[0].is_partial());
      at::Tensor full = y.full_tensor();  // Partial -> Replicate: one all_reduce
      EXPECT_TRUE(torch::equal(full, torch::full({8, 2}, 4.0)));
    }
    EXPECT_EQ(comm.get_comm_counts(), (Counts{{"all_reduce", 1}}));
    EXPECT_EQ(comm.get_total_counts(), 1);
    auto extra = x.full_tensor();  // after the guard: not counted
    EXPECT_EQ(comm.get_total_counts(), 1);
  });
}

TEST(CommDebugModeTest, EnteringAgainResetsCounts) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(torch::ones({4}), mesh, {Shard(0)});
    CommDebugMode comm;
    {
      auto guard = comm.enter();
      x.full_tensor();
      x.full_tensor();
    }
    EXPECT_EQ(comm.get_comm_counts(), (Counts{{"all_gather_into_tensor", 2}}));
    { auto guard = comm.enter(); }
    EXPECT_EQ(comm.get_total_counts(), 0);
  });
}

TEST(CommDebugModeTest, EnterOutsideAWorldSaysHowToStartOne) {
  CommDebugMode comm;
  try {
    auto guard = comm.enter();
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("run_fake_world"), std::string::npos) << e.what();
  }
}

TEST(CommDebugModeTest, EnteringTwiceIsRefused) {
  run_fake_world(1, [](World&) {
    CommDebugMode comm;
    auto guard = comm.enter();
    EXPECT_THROW(auto again = comm.enter(), c10::Error);
  });
}

// PyTorch's test_MLP_module_tracing: colwise net1 + rowwise net2, forward and
// backward; the only collective is net2's output all_reduce.
TEST(CommDebugModeTest, MlpModuleCountsMatchPyTorch) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    MLPModule model = make_tp_mlp(mesh);
    DTensor x = distribute_tensor(torch::rand({8, 10}), mesh, {Replicate()});
    CommDebugMode comm;
    {
      auto guard = comm.enter(*model);
      at::Tensor y = nn::call(model, x);
      y.sum().backward();
    }
    EXPECT_COMM_COUNTS(comm, {{"all_reduce", 1}});
    EXPECT_EQ(comm.get_total_counts(), 1);
    EXPECT_COMM_MODULE_COUNTS(comm, "Global", "forward", {{"all_reduce", 1}});
    EXPECT_COMM_MODULE_COUNTS(comm, "MLPModule", "forward", {{"all_reduce", 1}});
    EXPECT_COMM_MODULE_COUNTS(comm, "MLPModule.net2", "forward", {{"all_reduce", 1}});
    trace::ModuleCounts counts = comm.get_comm_module_counts();
    EXPECT_TRUE(counts["Global"]["backward"].empty());
    EXPECT_EQ(counts.count("MLPModule.net1"), 0u);
    // Global + the four modules PyTorch's module_helper_dict holds.
    EXPECT_EQ(comm.trace().modules.size() + 1, 5u);
    EXPECT_EQ(comm.events().size(), 1u);
    EXPECT_EQ(comm.trace().collectives[0].bytes, 8 * 10 * 4);
  });
}

TEST(CommDebugModeTest, ShardingAndParameterInfo) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    MLPModule model = make_tp_mlp(mesh);
    DTensor x = distribute_tensor(torch::rand({8, 10}), mesh, {Replicate()});
    CommDebugMode comm;
    {
      auto guard = comm.enter(*model);
      nn::call(model, x);
    }
    std::map<std::string, Placements> expected = {{"MLPModule.net1.weight", {Shard(0)}},
                                                  {"MLPModule.net1.bias", {Shard(0)}},
                                                  {"MLPModule.net2.weight", {Shard(1)}},
                                                  {"MLPModule.net2.bias", {Replicate()}}};
    EXPECT_EQ(comm.get_sharding_info(), expected);
    auto params = comm.get_parameter_info();
    EXPECT_EQ(params.size(), 2u) << "modules without parameters are absent, as in PyTorch";
    ASSERT_EQ(params["MLPModule.net1"].size(), 2u);
    EXPECT_TRUE(params["MLPModule.net1"]["weight"].is_same(model->net1->weight));
  });
}

TEST(CommDebugModeTest, RootNameCanBeGiven) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    MLPModule model = make_tp_mlp(mesh);
    DTensor x = distribute_tensor(torch::rand({8, 10}), mesh, {Replicate()});
    CommDebugMode comm;
    {
      auto guard = comm.enter(*model, "TP");
      nn::call(model, x);
    }
    EXPECT_COMM_MODULE_COUNTS(comm, "TP.net2", "forward", {{"all_reduce", 1}});
    EXPECT_EQ(comm.get_sharding_info().count("TP.net1.weight"), 1u);
  });
}

TEST(CommDebugModeTest, OperationRecordsPerModuleAndPhase) {
  run_fake_world(2, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    MLPModule model = make_tp_mlp(mesh);
    DTensor x = distribute_tensor(torch::rand({8, 10}), mesh, {Replicate()});
    CommDebugMode comm;
    {
      auto guard = comm.enter(*model);
      nn::call(model, x).sum().backward();
    }
    trace::CommTrace t = comm.trace();
    auto find = [&](const std::string& module, trace::Phase phase, const std::string& name) -> const trace::OpRecord* {
      for (const trace::OpRecord& op : t.operations) {
        if (op.module == module && op.phase == phase && op.name == name) return &op;
      }
      return nullptr;
    };
    const trace::OpRecord* addmm = find("MLPModule.net1", trace::Phase::kForward, "aten::addmm");
    ASSERT_NE(addmm, nullptr);
    EXPECT_EQ(addmm->rank, world.rank());
    EXPECT_EQ(addmm->input_sharding,
              (std::vector<std::string>{"[S(0)]", "[R]", "[S(1)]"}));  // bias, x, w.t()
    EXPECT_EQ(addmm->input_shapes, (std::vector<std::vector<int64_t>>{{16}, {8, 10}, {10, 16}}));
    EXPECT_EQ(addmm->device_mesh, mesh.to_string());
    EXPECT_NE(find("MLPModule.net1", trace::Phase::kForward, "aten::t"), nullptr);
    EXPECT_NE(find("MLPModule.relu", trace::Phase::kForward, "aten::relu"), nullptr);
    // Backward ops land in the module whose forward created their autograd node.
    bool net1_bw = false, net2_bw = false;
    for (const trace::OpRecord& op : t.operations) {
      net1_bw |= op.module == "MLPModule.net1" && op.phase == trace::Phase::kBackward;
      net2_bw |= op.module == "MLPModule.net2" && op.phase == trace::Phase::kBackward;
    }
    EXPECT_TRUE(net1_bw);
    EXPECT_TRUE(net2_bw);
    // Noise levels: trivial ops (aten::t) only at level 3.
    const std::string l1 = comm_debug_tracing_table(t, 1, false);
    const std::string l3 = comm_debug_tracing_table(t, 3, false);
    EXPECT_NE(l1.find("**aten::addmm"), std::string::npos);
    EXPECT_EQ(l1.find("**aten::t\n"), std::string::npos);
    EXPECT_NE(l3.find("**aten::t\n"), std::string::npos);
    EXPECT_NE(l1.find("*module type: torch::nn::Linear"), std::string::npos);
    EXPECT_NE(l1.find(" *weight: [S(0)]"), std::string::npos);
  });
}

TEST(CommDebugModeTest, MlpTableSnapshot) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    MLPModule model = make_tp_mlp(mesh);
    DTensor x = distribute_tensor(torch::rand({8, 10}), mesh, {Replicate()});
    CommDebugMode comm;
    {
      auto guard = comm.enter(*model);
      nn::call(model, x).sum().backward();
    }
    const std::string expected =
        "Global\n"
        "  FORWARD PASS\n"
        "    *all_reduce: 1 (320 B)\n"
        "    MLPModule\n"
        "      FORWARD PASS\n"
        "        *all_reduce: 1 (320 B)\n"
        "        MLPModule.net1\n"
        "        MLPModule.relu\n"
        "        MLPModule.net2\n"
        "          FORWARD PASS\n"
        "            *all_reduce: 1 (320 B)\n";
    EXPECT_EQ(comm_debug_tracing_table(comm.trace(), 0, false), expected);
    if (world.rank() != 0) return;
    const std::string path = ::testing::TempDir() + "/comm_debug_mode_table.txt";
    comm.log_comm_debug_tracing_table_to_file(path, /*noise_level=*/1);
    std::string logged = trace::read_text_file(path);
    EXPECT_EQ(logged.find('\033'), std::string::npos);
    EXPECT_EQ(logged, comm_debug_tracing_table(comm.trace(), 1, /*color=*/false));
  });
}

TEST(CommDebugModeTest, JsonDumpRoundTripsAgainstSchema) {
  run_fake_world(2, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2}, {"tp"});
    MLPModule model = make_tp_mlp(mesh);
    DTensor x = distribute_tensor(torch::rand({8, 10}), mesh, {Replicate()});
    CommDebugMode comm;
    {
      auto guard = comm.enter(*model);
      nn::call(model, x).sum().backward();
    }
    const std::string path =
        ::testing::TempDir() + "/comm_mode_log_" + std::to_string(world.rank()) + ".json";
    comm.generate_json_dump(path, /*noise_level=*/3);
    const std::string text = trace::read_text_file(path);
    EXPECT_EQ(trace::validate_comm_trace_json(text), std::vector<std::string>{});
    Json root = Json::parse(text);
    EXPECT_EQ(root["rank"], world.rank());
    EXPECT_EQ(root["world_size"], 2);
    EXPECT_EQ(root["mesh"]["dim_names"], Json::parse(R"(["tp"])"));
    ASSERT_EQ(root["events"].size(), 1u);
    EXPECT_EQ(root["events"][0]["mesh_dim"], 0);
    EXPECT_EQ(root["events"][0]["mesh_dim_name"], "tp");
    EXPECT_EQ(root["events"][0]["module"], "MLPModule.net2");
    EXPECT_EQ(root["children"][0]["fqn"], "MLPModule");
    EXPECT_EQ(comm_trace_to_json(trace::comm_trace_from_json(text), 3), text);
  });
}

TEST(CommDebugModeTest, NestedModesBothSeeEvents) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(torch::ones({4}), mesh, {Shard(0)});
    CommDebugMode outer;
    CommDebugMode inner;
    {
      auto outer_guard = outer.enter();
      {
        auto inner_guard = inner.enter();
        x.full_tensor();
      }
      x.full_tensor();
    }
    EXPECT_EQ(outer.get_total_counts(), 2);
    EXPECT_EQ(inner.get_total_counts(), 1);
  });
}

TEST(CommDebugModeTest, MeshDimsOfATwoDimensionalMesh) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    DTensor x = distribute_tensor(torch::ones({4, 4}), mesh, {Replicate(), Shard(0)});
    CommDebugMode comm;
    {
      auto guard = comm.enter();
      // No DTensor op or module teaches the mesh here: the collectives carry it.
      x.redistribute({Replicate(), Replicate()});  // all_gather along tp
      DTensor y = distribute_tensor(torch::ones({4, 4}), mesh, {Shard(0), Replicate()});
      y.redistribute({Replicate(), Replicate()});  // all_gather along dp
      // A sub-mesh's dim 0 is the primary mesh's dim 1, by name.
      DTensor z = distribute_tensor(torch::ones({4}), mesh["tp"], {Shard(0)});
      z.redistribute({Replicate()});
      // A Communicator called directly carries no mesh dim.
      at::Tensor in = torch::ones({2});
      at::Tensor out = torch::empty({4});
      mesh.communicator(0).all_gather_into_tensor(out, in);
    }
    trace::CommTrace t = comm.trace();
    std::vector<std::string> dims;
    for (const trace::CollectiveRecord& r : t.collectives) {
      if (r.kind == "all_gather_into_tensor")
        dims.push_back(r.mesh_dim_name + "=" + std::to_string(r.mesh_dim));
    }
    EXPECT_EQ(dims, (std::vector<std::string>{"tp=1", "dp=0", "tp=1", "=-1"}));
    ASSERT_TRUE(t.mesh.has_value());
    EXPECT_EQ(t.mesh->shape, (std::vector<int64_t>{2, 2}));
  });
}

TEST(CommDebugModeTest, LocalOpsOnlyWhenAsked) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    MLPModule model = make_tp_mlp(mesh);
    DTensor x = distribute_tensor(torch::rand({8, 10}), mesh, {Replicate()});
    auto local_ops = [&](CommDebugModeOptions options) {
      CommDebugMode comm(options);
      {
        auto guard = comm.enter(*model);
        nn::call(model, x);
      }
      int64_t n = 0;
      bool local_addmm_in_net1 = false;
      for (const trace::OpRecord& op : comm.trace().operations) {
        if (op.dtensor) continue;
        ++n;
        local_addmm_in_net1 |= op.name == "aten::addmm" && op.module == "MLPModule.net1";
      }
      EXPECT_EQ(local_addmm_in_net1, options.record_local_ops);
      return n;
    };
    EXPECT_EQ(local_ops(CommDebugModeOptions{}), 0);
    EXPECT_GT(local_ops(CommDebugModeOptions{/*record_local_ops=*/true}), 0);
  });
}

// Note [Shape runs are unobserved] (core/dispatch/sharding_propagator.cc):
// the meta-device shape runs of a cold propagation cache are neither local
// ops nor memory of the program, so a cold and a warm step record the same
// ops and the same peak.
TEST(CommDebugModeTest, ColdAndWarmPropagationCacheRecordTheSameOpsAndPeak) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    MLPModule model = make_tp_mlp(mesh);
    DTensor x = distribute_tensor(torch::rand({8, 10}), mesh, {Replicate()});
    auto step_ops = [&] {
      CommDebugMode comm(CommDebugModeOptions{/*record_local_ops=*/true});
      {
        auto guard = comm.enter(*model);
        nn::call(model, x).sum().backward();
      }
      model->zero_grad(/*set_to_none=*/true);  // the next step starts alike
      std::vector<std::string> ops;
      for (const trace::OpRecord& op : comm.trace().operations)
        ops.push_back(op.name + " " + op.module + " " + trace::phase_name(op.phase));
      const auto memory = comm.trace().memory;  // the fake world counts memory
      EXPECT_EQ(memory.size(), 1u);
      ops.push_back("peak " + std::to_string(memory.empty() ? -1 : memory.begin()->second.peak_bytes));
      return ops;
    };
    clear_propagation_cache();
    const uint64_t misses_before = propagation_cache_stats().misses;
    const std::vector<std::string> cold = step_ops();
    ASSERT_GT(propagation_cache_stats().misses, misses_before);  // the cold step did run shape inference
    const uint64_t misses_after_cold = propagation_cache_stats().misses;
    const std::vector<std::string> warm = step_ops();
    EXPECT_EQ(propagation_cache_stats().misses, misses_after_cold);  // all hits
    ASSERT_FALSE(warm.empty());
    size_t first = 0;  // the first op that differs, for a readable failure
    while (first < cold.size() && first < warm.size() && cold[first] == warm[first]) ++first;
    EXPECT_EQ(cold.size(), warm.size());
    EXPECT_EQ(first, cold.size()) << "op " << first << ": cold '" << (first < cold.size() ? cold[first] : "")
                                  << "', warm '" << (first < warm.size() ? warm[first] : "") << "'";
  });
}

TEST(CommDebugModeTest, ChromeTraceOfOneRank) {
  run_fake_world(2, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(torch::ones({4}), mesh, {Shard(0)});
    CommDebugMode comm;
    {
      auto guard = comm.enter();
      x.full_tensor();
    }
    const std::string path = ::testing::TempDir() + "/comm_chrome_" + std::to_string(world.rank()) + ".json";
    comm.generate_chrome_trace(path);
    Json root = Json::parse(trace::read_text_file(path));
    int slices = 0;
    for (const Json& e : root["traceEvents"]) {
      if (e["ph"] != "X") continue;
      ++slices;
      EXPECT_EQ(e["tid"], world.rank());
      EXPECT_EQ(e["name"], "all_gather_into_tensor");
    }
    EXPECT_EQ(slices, 1);
  });
}

}  // namespace
}  // namespace dtensor::debug
