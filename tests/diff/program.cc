// Parsing of differential-test programs and the shared input generator.
#include "tests/diff/program.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>

namespace dtensor::diff {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw std::invalid_argument("diff program " + where + ": " + what);
}

const json& field(const json& j, const char* name, const std::string& where) {
  if (!j.is_object() || !j.contains(name)) bad(where, std::string("missing field \"") + name + "\"");
  return j.at(name);
}

std::vector<int64_t> int_list(const json& j, const std::string& where) {
  if (!j.is_array()) bad(where, "expected a list of integers, got " + j.dump());
  std::vector<int64_t> out;
  for (const json& v : j) {
    if (!v.is_number_integer()) bad(where, "expected an integer, got " + v.dump());
    out.push_back(v.get<int64_t>());
  }
  return out;
}

InputSpec parse_input(const json& j, const std::string& where) {
  InputSpec s;
  s.shape = int_list(field(j, "shape", where), where + ".shape");
  for (const json& p : field(j, "placements", where)) s.placements.push_back(p.get<std::string>());
  s.seed = field(j, "seed", where).get<int64_t>();
  s.dtype = j.value("dtype", std::string("float64"));
  static const std::vector<std::string> kDtypes = {"float64", "float32", "bfloat16", "float8_e4m3fn", "complex128",
                                                   "int64",   "int32",   "uint8",    "bool"};
  if (std::find(kDtypes.begin(), kDtypes.end(), s.dtype) == kDtypes.end()) {
    bad(where, "dtype must be float64, float32, bfloat16, float8_e4m3fn, complex128, int64, int32, uint8 or bool, got " +
                   s.dtype);
  }
  s.low = j.value("low", int64_t{0});
  s.high = j.value("high", int64_t{1});
  if (s.is_integral() && s.high <= s.low) bad(where, "high must be > low");
  s.sorted = j.value("sorted", false);
  if (s.sorted && s.dtype == "complex128") bad(where, "complex values cannot be sorted");
  s.scale = j.value("scale", 1.0);
  s.offset = j.value("offset", 0.0);
  s.requires_grad = j.value("requires_grad", false);
  return s;
}

}  // namespace

std::vector<int64_t> placement_mesh_shape(const Program& program) {
  if (program.mesh_flatten.empty()) return program.mesh_shape;
  int64_t flat = 1;
  for (const std::string& name : program.mesh_flatten) {
    auto it = std::find(program.mesh_names.begin(), program.mesh_names.end(), name);
    if (it == program.mesh_names.end()) bad(program.id, "mesh.flatten names an unknown mesh dim " + name);
    flat *= program.mesh_shape[static_cast<size_t>(it - program.mesh_names.begin())];
  }
  return {flat};
}

std::vector<Program> parse_programs(const json& doc) {
  if (!doc.is_object() || doc.value("format", std::string()) != kFormat) {
    bad("file", std::string("not a ") + kFormat + " document");
  }
  std::vector<Program> out;
  for (const json& j : field(doc, "programs", "file")) {
    Program p;
    p.id = field(j, "id", "?").get<std::string>();
    p.world_size = field(j, "world_size", p.id).get<int64_t>();
    const json& mesh = field(j, "mesh", p.id);
    p.mesh_shape = int_list(field(mesh, "shape", p.id + ".mesh"), p.id + ".mesh.shape");
    if (mesh.contains("names") && !mesh.at("names").is_null()) {
      p.mesh_names = mesh.at("names").get<std::vector<std::string>>();
    }
    int64_t ranks = 1;
    for (int64_t s : p.mesh_shape) ranks *= s;
    if (ranks != p.world_size) bad(p.id, "mesh size " + std::to_string(ranks) + " != world_size");
    if (mesh.contains("flatten")) p.mesh_flatten = mesh.at("flatten").get<std::vector<std::string>>();
    if (mesh.contains("flattened")) {
      p.mesh_flattened = mesh.at("flattened").get<std::vector<std::vector<std::string>>>();
      if (!p.mesh_flatten.empty()) bad(p.id, "mesh.flattened and mesh.flatten together");
    }
    const size_t mesh_ndim = placement_mesh_shape(p).size();
    const json& inputs = field(j, "inputs", p.id);
    for (size_t i = 0; i < inputs.size(); ++i) {
      p.inputs.push_back(parse_input(inputs[i], p.id + ".inputs[" + std::to_string(i) + "]"));
      if (p.inputs.back().placements.size() != mesh_ndim) {
        bad(p.id, "input " + std::to_string(i) + " needs one placement per mesh dim");
      }
    }
    for (const json& s : field(j, "steps", p.id)) {
      p.steps.push_back(Step{field(s, "kind", p.id + ".steps").get<std::string>(), s});
    }
    out.push_back(std::move(p));
  }
  return out;
}

