// Executes one program on every rank of a fake world; rank 0 writes the record.
#include "tests/diff/runner.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/generated/variable_factories.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <regex>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/nn/module_call.h"
#include "core/parallel/parallelize.h"
#include "core/parallel/style.h"
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

// Values as float64 numbers in row-major order; a complex tensor's as (real,
// imaginary) pairs.
json encode_values(const at::Tensor& t) {
  const at::Tensor plain = t.is_complex() ? at::view_as_real(t.detach().resolve_conj().contiguous()) : t.detach();
  at::Tensor flat = plain.to(at::kDouble).contiguous().reshape({-1});
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

// The names pytorch_runner.py writes (torch.float32 -> "float32").
std::string dtype_name(at::ScalarType st) {
  switch (st) {
    case at::kFloat: return "float32";
    case at::kBFloat16: return "bfloat16";
    case at::kHalf: return "float16";
    case at::kInt: return "int32";
    case at::kComplexDouble: return "complex128";
    case at::kComplexFloat: return "complex64";
    case at::kByte: return "uint8";
    case at::kFloat8_e4m3fn: return "float8_e4m3fn";
    default: return c10::toString(st);
  }
}

// Placements, shape and global values of one step output (collective: every
// rank calls it for every output).
json describe(const at::Tensor& t) {
  if (!t.defined()) return nullptr;
  json out;
  out["shape"] = t.sizes().vec();
  // See tolerance_of in compare.cc: a dtype other than the corpus's usual ones is named.
  const at::ScalarType st = t.scalar_type();
  if (st != at::kDouble && st != at::kLong && st != at::kBool) out["dtype"] = dtype_name(st);
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

// The first line of an error, its head and its tail where it is long (the
// call's description comes first, what went wrong last).
std::string first_line(const std::string& text) {
  const size_t start = text.find_first_not_of(" \n");
  if (start == std::string::npos) return "";
  const std::string line = text.substr(start, text.find('\n', start) - start);
  if (line.size() <= 600) return line;
  return line.substr(0, 200) + " ... " + line.substr(line.size() - 395);
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

// ---- modules and optimizers (README, "structured steps")

// A "module" step's module with the parameter values of Note [Module
// parameter values]; `forward` calls it (through dtensor::nn::call when
// parallelized, so the style's boundary transforms run).
struct BuiltModule {
  std::shared_ptr<torch::nn::Module> module;
  std::function<at::Tensor(const at::Tensor&)> forward;
};

template <typename Holder>
BuiltModule wrap(Holder holder, bool through_hooks) {
  BuiltModule b{holder.ptr(), {}};
  if (through_hooks) {
    b.forward = [holder](const at::Tensor& x) mutable { return dtensor::nn::call(holder, x); };
  } else {
    b.forward = [holder](const at::Tensor& x) mutable { return holder->forward(x); };
  }
  return b;
}

BuiltModule make_module(const json& step, bool parallel) {
  const std::string kind = step.at("module").get<std::string>();
  const std::vector<int64_t> dims = step.at("dims").get<std::vector<int64_t>>();
  BuiltModule b;
  if (kind == "linear") {
    b = wrap(torch::nn::Linear(torch::nn::LinearOptions(dims.at(0), dims.at(1)).bias(step.value("bias", true))),
             parallel);
  } else if (kind == "embedding") {
    b = wrap(torch::nn::Embedding(torch::nn::EmbeddingOptions(dims.at(0), dims.at(1))), parallel);
  } else {
    TORCH_CHECK(kind == "layer_norm", "diff program: unknown module ", kind);
    b = wrap(torch::nn::LayerNorm(torch::nn::LayerNormOptions(dims)), parallel);
  }
  b.module->to(at::kDouble);
  at::NoGradGuard no_grad;
  for (const ModuleParam& p : module_params(step)) {
    b.module->named_parameters()[p.name].copy_(global_values(p.values, 0));
  }
  return b;
}

Placement placement_of(const json& text) { return parse({text.get<std::string>()}).at(0); }

// ColwiseParallel or RowwiseParallel with the step's layouts.
template <typename Style>
std::unique_ptr<ParallelStyle> sharding_style(const json& style) {
  auto s = std::make_unique<Style>();
  s->use_local_output(false);  // outputs stay DTensors, comparable as a whole
  if (style.contains("input_layouts")) s->input_layouts(placement_of(style.at("input_layouts")));
  if (style.contains("output_layouts")) s->output_layouts(placement_of(style.at("output_layouts")));
  return s;
}

std::unique_ptr<ParallelStyle> make_style(const json& style) {
  const std::string name = style.at("name").get<std::string>();
  if (name == "colwise") return sharding_style<ColwiseParallel>(style);
  if (name == "rowwise") return sharding_style<RowwiseParallel>(style);
  TORCH_CHECK(name == "sequence", "diff program: unknown style ", name);
  auto s = std::make_unique<SequenceParallel>();
  s->use_local_output(false);
  return s;
}

// The module parallelized as the step says: an optional PrepareModuleInput,
// then the style. Parameters are sliced locally (no collective), as the
// PyTorch runner's src_data_rank=None.
BuiltModule parallel_module(const json& step, const DeviceMesh& mesh) {
  BuiltModule b = make_module(step, /*parallel=*/true);
  ParallelizeOptions options;
  options.src_data_rank = std::nullopt;
  if (step.contains("prepare_input")) {
    PrepareModuleInput::Layouts in, desired;
    for (const json& p : step.at("prepare_input").at("input_layouts")) in.push_back(placement_of(p));
    for (const json& p : step.at("prepare_input").at("desired_input_layouts")) desired.push_back(placement_of(p));
    parallelize_module(*b.module, mesh,
                       PrepareModuleInput().input_layouts(in).desired_input_layouts(desired).use_local_output(false),
                       options);
  }
  parallelize_module(*b.module, mesh, *make_style(step.at("style")), options);
  return b;
}

StepResult module_step(const json& step, const BuiltModule& built, const std::vector<at::Tensor>& env) {
  const json& args = step.at("args");
  TORCH_CHECK(args.size() == 1, "diff program: a module step takes one tensor argument");
  StepResult r{{built.forward(env_at(env, args.at(0)))}, true};
  for (const ModuleParam& p : module_params(step)) r.outputs.push_back(built.module->named_parameters()[p.name]);
  return r;
}

StepResult optimizer_step(const json& step, const std::vector<at::Tensor>& env) {
  std::vector<at::Tensor> params;
  for (const json& i : step.at("params")) params.push_back(env.at(i.get<size_t>()));
  const std::string kind = step.at("optimizer").get<std::string>();
  const double lr = step.at("lr").get<double>();
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (kind == "sgd") {
    opt = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr));
  } else if (kind == "sgd_momentum") {
    opt = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr).momentum(0.9));
  } else if (kind == "adam") {
    opt = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr));
  } else {
    TORCH_CHECK(kind == "adamw", "diff program: unknown optimizer ", kind);
    opt = std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(lr));
  }
  opt->step();
  return {params, false};
}

