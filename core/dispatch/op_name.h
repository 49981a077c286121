// The one spelling of an operator's full name, "aten::add.Tensor" (or
// "aten::relu" when the overload name is empty), as sharding rules, error
// messages, observers and traces use it.
//   std::string name = dtensor::full_op_name(op.operator_name());   // "aten::mm"
#pragma once

#include <ATen/core/operator_name.h>

#include <string>

namespace dtensor {

/// "name.overload", or "name" when the overload name is empty.
/// Example: full_op_name({"aten::add", "Tensor"}) == "aten::add.Tensor".
inline std::string full_op_name(const c10::OperatorName& name) {
  if (name.overload_name.empty()) return name.name;
  std::string out;
  out.reserve(name.name.size() + 1 + name.overload_name.size());
  out.append(name.name).append(1, '.').append(name.overload_name);
  return out;
}

/// The inverse of full_op_name: "aten::add.Tensor" -> {"aten::add", "Tensor"},
/// "aten::relu" -> {"aten::relu", ""}.
inline c10::OperatorName parse_op_name(const std::string& full) {
  const size_t dot = full.find('.');
  return {full.substr(0, dot), dot == std::string::npos ? "" : full.substr(dot + 1)};
}

/// Size of full_op_name(name) without building it.
inline size_t full_op_name_size(const c10::OperatorName& name) {
  return name.name.size() + (name.overload_name.empty() ? 0 : 1 + name.overload_name.size());
}

}  // namespace dtensor
