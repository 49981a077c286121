// Helpers of the tensor-parallel example tests.
#include "tests/examples/tp_test_util.h"

#include <ATen/Functions.h>

#include <cmath>
#include <limits>

#include "core/dtensor.h"
#include "core/dtensor_impl.h"

namespace dtensor::testing {

std::map<std::string, at::Tensor> full_parameters(const torch::nn::Module& module) {
  std::map<std::string, at::Tensor> out;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    const at::Tensor& p = item.value();
    out[item.key()] = is_dtensor(p) ? DTensor(p.detach()).full_tensor() : p.detach().clone();
  }
  return out;
}

double max_abs_diff(const std::map<std::string, at::Tensor>& a, const std::map<std::string, at::Tensor>& b) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (a.size() != b.size()) return kInf;
  double worst = 0;
  for (const auto& [name, ta] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.sizes() != ta.sizes()) return kInf;
    worst = std::max(worst, (ta.to(at::kDouble) - it->second.to(at::kDouble)).abs().max().item<double>());
  }
  return worst;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

}  // namespace dtensor::testing
