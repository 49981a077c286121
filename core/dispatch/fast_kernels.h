// Unboxed DTensor kernels for a few hot operators: a call that the identity
// fast path decides with nothing to redistribute runs the op on the local
// tensors without boxing its arguments; any other call boxes them and takes
// the DTensor kernel. See Note [Unboxed fast path] in fast_kernels.cc.
//   if (auto fn = detail::fast_kernel("aten::add_.Tensor")) lib.impl("add_.Tensor", std::move(*fn));
#pragma once

#include <torch/library.h>

#include <optional>
#include <string_view>

namespace dtensor::detail {

/// The unboxed kernel registered at PrivateUse1 for `full_name`
/// ("aten::add_.Tensor") in place of the boxed DTensor kernel, or nullopt.
std::optional<torch::CppFunction> fast_kernel(std::string_view full_name);

}  // namespace dtensor::detail
