// Executes one program on every rank of a fake world; rank 0 writes the record.
#include "tests/diff/runner.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/generated/variable_factories.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "debug/comm_debug_mode.h"
#include "tests/diff/aten_call.h"

namespace dtensor::diff {
namespace {

using nlohmann::json;

Placements parse(const std::vector<std::string>& texts) {
  Placements out;
  for (const std::string& t : texts) {
    out.push_back(t == "P" ? Partial() : parse_placements(t).at(0));
  }
  return out;
}

// Row-major index of this rank among the Partial mesh dims (0 when none).
int64_t partial_index(const DeviceMesh& mesh, const Placements& placements) {
  int64_t k = 0;
  for (size_t d = 0; d < placements.size(); ++d) {
    if (placements[d].is_partial()) k = k * mesh.size(static_cast<int>(d)) + mesh.get_coordinate()[d];
  }
  return k;
}

// See Note [Input values] in program.cc.
at::Tensor make_input(const InputSpec& spec, const DeviceMesh& mesh) {
  Placements placements = parse(spec.placements);
  Placements plain = placements;
  for (auto& p : plain) {
    if (p.is_partial()) p = Replicate();
  }
  at::Tensor global = global_values(spec, partial_index(mesh, placements));
  DistributeOptions local_slice;
  local_slice.src_data_rank = std::nullopt;
  at::Tensor local = distribute_tensor(global, mesh, plain, local_slice).local_tensor().clone();
  FromLocalOptions options;
  options.shape = spec.shape;
  options.stride = global.strides().vec();
  DTensor x = DTensor::from_local(local, mesh, placements, options);
  if (spec.requires_grad) x.set_requires_grad(true);
  return x;
}

json encode_values(const at::Tensor& t) {
  at::Tensor flat = t.detach().to(at::kDouble).contiguous().reshape({-1});
  json out = json::array();
  const double* data = flat.data_ptr<double>();
  for (int64_t i = 0; i < flat.numel(); ++i) {
    const double v = data[i];
    if (std::isnan(v)) {
      out.push_back("nan");
    } else if (std::isinf(v)) {
      out.push_back(v > 0 ? "inf" : "-inf");
    } else {
      out.push_back(v);
    }
  }
  return out;
}

// Placements, shape and global values of one step output (collective: every
// rank calls it for every output).
json describe(const at::Tensor& t) {
  if (!t.defined()) return nullptr;
  json out;
  out["shape"] = t.sizes().vec();
  if (is_dtensor(t)) {
    DTensor d(t);
    json placements = json::array();
    for (const Placement& p : d.placements()) placements.push_back(p.to_string());
    out["placements"] = placements;
    at::NoGradGuard no_grad;
    out["values"] = encode_values(d.full_tensor());
  } else {
    out["placements"] = nullptr;
    out["values"] = encode_values(t);
  }
  return out;
}

std::string first_line(const std::string& text) {
  const size_t start = text.find_first_not_of(" \n");
  if (start == std::string::npos) return "";
  return text.substr(start, text.find('\n', start) - start).substr(0, 300);
}

const at::Tensor& env_at(const std::vector<at::Tensor>& env, const json& step) {
  const int64_t i = step.at("t").get<int64_t>();
  TORCH_CHECK(i >= 0 && i < static_cast<int64_t>(env.size()), "diff program: tensor ", i, " does not exist");
  return env[static_cast<size_t>(i)];
}

struct StepResult {
  std::vector<at::Tensor> outputs;
  bool keep = true;  // outputs join the environment
};

StepResult run_step(const Step& step, std::vector<at::Tensor>& env, const std::vector<at::Tensor>& inputs) {
  const json& j = step.json;
  if (step.kind == "op") {
    return {call_aten(j.at("op").get<std::string>(), j.value("args", json::array()),
                      j.value("kwargs", json::object()), env),
            true};
  }
  DTensor x(env_at(env, j));
  if (step.kind == "redistribute") {
    return {{x.redistribute(parse(j.at("placements").get<std::vector<std::string>>()))}, true};
  }
  if (step.kind == "full_tensor") return {{x.full_tensor()}, false};
  if (step.kind == "backward") {
    x.sum().backward();
    StepResult r{{}, false};
    for (const json& i : j.value("grads", json::array())) {
      r.outputs.push_back(inputs.at(i.get<size_t>()).grad());
    }
    return r;
  }
  TORCH_CHECK(false, "diff program: unknown step kind ", step.kind);
  return {};
}

// The global value of a (possibly Partial) input; false when mixed.
bool reference_input(const InputSpec& spec, const std::vector<int64_t>& mesh_shape, at::Tensor* out) {
  Placements placements = parse(spec.placements);
  std::optional<ReduceOp> op;
  int64_t variants = 1;
  for (size_t d = 0; d < placements.size(); ++d) {
    if (!placements[d].is_partial()) continue;
    if (op && *op != placements[d].reduce_op()) return false;
    op = placements[d].reduce_op();
    variants *= mesh_shape[d];
  }
  std::vector<at::Tensor> vs;
  for (int64_t k = 0; k < variants; ++k) vs.push_back(global_values(spec, k));
  at::Tensor all = at::stack(vs);
  if (!op) {
    *out = vs[0];
  } else if (*op == ReduceOp::kSum) {
    *out = all.sum(0);
  } else if (*op == ReduceOp::kAvg) {
    *out = all.mean(0);
  } else if (*op == ReduceOp::kMax) {
    *out = std::get<0>(all.max(0));
  } else if (*op == ReduceOp::kMin) {
    *out = std::get<0>(all.min(0));
  } else {
    *out = all.prod(0);
  }
  if (spec.requires_grad) out->set_requires_grad(true);
  return true;
}

StepResult run_reference_step(const Step& step, std::vector<at::Tensor>& env,
                              const std::vector<at::Tensor>& inputs) {
  const json& j = step.json;
  if (step.kind == "op") {
    return {call_aten(j.at("op").get<std::string>(), j.value("args", json::array()),
                      j.value("kwargs", json::object()), env),
            true};
  }
  const at::Tensor& x = env_at(env, j);
  if (step.kind == "redistribute") return {{x}, true};
  if (step.kind == "full_tensor") return {{x}, false};
  if (step.kind == "backward") {
    x.sum().backward();
    StepResult r{{}, false};
    for (const json& i : j.value("grads", json::array())) r.outputs.push_back(inputs.at(i.get<size_t>()).grad());
    return r;
  }
  TORCH_CHECK(false, "diff program: unknown step kind ", step.kind);
  return {};
}

json run_on_rank(const Program& program) {
  std::vector<std::string> names = program.mesh_names;
  DeviceMesh mesh = DeviceMesh::init(c10::kCPU, program.mesh_shape, names);
  json record = {{"id", program.id}, {"steps", json::array()}};
  std::vector<at::Tensor> env;
  try {
    for (const InputSpec& spec : program.inputs) env.push_back(make_input(spec, mesh));
  } catch (const std::exception& e) {
    record["inputs_raised"] = true;
    record["error"] = first_line(e.what());
    return record;
  }
  const std::vector<at::Tensor> inputs = env;
  for (const Step& step : program.steps) {
    json rec = {{"raised", false}};
    debug::CommDebugMode comm;
    try {
      StepResult r;
      {
        auto guard = comm.enter();
        r = run_step(step, env, inputs);
      }
      json counts = json::object();
      for (const auto& [name, n] : comm.get_comm_counts()) counts[name] = n;
      rec["comms"] = counts;
      json outs = json::array();
      for (const at::Tensor& t : r.outputs) outs.push_back(describe(t));
      rec["outputs"] = outs;
      if (r.keep) env.insert(env.end(), r.outputs.begin(), r.outputs.end());
    } catch (const std::exception& e) {
      rec["raised"] = true;
      rec["error"] = first_line(e.what());
      record["steps"].push_back(rec);
      break;
    }
    record["steps"].push_back(rec);
  }
  return record;
}

}  // namespace

json run_reference(const Program& program) {
  json record = {{"id", program.id}, {"steps", json::array()}};
  std::vector<at::Tensor> env;
  try {
    for (const InputSpec& spec : program.inputs) {
      at::Tensor t;
      if (!reference_input(spec, program.mesh_shape, &t)) return nullptr;
      env.push_back(t);
    }
  } catch (const std::exception& e) {
    record["inputs_raised"] = true;
    record["error"] = first_line(e.what());
    return record;
  }
  const std::vector<at::Tensor> inputs = env;
  for (const Step& step : program.steps) {
    json rec = {{"raised", false}, {"comms", json::object()}};
    try {
      StepResult r = run_reference_step(step, env, inputs);
      json outs = json::array();
      for (const at::Tensor& t : r.outputs) outs.push_back(describe(t));
      rec["outputs"] = outs;
      if (r.keep) env.insert(env.end(), r.outputs.begin(), r.outputs.end());
    } catch (const std::exception& e) {
      rec["raised"] = true;
      rec["error"] = first_line(e.what());
      record["steps"].push_back(rec);
      break;
    }
    record["steps"].push_back(rec);
  }
  return record;
}

json run_program(const Program& program) {
  json record;
  FakeWorldOptions options;
  options.timeout = std::chrono::milliseconds(5000);
  run_fake_world(
      program.world_size,
      [&](World& world) {
        json mine = run_on_rank(program);
        if (world.rank() == 0) record = std::move(mine);
      },
      options);
  return record;
}

}  // namespace dtensor::diff