// `x.sum().backward()`; the outputs are the gradients of the tensors in "grads".
StepResult backward_step(const json& step, const at::Tensor& x, const std::vector<at::Tensor>& env) {
  x.sum().backward();
  StepResult r{{}, false};
  for (const json& i : step.value("grads", json::array())) r.outputs.push_back(env.at(i.get<size_t>()).grad());
  return r;
}

StepResult run_step(const Step& step, std::vector<at::Tensor>& env, const DeviceMesh& mesh,
                    const BuiltModule* built) {
  const json& j = step.json;
  if (step.kind == "op") {
    return {call_aten(j.at("op").get<std::string>(), j.value("args", json::array()),
                      j.value("kwargs", json::object()), env),
            true};
  }
  if (step.kind == "module") return module_step(j, *built, env);
  if (step.kind == "optimizer") return optimizer_step(j, env);
  if (step.kind == "from_local") {
    FromLocalOptions options;
    options.shape = j.at("shape").get<std::vector<int64_t>>();  // contiguous strides by default
    return {{DTensor::from_local(env_at(env, j), mesh, parse(j.at("placements").get<std::vector<std::string>>()),
                                 options)},
            true};
  }
  DTensor x(env_at(env, j));
  if (step.kind == "redistribute") {
    return {{x.redistribute(parse(j.at("placements").get<std::vector<std::string>>()))}, true};
  }
  if (step.kind == "full_tensor") return {{x.full_tensor()}, false};
  if (step.kind == "to_local") {
    std::optional<Placements> grad_placements;
    if (j.contains("grad_placements")) grad_placements = parse(j.at("grad_placements").get<std::vector<std::string>>());
    return {{x.to_local(grad_placements)}, true};
  }
  if (step.kind == "backward") return backward_step(j, x, env);
  TORCH_CHECK(false, "diff program: unknown step kind ", step.kind);
  return {};
}