// Note [Input values]
// Both runners compute, with the same tensor ops in the same order (so the
// float64 results are bit-identical, no PRNG involved):
//   s = seed + 101 * variant; a = 1 + (s * 389) % 1008; b = (s * 7) % 1009
//   raw[i] = (i * a + b) % 1009                       (int64, i = 0..n-1)
//   int64, int32, uint8: raw % (high - low) + low
//   bool:    raw % 2 == 1
//   float64: (raw / 1009.0 - 0.5) * scale + offset
//   float32, bfloat16, float8_e4m3fn: the float64 values, cast
//   complex128: real part the float64 values, imaginary part those of seed + 1
//   sorted: then sorted along the last dim
// `variant` tells the ranks of a Partial group apart: each rank's local tensor
// is its shard of the variant given by its row-major index among the Partial
// mesh dims, so partial values differ across the group (README, "Inputs").
at::Tensor global_values(const InputSpec& spec, int64_t variant) {
  int64_t n = 1;
  for (int64_t s : spec.shape) n *= s;
  auto raw_of = [n](int64_t seed) {
    const int64_t a = 1 + (seed * 389) % 1008;
    const int64_t b = (seed * 7) % 1009;
    return (at::arange(n, at::kLong) * a + b) % 1009;
  };
  auto float_of = [&](int64_t seed) { return (raw_of(seed).to(at::kDouble) / 1009.0 - 0.5) * spec.scale + spec.offset; };
  const int64_t seed = spec.seed + 101 * variant;
  at::Tensor v;
  if (spec.is_integral()) {
    v = (raw_of(seed) % (spec.high - spec.low) + spec.low)
            .to(spec.dtype == "int32" ? at::kInt : spec.dtype == "uint8" ? at::kByte : at::kLong);
  } else if (spec.dtype == "bool") {
    v = raw_of(seed) % 2 == 1;
  } else if (spec.dtype == "complex128") {
    v = at::complex(float_of(seed), float_of(seed + 1));
  } else {
    v = float_of(seed).to(spec.dtype == "float32"         ? at::kFloat
                          : spec.dtype == "bfloat16"      ? at::kBFloat16
                          : spec.dtype == "float8_e4m3fn" ? at::kFloat8_e4m3fn
                                                          : at::kDouble);
  }
  v = v.reshape(spec.shape);
  return spec.sorted && v.dim() > 0 ? std::get<0>(v.sort(-1)) : v;
}

// Note [Module parameter values]
// A module step's parameters get values from the input generator, so both
// runners build the same module (pytorch_runner.py's module_params is the
// same table). `dims` and `seed` are the step's fields:
//   linear [in, out]:  weight [out, in] from seed, bias [out] from seed + 1
//   embedding [n, d]:  weight [n, d] from seed
//   layer_norm [h]:    weight [h] from seed (scale 0.5, offset 1), bias from seed + 1
std::vector<ModuleParam> module_params(const json& step) {
  const std::string kind = field(step, "module", "module step").get<std::string>();
  const std::vector<int64_t> dims = int_list(field(step, "dims", "module step"), "module step.dims");
  const int64_t seed = field(step, "seed", "module step").get<int64_t>();
  auto param = [](std::string name, std::vector<int64_t> shape, int64_t seed, double scale = 1.0,
                  double offset = 0.0) {
    ModuleParam p{std::move(name), {}};
    p.values.shape = std::move(shape);
    p.values.seed = seed;
    p.values.scale = scale;
    p.values.offset = offset;
    return p;
  };
  if (kind == "linear" && dims.size() == 2) {
    std::vector<ModuleParam> out{param("weight", {dims[1], dims[0]}, seed)};
    if (step.value("bias", true)) out.push_back(param("bias", {dims[1]}, seed + 1));
    return out;
  }
  if (kind == "embedding" && dims.size() == 2) return {param("weight", dims, seed)};
  if (kind == "layer_norm") return {param("weight", dims, seed, 0.5, 1.0), param("bias", dims, seed + 1)};
  bad("module step", "unknown module " + kind + " with dims " + field(step, "dims", "module step").dump());
}

}  // namespace dtensor::diff
