// parallelize_module: applies parallel styles to the submodules a plan names,
// like PyTorch's torch.distributed.tensor.parallel.parallelize_module.
//   parallelize_module(*model, mesh["tp"], {
//       {"layers.*.attention.wq", ColwiseParallel()},
//       {"layers.*.attention.wo", RowwiseParallel()},
//   });
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/device_mesh.h"
#include "core/parallel/style.h"

namespace dtensor {

/// One entry of a plan: a module path and the style for it. Paths are
/// dot-separated child names from the module given to parallelize_module
/// ("layers.0.attention.wq"); each part may use fnmatch wildcards ('*', '?',
/// '[abc]', '[!abc]'), matched against child names ("layers.*.feed_forward.w1").
/// The empty path names that module itself.
struct PlanEntry {
  template <typename Style, typename = std::enable_if_t<std::is_base_of_v<ParallelStyle, std::decay_t<Style>>>>
  PlanEntry(std::string path_, Style&& style_)  // NOLINT(google-explicit-constructor): brace lists
      : path(std::move(path_)), style(std::make_shared<std::decay_t<Style>>(std::forward<Style>(style_))) {}
  PlanEntry(std::string path_, std::shared_ptr<const ParallelStyle> style_)
      : path(std::move(path_)), style(std::move(style_)) {}

  std::string path;
  std::shared_ptr<const ParallelStyle> style;
};

/// Entries apply in order (a later entry may not re-shard what an earlier one
/// sharded).
using ParallelizePlan = std::vector<PlanEntry>;

struct ParallelizeOptions {
  /// Rank whose parameter values are scattered/broadcast (PyTorch's
  /// src_data_rank), or nullopt: every rank slices its own copy (no
  /// communication; the copies must be equal, e.g. built from one seed).
  std::optional<int64_t> src_data_rank = 0;
  /// What happens when a parallelized module's parameter is used while its
  /// forward runs without dtensor::nn::call (the style's conversions
  /// skipped): warn once per module (default), throw (for tests), or
  /// nothing. See Note [Skipped boundaries] in core/nn/module_call.cc.
  nn::SkippedBoundary skipped_boundary = nn::SkippedBoundary::kWarn;
};

/// Applies each plan entry's style to every submodule its path matches.
/// Throws c10::Error, naming the entry, when a path matches no submodule
/// (listing the children that exist at the failing part), when the mesh is
/// not 1-D (pass mesh["tp"]), or when a style rejects a module. Styles act at
/// module boundaries reached through dtensor::nn::call; see Note [Parallel
/// styles at C++ module boundaries]. Example:
///   parallelize_module(*mlp, mesh, {{"net1", ColwiseParallel()}, {"net2", RowwiseParallel()}});
void parallelize_module(torch::nn::Module& module, const DeviceMesh& mesh, const ParallelizePlan& plan,
                        const ParallelizeOptions& options = {});

/// Applies one style to `module` itself.
void parallelize_module(torch::nn::Module& module, const DeviceMesh& mesh, const ParallelStyle& style,
                        const ParallelizeOptions& options = {});

/// fnmatch-style match of one path part: '*' any run, '?' one character,
/// '[...]' a set ('[!...]' its complement, ranges a-z). Exposed for tests.
bool fnmatch(const std::string& name, const std::string& pattern);

/// The paths (relative to `module`, dot-separated) of the submodules that
/// `pattern` matches, in named_modules() order.
std::vector<std::string> match_module_paths(const torch::nn::Module& module, const std::string& pattern);

}  // namespace dtensor
