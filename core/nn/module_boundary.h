// Skipped module boundaries made loud: a parameter of a module whose parallel
// style (or distribute_module input_fn / output_fn) acts at its boundary
// remembers that module, and an op that uses the parameter while the module's
// forward did not go through dtensor::nn::call / ModuleScope warns once (or
// throws). See Note [Skipped boundaries] in core/nn/module_call.cc.
//   ParallelizeOptions options;
//   options.skipped_boundary = nn::SkippedBoundary::kError;   // tests: throw instead of warning
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace torch::nn {
class Module;
}

namespace dtensor::nn {

/// What happens when a parameter is used outside its module's boundary:
/// kWarn (default) warns once per module and process, kError throws c10::Error
/// (for tests), kIgnore says nothing.
enum class SkippedBoundary { kIgnore, kWarn, kError };

/// The modules (one, or several for tied parameters) whose boundary a
/// parameter belongs to. Immutable once attached to a DTensor.
struct ModuleBoundary {
  struct Owner {
    const torch::nn::Module* module = nullptr;  // compared by address with the active scopes
    std::string name;                           // "layers.0.attention.wq", or the module's type
    std::string style;                          // "ColwiseParallel(...)" or "distribute_module hooks"
  };
  std::vector<Owner> owners;
  SkippedBoundary on_skip = SkippedBoundary::kWarn;
};

/// Called by the DTensor kernel for each input that carries a boundary: does
/// nothing when one of its modules is in a forward scope on this thread, for
/// detach / alias, inside autograd's backward, or with grad mode off and no module scope
/// active at all (optimizer steps, init, inspection); otherwise warns once
/// per module or throws, naming the module, its style, `op`, the rank and the
/// call to write.
void check_module_boundary(const ModuleBoundary& boundary, std::string_view op, int64_t rank);

/// True when `module`'s forward scope is open on this thread.
bool module_in_scope(const torch::nn::Module* module);

}  // namespace dtensor::nn
