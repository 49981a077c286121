// Helpers of the tensor-parallel example tests: per-phase collective counts,
// the global value of every parameter, and the comparison of two runs.
//   PhaseCounter counter(world);  ...  counter.take();   // {"all_reduce": 1}, then reset
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <map>
#include <string>
#include <vector>

#include "backends/world.h"

namespace dtensor::testing {

/// Collective name -> count.
using Counts = std::map<std::string, int>;

/// Counts this rank's collectives (world.observers()) while alive.
class PhaseCounter : public CollectiveObserver {
 public:
  explicit PhaseCounter(World& world) : registration_(world.observers().add(this)) {}
  void on_collective(const CollectiveEvent& event) override { ++counts_[collective_name(event.kind)]; }
  /// The counts since the last take(), then starts over.
  Counts take() {
    Counts out;
    out.swap(counts_);
    return out;
  }

 private:
  Counts counts_;
  ObserverList::Registration registration_;
};

/// "{all_reduce: 6, all_gather_into_tensor: 1}" for failure messages.
std::string to_string(const Counts& counts);

/// Parameter name -> its global value (full_tensor() of a DTensor, a copy
/// of a plain tensor), detached. Issues collectives for DTensors.
std::map<std::string, at::Tensor> full_parameters(const torch::nn::Module& module);

/// The largest |a - b| over the parameters both maps have; +inf when the
/// names or shapes differ.
double max_abs_diff(const std::map<std::string, at::Tensor>& a, const std::map<std::string, at::Tensor>& b);

/// The largest |a[i] - b[i]|; +inf when the sizes differ.
double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace dtensor::testing
