// Strict mode for redistributions: inside an ExplicitRedistributionGuard, an
// implicit redistribution (sharding propagation changing an op's input
// layout) raises or warns, naming the op, the module, the input, the
// placements and the collectives it would issue, and how to make it explicit.
// PyTorch's counterpart is torch.distributed.tensor._utils
// .ExplicitRedistributionContext(enable, strict, mode="raise"|"warn").
//   { dtensor::ExplicitRedistributionGuard strict;            // raise
//     auto y = dtensor::nn::call(model, x); }                 // throws on an implicit all_gather
//   { dtensor::ExplicitRedistributionGuard warn(dtensor::RedistributionPolicy::kWarn); ... }
//   testing: EXPECT_NO_IMPLICIT_REDISTRIBUTION(model_step());  (testing/comm_expect.h)
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/dispatch/op_call.h"

namespace dtensor {

/// What an implicit redistribution does inside the guard.
enum class RedistributionPolicy {
  kRaise,  // throw c10::Error (PyTorch's mode="raise")
  kWarn,   // TORCH_WARN once per call site (op, module, input, placements), and run it
  kAllow,   // run it silently (PyTorch's enable=False: turns an outer guard off)
  kRecord,  // run it and keep the message in warnings(), once per call site, without warning
            // (EXPECT_NO_IMPLICIT_REDISTRIBUTION)
};

struct ExplicitRedistributionOptions {
  RedistributionPolicy policy = RedistributionPolicy::kRaise;
  /// Also catch implicit redistributions that issue no collective (R -> S(0)
  /// is a local chunk). PyTorch's strict=True; by default, as PyTorch, only
  /// redistributions that communicate trigger.
  bool strict = false;
};

/// See the file comment. Per thread (per rank in a fake world); guards nest,
/// the innermost applies. Backward passes run on this thread on CPU, so a
/// guard around forward and backward checks both (PyTorch advises forward only:
/// backward redistributions are not the user's to write; use kAllow there).
class ExplicitRedistributionGuard {
 public:
  explicit ExplicitRedistributionGuard(RedistributionPolicy policy = RedistributionPolicy::kRaise);
  explicit ExplicitRedistributionGuard(ExplicitRedistributionOptions options);
  /// Names modules by their path under `root` ("Transformer.layers.0.attention.wq",
  /// the root named `root_name` or its class name), as CommDebugMode does;
  /// without a root, by class name. Only calls through dtensor::nn::call /
  /// ModuleScope are seen (core/nn/module_call.h).
  ExplicitRedistributionGuard(torch::nn::Module& root, std::string root_name = "",
                              ExplicitRedistributionOptions options = {});
  ~ExplicitRedistributionGuard();
  ExplicitRedistributionGuard(const ExplicitRedistributionGuard&) = delete;
  ExplicitRedistributionGuard& operator=(const ExplicitRedistributionGuard&) = delete;

  /// The innermost guard of this thread, or nullptr.
  static ExplicitRedistributionGuard* current();
  /// The messages warned (kWarn) or recorded (kRecord) so far, one per call site.
  const std::vector<std::string>& warnings() const { return warnings_; }
  /// Implicit redistributions seen (every policy; kAllow too), counting repeats.
  int64_t implicit_count() const { return implicit_count_; }

  /// The dispatcher's check before it redistributes input `input` of `call`
  /// to `to`: counts it and raises or warns per the policy.
  void check(const OpCall& call, size_t input, const Placements& to);

 private:
  class ModuleStack;
  void init_root(torch::nn::Module& root, std::string root_name);
  std::string current_module() const;

  ExplicitRedistributionOptions options_;
  ExplicitRedistributionGuard* previous_;
  std::unique_ptr<ModuleStack> modules_;
  std::map<const torch::nn::Module*, std::string> fqns_;
  std::set<std::string> warned_sites_;
  std::vector<std::string> warnings_;
  int64_t implicit_count_ = 0;
};

}  // namespace dtensor
