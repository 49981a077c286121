// CommDebugMode on a world that counts memory (See Note [Memory location]):
// each rank's peak during the session and the module and phase it was
// reached in, merged over the fake world, and the optional "memory" key of
// the comm-trace JSON (written, validated, read back).
#include <gtest/gtest.h>

#include <ATen/Functions.h>

#include "backends/fake/fake_world.h"
#include "core/device_mesh.h"
#include "core/dtensor.h"
#include "debug/comm_debug_mode.h"
#include "debug/fake_world_trace.h"
#include "trace/trace_json.h"
#include "tests/debug/mlp_test_util.h"

namespace dtensor::debug {
namespace {

TEST(MemoryTraceTest, PeakAndLocationPerRankInTraceAndJson) {
  FakeWorldTrace world_trace;
  run_fake_world(2, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    testing::MLPModule model = testing::make_tp_mlp(mesh, /*hidden=*/64);
    const at::Tensor x = distribute_tensor(at::rand({32, 10}), mesh, {Replicate()});
    CommDebugMode comm(&world_trace);
    {
      auto guard = comm.enter(*model);
      at::Tensor y = nn::call(model, x);
      DTensor(y).full_tensor().sum().backward();
    }
    const trace::CommTrace t = comm.trace();
    ASSERT_EQ(t.memory.count(world.rank()), 1u);
    const trace::RankMemoryRecord& m = t.memory.at(world.rank());
    EXPECT_GT(m.peak_bytes, 0);
    EXPECT_GE(m.peak_bytes, m.current_bytes);
    // The peak is reached inside the model, in forward or backward.
    EXPECT_TRUE(m.peak_location.rfind("MLPModule", 0) == 0) << m.peak_location;
    EXPECT_TRUE(m.peak_location.find(" forward") != std::string::npos ||
                m.peak_location.find(" backward") != std::string::npos)
        << m.peak_location;
  });
  const trace::CommTrace merged = world_trace.trace();
  ASSERT_EQ(merged.memory.size(), 2u);
  const std::string json = comm_trace_to_json(merged);
  EXPECT_TRUE(trace::validate_comm_trace_json(json).empty());
  const trace::CommTrace back = trace::comm_trace_from_json(json);
  ASSERT_EQ(back.memory.size(), 2u);
  EXPECT_EQ(back.memory.at(1).peak_bytes, merged.memory.at(1).peak_bytes);
  EXPECT_EQ(back.memory.at(1).peak_location, merged.memory.at(1).peak_location);
  EXPECT_FALSE(trace::validate_comm_trace_json(R"({"memory": {"0": {"peak_bytes": -1}}})").empty());
}

}  // namespace
}  // namespace dtensor::debug