// The global value of a (possibly Partial) input; false when its Partial
// mesh dims mix reduce ops other than sum and avg (whose order matters).
bool reference_input(const InputSpec& spec, const std::vector<int64_t>& mesh_shape, at::Tensor* out) {
  Placements placements = parse(spec.placements);
  std::vector<ReduceOp> ops;       // per Partial mesh dim, in mesh order
  std::vector<int64_t> variants;   // its size: variant k is row-major over these
  for (size_t d = 0; d < placements.size(); ++d) {
    if (!placements[d].is_partial()) continue;
    ops.push_back(placements[d].reduce_op());
    variants.push_back(mesh_shape[d]);
  }
  const bool one_op = std::all_of(ops.begin(), ops.end(), [&](ReduceOp op) { return op == ops.front(); });
  const bool sum_avg = std::all_of(ops.begin(), ops.end(), [](ReduceOp op) { return op == ReduceOp::kSum || op == ReduceOp::kAvg; });
  if (!one_op && !sum_avg) return false;
  int64_t count = 1;
  for (int64_t n : variants) count *= n;
  std::vector<at::Tensor> vs;
  for (int64_t k = 0; k < count; ++k) vs.push_back(global_values(spec, k));
  at::Tensor all = at::stack(vs);
  if (ops.empty()) {
    *out = vs[0];
  } else if (!one_op) {  // sum and avg: each Partial mesh dim reduced by its own op
    std::vector<int64_t> shape = variants;
    shape.insert(shape.end(), vs[0].sizes().begin(), vs[0].sizes().end());
    all = all.reshape(shape);
    for (int64_t i = static_cast<int64_t>(ops.size()) - 1; i >= 0; --i) {
      all = ops[static_cast<size_t>(i)] == ReduceOp::kSum ? all.sum(i) : all.mean(i);
    }
    *out = all;
  } else if (ops.front() == ReduceOp::kSum) {
    *out = all.sum(0);
  } else if (ops.front() == ReduceOp::kAvg) {
    *out = all.mean(0);
  } else if (ops.front() == ReduceOp::kMax) {
    *out = std::get<0>(all.max(0));
  } else if (ops.front() == ReduceOp::kMin) {
    *out = std::get<0>(all.min(0));
  } else {
    *out = all.prod(0);
  }
  if (spec.requires_grad) out->set_requires_grad(true);
  return true;
}

// True when `args` (JSON step arguments) name a tensor marked in `local`.
bool uses_local(const json& args, const std::vector<bool>& local) {
  if (args.is_object() && args.contains("t")) return local.at(args.at("t").get<size_t>());
  if (args.is_array() || args.is_object()) {
    for (const json& a : args) {
      if (uses_local(a, local)) return true;
    }
  }
  return false;
}

// Note [Local tensors in the reference]
// The single-device run has no ranks: to_local and from_local are the
// identity there, so a tensor computed between them (a to_local output, an op
// on one) holds global values where the ranks hold their local ones. Such
// outputs are recorded as null (not compared); from_local's output is global
// again and compared, as is everything computed from it.
StepResult run_reference_step(const Step& step, std::vector<at::Tensor>& env,
                              std::vector<std::shared_ptr<torch::nn::Module>>& modules) {
  const json& j = step.json;
  if (step.kind == "op") {
    return {call_aten(j.at("op").get<std::string>(), j.value("args", json::array()),
                      j.value("kwargs", json::object()), env),
            true};
  }
  if (step.kind == "module") {
    BuiltModule built = make_module(j, /*parallel=*/false);
    modules.push_back(built.module);
    return module_step(j, built, env);
  }
  if (step.kind == "optimizer") return optimizer_step(j, env);
  const at::Tensor& x = env_at(env, j);
  if (step.kind == "redistribute" || step.kind == "to_local" || step.kind == "from_local") return {{x}, true};
  if (step.kind == "full_tensor") return {{x}, false};
  if (step.kind == "backward") return backward_step(j, x, env);
  TORCH_CHECK(false, "diff program: unknown step kind ", step.kind);
  return {};
}

