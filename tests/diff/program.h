// Differential-test programs (format: tests/diff/README.md) as C++ values,
// parsed from JSON, and the deterministic input values both runners compute.
//   std::vector<Program> programs = parse_programs(nlohmann::json::parse(text));
//   at::Tensor g = global_values(programs[0].inputs[0], /*variant=*/0);
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dtensor::diff {

/// The format tag of program, record and golden files.
inline constexpr const char* kFormat = "dtensor-diff/1";

/// One input: global shape, placements (strings such as "S(0)", "P(max)"),
/// and how its values are generated (See Note [Input values]).
struct InputSpec {
  std::vector<int64_t> shape;
  std::vector<std::string> placements;
  int64_t seed = 0;
  /// "float64" (default), "float32", "bfloat16", "float8_e4m3fn",
  /// "complex128" (real and imaginary parts as float64 values of seeds s and
  /// s + 1), "int64", "int32", "uint8" or "bool" (raw % 2 == 1): Note [Input values].
  std::string dtype = "float64";
  int64_t low = 0;           // integer values lie in [low, high)
  int64_t high = 1;
  double scale = 1.0;        // float values: (base - 0.5) * scale + offset
  double offset = 0.0;
  bool sorted = false;       // values sorted along the last dim (bucketize's boundaries)
  bool requires_grad = false;
  bool is_integral() const { return dtype == "int64" || dtype == "int32" || dtype == "uint8"; }
};

/// One step; `json` keeps the step as written (kind "op", "redistribute",
/// "full_tensor", "to_local", "from_local", "module", "backward" or
/// "optimizer"; see the README for the fields of each).
struct Step {
  std::string kind;
  nlohmann::json json;
};

struct Program {
  std::string id;
  int64_t world_size = 0;
  std::vector<int64_t> mesh_shape;
  std::vector<std::string> mesh_names;
  /// mesh.flatten: names of mesh dims whose `_flatten()` the tensors live
  /// on (empty: the whole mesh).
  std::vector<std::string> mesh_flatten;
  /// mesh.flattened: sets of mesh dim names the program flattens first while
  /// its tensors stay on the mesh, so that redistributions over them may
  /// merge (Note [Merged collectives over a flattened mesh]).
  std::vector<std::vector<std::string>> mesh_flattened;
  std::vector<InputSpec> inputs;
  std::vector<Step> steps;
};

/// The shape of the mesh a program's tensors live on, one entry per
/// placement: mesh_shape, or the product of the flattened dims' sizes.
/// Throws std::invalid_argument when mesh_flatten names an unknown dim.
std::vector<int64_t> placement_mesh_shape(const Program& program);

/// Parses a programs file ({"format": kFormat, "programs": [...]}); throws
/// std::invalid_argument naming the program and field for malformed input.
std::vector<Program> parse_programs(const nlohmann::json& doc);

/// The global values of `spec` for Partial variant `variant` (0 when the
/// input has no Partial placement). See Note [Input values].
at::Tensor global_values(const InputSpec& spec, int64_t variant);

/// One parameter of a "module" step: its name in the module, global shape
/// and values (the spec's placements are unused).
struct ModuleParam {
  std::string name;
  InputSpec values;
};

/// The parameters of a "module" step ("linear", "embedding", "layer_norm"),
/// in the order the step outputs them (See Note [Module parameter values]).
/// Throws std::invalid_argument for an unknown module.
std::vector<ModuleParam> module_params(const nlohmann::json& step);

}  // namespace dtensor::diff
