// Helpers of the tensor-parallel example tests: the global value of every
// parameter, and the comparison of two runs. Per-phase collective counts:
// testing/collective_counter.h (CollectiveCounter::take()).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <map>
#include <string>
#include <vector>

#include "backends/world.h"
#include "testing/collective_counter.h"

namespace dtensor::testing {

/// Parameter name -> its global value (full_tensor() of a DTensor, a copy
/// of a plain tensor), detached. Issues collectives for DTensors.
std::map<std::string, at::Tensor> full_parameters(const torch::nn::Module& module);

/// The largest |a - b| over the parameters both maps have; +inf when the
/// names or shapes differ.
double max_abs_diff(const std::map<std::string, at::Tensor>& a, const std::map<std::string, at::Tensor>& b);

/// The largest |a[i] - b[i]|; +inf when the sizes differ.
double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace dtensor::testing
