// The module tree of a comm trace as PyTorch's CommDebugMode reports it: each
// module with its own parameters and operations, and collective counts and
// bytes that include its descendants'. Derived from one rank's records (the
// trace's rank, or a merged trace's reference rank); the JSON writer writes
// it and the viewer's comm table shows it.
//   ModuleNode root = module_tree(trace);
//   root.forward_counts.at("all_reduce");   // every all_reduce of forward
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trace/trace_model.h"

namespace dtensor::trace {

/// One module of the tree (the root is Global).
struct ModuleNode {
  std::string fqn;
  std::string module_type;  // "" for Global
  /// The module's own DTensor parameters: (name, placements text "[S(0), R]").
  std::vector<std::pair<std::string, std::string>> parameters;
  /// Collectives (and their bytes) issued in this module or its descendants.
  KindCounts forward_counts, backward_counts;
  KindCounts forward_bytes, backward_bytes;
  /// Operations run directly in this module, in record order, unfiltered
  /// (NoiseFilter selects what a noise level shows).
  std::vector<OpRecord> forward_operations, backward_operations;
  std::vector<ModuleNode> children;  // first-entry order

  /// Sum of forward_counts. Example: {"all_reduce": 2, "broadcast": 1} -> 3.
  int64_t total_forward() const;
  /// Sum of backward_counts.
  int64_t total_backward() const;
  /// Sum of forward and backward bytes.
  int64_t total_bytes() const;
  /// The last path component: "net1" for "MLP.net1"; the fqn without dots as is.
  std::string short_name() const;
};

/// The rank whose records a tree shows: trace.rank, or for a merged trace
/// (rank -1) its lowest rank (0 when it has none).
int64_t reference_rank(const CommTrace& trace);

/// The tree of reference_rank(trace)'s records. A module record whose fqn is
/// already on the path from the root (a malformed, cyclic tree) is skipped.
ModuleNode module_tree(const CommTrace& trace);

/// Modules in the tree, the root included.
int64_t module_count(const ModuleNode& root);

}  // namespace dtensor::trace