// Note [Internal failures]
// A refusal (no strategy, an invalid placement, a shape error) is raised by
// every rank at the same step with the same message: the rules decide on
// global metadata only. Anything else on our side is a bug whatever PyTorch
// does (tests/diff/README.md, "scoring of raises"): an internal assert, a failure one
// rank caused in another (PeerFailureError), or ranks that took different
// paths (one raised, another did not; a fake world collective mismatch or
// timeout shows up this way). The record then carries "internal_error" (or
// a step's "internal"), which the comparer reports as a difference no
// deviation row can explain.
bool is_internal_failure(const std::exception& e) {
  if (dynamic_cast<const PeerFailureError*>(&e) != nullptr) return true;
  return std::string(e.what()).find("INTERNAL ASSERT FAILED") != std::string::npos;
}

// Note [A local op failing on some ranks]
// A local kernel may fail on the values of one rank's shards only (an index
// out of range in that rank's block of an embedding's indices), which the
// rules, deciding on metadata, cannot foresee: that rank raises "the local
// op failed on this rank's shards", the others fail in their next
// collective. That is the program's error, not a disagreement of ours, when
// one device raises at that step too: the record keeps the failing rank's
// error marked "some_ranks", and the comparer (compare.cc) treats it as a
// raise where the single-device run raised, as an internal failure where
// it did not.
constexpr const char* kLocalOpFailed = "the local op failed on this rank's shards";

json run_on_rank(const Program& program) {
  std::vector<std::string> names = program.mesh_names;
  DeviceMesh mesh = DeviceMesh::init(c10::kCPU, program.mesh_shape, names);
  if (!program.mesh_flatten.empty()) mesh = mesh[program.mesh_flatten].flatten();
  for (const std::vector<std::string>& dims : program.mesh_flattened) mesh[dims].flatten();
  json record = {{"id", program.id}, {"steps", json::array()}};
  std::vector<at::Tensor> env;
  try {
    for (const InputSpec& spec : program.inputs) env.push_back(make_input(spec, mesh));
  } catch (const std::exception& e) {
    record["inputs_raised"] = true;
    record["error"] = first_line(e.what());
    return record;
  }
  std::vector<std::shared_ptr<torch::nn::Module>> modules;  // alive while their graphs are
  for (const Step& step : program.steps) {
    json rec = {{"raised", false}};
    debug::CommDebugMode comm;
    try {
      std::optional<BuiltModule> built;  // built outside the counted region, as in the PyTorch runner
      if (step.kind == "module") {
        built = parallel_module(step.json, mesh);
        modules.push_back(built->module);
      }
      StepResult r;
      {
        auto guard = comm.enter();
        r = run_step(step, env, mesh, built ? &*built : nullptr);
      }
      json counts = json::object();
      for (const auto& [name, n] : comm.get_comm_counts()) counts[name] = n;
      rec["comms"] = counts;
      json bytes = json::object();  // input bytes this rank contributed, by collective
      for (const trace::CollectiveRecord& c : comm.trace().collectives) {
        bytes[c.kind] = bytes.value(c.kind, int64_t{0}) + c.bytes;
      }
      rec["bytes"] = bytes;
      json outs = json::array();
      for (const at::Tensor& t : r.outputs) outs.push_back(describe(t));
      rec["outputs"] = outs;
      if (r.keep) env.insert(env.end(), r.outputs.begin(), r.outputs.end());
    } catch (const std::exception& e) {
      rec["raised"] = true;
      rec["error"] = first_line(e.what());
      if (is_internal_failure(e)) {
        rec["internal"] = true;
        rec["internal_error"] = rec["error"];
      }
      record["steps"].push_back(rec);
      break;
    }
    record["steps"].push_back(rec);
  }
  return record;
}

