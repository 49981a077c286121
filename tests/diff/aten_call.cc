// Schema-driven conversion of JSON arguments to IValues, then a boxed call.
#include "tests/diff/aten_call.h"

#include <ATen/Functions.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>

namespace dtensor::diff {
namespace {

using nlohmann::json;

at::Tensor tensor_ref(const json& j, const std::vector<at::Tensor>& env, const std::string& where) {
  TORCH_CHECK(j.is_object() && j.contains("t"), where, ": expected a tensor {\"t\": i}, got ", j.dump());
  const int64_t i = j.at("t").get<int64_t>();
  TORCH_CHECK(i >= 0 && i < static_cast<int64_t>(env.size()), where, ": tensor ", i, " does not exist (",
              env.size(), " so far)");
  return env[static_cast<size_t>(i)];
}

// A ScalarType argument written {"dtype": "float32"} (the PyTorch runner
// passes torch.float32).
at::ScalarType scalar_type_named(const std::string& name, const std::string& where) {
  static const std::vector<std::pair<std::string, at::ScalarType>> kNames = {
      {"float64", at::kDouble}, {"float32", at::kFloat}, {"bfloat16", at::kBFloat16}, {"float16", at::kHalf},
      {"int64", at::kLong},     {"int32", at::kInt},     {"bool", at::kBool},         {"complex128", at::kComplexDouble},
      {"float8_e4m3fn", at::kFloat8_e4m3fn}};
  for (const auto& [n, t] : kNames) {
    if (n == name) return t;
  }
  TORCH_CHECK(false, where, ": unknown dtype ", name);
  return at::kDouble;
}

c10::IValue convert(const json& j, const c10::TypePtr& type, const std::vector<at::Tensor>& env,
                    const std::string& where) {
  const c10::TypeKind kind = type->kind();
  if (kind == c10::TypeKind::OptionalType) {
    if (j.is_null()) return c10::IValue();
    return convert(j, type->expectRef<c10::OptionalType>().getElementType(), env, where);
  }
  switch (kind) {
    case c10::TypeKind::TensorType:
      return tensor_ref(j, env, where);
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
      // A ScalarType is an int in the schema's types: {"dtype": "float32"}.
      if (j.is_object() && j.contains("dtype")) {
        return static_cast<int64_t>(scalar_type_named(j.at("dtype").get<std::string>(), where));
      }
      TORCH_CHECK(j.is_number_integer(), where, ": expected an int, got ", j.dump());
      return j.get<int64_t>();
    case c10::TypeKind::FloatType:
      TORCH_CHECK(j.is_number(), where, ": expected a float, got ", j.dump());
      return j.get<double>();
    case c10::TypeKind::BoolType:
      TORCH_CHECK(j.is_boolean(), where, ": expected a bool, got ", j.dump());
      return j.get<bool>();
    case c10::TypeKind::NumberType:  // Scalar
      TORCH_CHECK(j.is_number(), where, ": expected a number, got ", j.dump());
      if (j.is_number_integer()) return c10::Scalar(j.get<int64_t>());
      return c10::Scalar(j.get<double>());
    case c10::TypeKind::StringType:
      return j.get<std::string>();
    case c10::TypeKind::ListType: {
      const c10::TypePtr elem = type->expectRef<c10::ListType>().getElementType();
      json items = j.is_array() ? j : json::array({j});  // int[1] args accept a single int
      if (elem->kind() == c10::TypeKind::TensorType) {
        c10::List<at::Tensor> list;
        for (const json& v : items) list.push_back(tensor_ref(v, env, where));
        return list;
      }
      if (elem->kind() == c10::TypeKind::OptionalType) {
        c10::List<std::optional<at::Tensor>> list;
        for (const json& v : items) {
          list.push_back(v.is_null() ? std::optional<at::Tensor>() : tensor_ref(v, env, where));
        }
        return list;
      }
      if (elem->kind() == c10::TypeKind::IntType || elem->kind() == c10::TypeKind::SymIntType) {
        std::vector<int64_t> ints;
        for (const json& v : items) ints.push_back(v.get<int64_t>());
        return c10::List<int64_t>(ints);
      }
      if (elem->kind() == c10::TypeKind::BoolType) {
        c10::List<bool> bools;
        for (const json& v : items) bools.push_back(v.get<bool>());
        return bools;
      }
      if (elem->kind() == c10::TypeKind::FloatType) {
        std::vector<double> floats;
        for (const json& v : items) floats.push_back(v.get<double>());
        return c10::List<double>(floats);
      }
      if (elem->kind() == c10::TypeKind::NumberType) {  // Scalar[]
        std::vector<c10::Scalar> scalars;
        for (const json& v : items) {
          scalars.push_back(v.is_number_integer() ? c10::Scalar(v.get<int64_t>()) : c10::Scalar(v.get<double>()));
        }
        return c10::IValue(scalars);
      }
      TORCH_CHECK(false, where, ": unsupported list type ", type->str());
      return c10::IValue();
    }
    default:
      // MemoryFormat, Layout: integers in the boxed convention.
      if (j.is_number_integer()) return j.get<int64_t>();
      TORCH_CHECK(false, where, ": unsupported argument type ", type->str(), " for ", j.dump());
  }
}

void collect(const c10::IValue& v, std::vector<at::Tensor>* out) {
  if (v.isTensor()) {
    out->push_back(v.toTensor());
  } else if (v.isBool() || v.isInt() || v.isDouble()) {
    // equal, is_same_size, ...: recorded as a plain 0-d tensor, as the
    // PyTorch runner records a non-tensor result.
    out->push_back(v.isBool() ? at::scalar_tensor(v.toBool() ? 1.0 : 0.0, at::kDouble)
                              : at::scalar_tensor(v.isInt() ? static_cast<double>(v.toInt()) : v.toDouble(),
                                                  at::kDouble));
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) out->push_back(t);
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) collect(e, out);
  }
}

}  // namespace

std::vector<at::Tensor> call_aten(const std::string& name, const json& args, const json& kwargs,
                                  const std::vector<at::Tensor>& env) {
  const size_t dot = name.find('.');
  const std::string base = name.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "" : name.substr(dot + 1);
  auto handle = c10::Dispatcher::singleton().findSchema({base, overload});
  TORCH_CHECK(handle.has_value(), "diff program: unknown operator ", name);
  const c10::FunctionSchema& schema = handle->schema();
  const auto& params = schema.arguments();
  TORCH_CHECK(args.size() <= params.size(), name, ": ", args.size(), " positional arguments for ",
              params.size(), " parameters");
  for (const auto& [key, value] : kwargs.items()) {
    bool known = false;
    for (const auto& p : params) known = known || p.name() == key;
    TORCH_CHECK(known, name, ": unknown keyword argument ", key);
  }
  torch::jit::Stack stack;
  for (size_t i = 0; i < params.size(); ++i) {
    const c10::Argument& p = params[i];
    const std::string where = name + " argument " + p.name();
    if (i < args.size()) {
      stack.push_back(convert(args[i], p.type(), env, where));
    } else if (kwargs.contains(p.name())) {
      stack.push_back(convert(kwargs.at(p.name()), p.type(), env, where));
    } else {
      TORCH_CHECK(p.default_value().has_value(), name, ": missing argument ", p.name());
      stack.push_back(*p.default_value());
    }
  }
  handle->callBoxed(&stack);
  std::vector<at::Tensor> out;
  for (const c10::IValue& v : stack) collect(v, &out);
  return out;
}

}  // namespace dtensor::diff
