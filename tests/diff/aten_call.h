// Calls an aten operator by its full name with JSON arguments, through the
// dispatcher (autograd included), as torch.ops.aten.<name>.<overload> does in
// Python.
//   std::vector<at::Tensor> out = call_aten("aten::mul.Tensor", args, kwargs, env);
#pragma once

#include <ATen/core/Tensor.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dtensor::diff {

/// Calls operator `name` ("aten::sum.dim_IntList"; no overload means
/// "default"). Arguments are converted by the schema's types: {"t": i} is
/// env[i], lists of those are Tensor[] / Tensor?[], null is None, JSON
/// integers and floats are int / float / Scalar. Missing arguments take the
/// schema's defaults. Returns every tensor the operator returns, tuples and
/// lists flattened in order. Throws c10::Error for an unknown operator,
/// unknown keyword, missing argument or a value of the wrong type.
std::vector<at::Tensor> call_aten(const std::string& name, const nlohmann::json& args,
                                  const nlohmann::json& kwargs, const std::vector<at::Tensor>& env);

}  // namespace dtensor::diff
