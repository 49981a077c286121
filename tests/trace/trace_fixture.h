// A hand-built comm trace shaped like the tensor-parallel MLP's, for the
// tests of the LibTorch-free parts (JSON, tables, Chrome trace, counts).
//   CommTrace t = mlp_like_trace(/*rank=*/0);
#pragma once

#include <cstdint>

#include "trace/trace_model.h"

namespace dtensor::trace::testing {

/// Modules MLPModule{net1, relu, net2}; collectives: net2 forward all_reduce
/// (320 B), MLPModule backward all_gather_into_tensor (64 B sent, 256 B
/// received) on mesh dim 0 of a 4-rank mesh "tp"; ops: aten::addmm and
/// aten::t (trivial) in net1 forward, aten::relu in relu, a local aten::mm in
/// net2, aten::mm in net1 backward. Origins: the all_reduce is explicit
/// (RowwiseParallel's output, P(sum) -> R), the all_gather implicit (aten::mm
/// input 1, S(0) -> R, strategy and rejected alternative with costs).
inline CommTrace mlp_like_trace(int64_t rank = 0) {
  CommTrace t;
  t.rank = rank;
  t.world_size = 4;
  t.mesh = MeshRecord{{4}, {"tp"}, "cpu"};
  t.modules = {
      {"MLPModule", "dtensor::debug::MLPModule", kGlobalFqn, {}},
      {"MLPModule.net1", "torch::nn::Linear", "MLPModule", {{"weight", "[S(0)]"}, {"bias", "[S(0)]"}}},
      {"MLPModule.relu", "torch::nn::ReLU", "MLPModule", {}},
      {"MLPModule.net2", "torch::nn::Linear", "MLPModule", {{"weight", "[S(1)]"}, {"bias", "[R]"}}},
  };
  CollectiveRecord ar;
  ar.rank = rank;
  ar.seq = 0;
  ar.kind = "all_reduce";
  ar.module = "MLPModule.net2";
  ar.phase = Phase::kForward;
  ar.bytes = 320;
  ar.output_bytes = 320;
  ar.group = {0, 1, 2, 3};
  ar.mesh_dim = 0;
  ar.mesh_dim_name = "tp";
  ar.input_shapes = {{8, 10}};
  ar.output_shapes = {{8, 10}};
  ar.dtype = "Float";
  ar.reduce_op = "sum";
  ar.ts_us = 10.5;
  CollectiveOriginRecord explicit_origin;
  explicit_origin.is_explicit = true;
  explicit_origin.cause = "parallel_style";
  explicit_origin.op = "RowwiseParallel output";
  explicit_origin.from_placements = {Partial()};
  explicit_origin.to_placements = {Replicate()};
  explicit_origin.mesh_dim = 0;
  explicit_origin.step = OriginStep{Partial(), Replicate()};
  ar.origin = explicit_origin;
  CollectiveRecord ag = ar;
  CollectiveOriginRecord implicit_origin;
  implicit_origin.cause = "implicit";
  implicit_origin.op = "aten::mm";
  implicit_origin.input_index = 1;
  implicit_origin.from_placements = {Shard(0)};
  implicit_origin.to_placements = {Replicate()};
  implicit_origin.mesh_dim = 0;
  implicit_origin.step = OriginStep{Shard(0), Replicate()};
  implicit_origin.strategy = "S(0), R -> S(0)";
  implicit_origin.strategy_cost = 250048;
  implicit_origin.rejected_strategy = "R, S(1) -> S(1)";
  implicit_origin.rejected_cost = 250320;
  ag.origin = implicit_origin;
  ag.seq = 1;
  ag.kind = "all_gather_into_tensor";
  ag.module = "MLPModule";
  ag.phase = Phase::kBackward;
  ag.bytes = 64;
  ag.output_bytes = 256;
  ag.input_shapes = {{2, 8}};
  ag.output_shapes = {{8, 8}};
  ag.reduce_op = "";
  ag.ts_us = 30.0;
  t.collectives = {ar, ag};
  auto op = [&](const char* name, const char* module, Phase phase, bool dtensor) {
    OpRecord o;
    o.rank = rank;
    o.name = name;
    o.module = module;
    o.phase = phase;
    o.dtensor = dtensor;
    o.input_shapes = {{8, 10}, {16, 10}};
    if (dtensor) {
      o.input_sharding = {"[R]", "[S(0)]"};
      o.device_mesh = "DeviceMesh(cpu, (tp=4))";
    }
    return o;
  };
  t.operations = {op("aten::t", "MLPModule.net1", Phase::kForward, true),
                  op("aten::addmm", "MLPModule.net1", Phase::kForward, true),
                  op("aten::relu", "MLPModule.relu", Phase::kForward, true),
                  op("aten::mm", "MLPModule.net2", Phase::kForward, false),
                  op("aten::mm", "MLPModule.net1", Phase::kBackward, true)};
  return t;
}

}  // namespace dtensor::trace::testing