// What a rank's record says about how each step ended: "ok", or the error
// with rank numbers blanked (a refusal names the rank that raises it, and the
// ranks of its mesh, which differ between the groups of a sub-mesh).
std::vector<std::string> step_endings(const json& record) {
  static const std::regex rank_number("rank [0-9]+");
  static const std::regex mesh_ranks("ranks \\[[0-9, ]*\\]");
  auto ending = [](const std::string& error) {
    return std::regex_replace(std::regex_replace(error, rank_number, "rank #"), mesh_ranks, "ranks [#]");
  };
  std::vector<std::string> out;
  if (record.value("inputs_raised", false)) out.push_back("inputs: " + ending(record.value("error", std::string())));
  for (const json& s : record.at("steps"))
    out.push_back(s.value("raised", false) ? ending(s.value("error", std::string())) : "ok");
  return out;
}

}  // namespace

json run_reference(const Program& program) {
  json record = {{"id", program.id}, {"steps", json::array()}};
  std::vector<at::Tensor> env;
  try {
    const std::vector<int64_t> mesh_shape = placement_mesh_shape(program);
    for (const InputSpec& spec : program.inputs) {
      at::Tensor t;
      if (!reference_input(spec, mesh_shape, &t)) return nullptr;
      env.push_back(t);
    }
  } catch (const std::exception& e) {
    record["inputs_raised"] = true;
    record["error"] = first_line(e.what());
    return record;
  }
  std::vector<bool> local(env.size(), false);  // See Note [Local tensors in the reference]
  std::vector<std::shared_ptr<torch::nn::Module>> modules;
  for (const Step& step : program.steps) {
    json rec = {{"raised", false}, {"comms", json::object()}};
    try {
      const bool outputs_local = step.kind == "to_local" || (step.kind == "op" && uses_local(step.json, local));
      StepResult r = run_reference_step(step, env, modules);
      json outs = json::array();
      for (const at::Tensor& t : r.outputs) outs.push_back(outputs_local ? json(nullptr) : describe(t));
      rec["outputs"] = outs;
      if (r.keep) {
        env.insert(env.end(), r.outputs.begin(), r.outputs.end());
        local.resize(env.size(), outputs_local);
      }
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
  std::vector<json> records(static_cast<size_t>(program.world_size));
  FakeWorldOptions options;
  options.timeout = std::chrono::milliseconds(5000);
  try {
    run_fake_world(
        program.world_size,
        [&](World& world) { records[static_cast<size_t>(world.rank())] = run_on_rank(program); },
        options);
  } catch (const std::exception& e) {  // a rank's function itself failed: See Note [Internal failures]
    json record = {{"id", program.id}, {"steps", json::array()}};
    record["internal_error"] = "the fake world failed: " + first_line(e.what());
    return record;
  }
  json record = records[0];
  const std::vector<std::string> endings = step_endings(record);
  for (size_t r = 1; r < records.size(); ++r) {
    const std::vector<std::string> other = step_endings(records[r]);
    if (other == endings) continue;
    size_t k = 0;
    while (k < endings.size() && k < other.size() && endings[k] == other[k]) ++k;
    auto at = [&](const std::vector<std::string>& e) { return k < e.size() ? e[k] : std::string("(no step)"); };
    const std::string why = "ranks disagree: rank 0 '" + at(endings) + "', rank " + std::to_string(r) + " '" +
                            at(other) + "'";
    // endings[0] is the inputs' when they raised; the step where the ranks parted gets the mark.
    const size_t offset = record.value("inputs_raised", false) ? 1 : 0;
    if (k >= offset && k - offset < record.at("steps").size()) {
      // See Note [A local op failing on some ranks]
      const size_t s = k - offset;
      for (const json& rank_record : records) {
        const json& steps = rank_record.at("steps");
        if (s < steps.size() && steps[s].value("raised", false) &&
            steps[s].value("error", std::string()).find(kLocalOpFailed) != std::string::npos) {
          record["steps"][s] = steps[s];
          record["steps"][s]["some_ranks"] = true;
          record["steps"].erase(record["steps"].begin() + static_cast<std::ptrdiff_t>(s) + 1, record["steps"].end());
          return record;
        }
      }
    }
    if (k >= offset && k - offset < record.at("steps").size()) {
      json& step = record["steps"][k - offset];
      step["internal"] = true;
      step["internal_error"] = why;
    } else {
      record["internal_error"] = why;
    }
    break;
  }
  return record;
}

}  // namespace dtensor::diff
