// The module tree of a comm trace. See module_tree.h.
#include "trace/module_tree.h"

#include <set>

namespace dtensor::trace {
namespace {

int64_t sum(const KindCounts& counts) {
  int64_t total = 0;
  for (const auto& [kind, value] : counts) total += value;
  return total;
}

class TreeBuilder {
 public:
  explicit TreeBuilder(const CommTrace& view)
      : view(view), counts(comm_module_counts(view)), bytes(comm_module_bytes(view)) {}

  ModuleNode build(const std::string& fqn) {
    on_path.insert(fqn);
    ModuleNode node;
    node.fqn = fqn;
    if (const ModuleRecord* m = find_module(view, fqn)) {
      node.module_type = m->module_type;
      node.parameters = m->parameters;
    }
    if (auto it = counts.find(fqn); it != counts.end()) {
      node.forward_counts = it->second["forward"];
      node.backward_counts = it->second["backward"];
    }
    if (auto it = bytes.find(fqn); it != bytes.end()) {
      node.forward_bytes = it->second["forward"];
      node.backward_bytes = it->second["backward"];
    }
    for (const OpRecord& op : view.operations) {
      if (op.module != fqn) continue;
      (op.phase == Phase::kForward ? node.forward_operations : node.backward_operations)
          .push_back(op);
    }
    for (const std::string& child : module_children(view, fqn)) {
      if (!on_path.count(child)) node.children.push_back(build(child));
    }
    on_path.erase(fqn);
    return node;
  }

 private:
  const CommTrace& view;  // one rank's records
  ModuleCounts counts;
  ModuleCounts bytes;
  std::set<std::string> on_path;  // a malformed (cyclic) tree must not loop
};

}  // namespace

int64_t ModuleNode::total_forward() const { return sum(forward_counts); }

int64_t ModuleNode::total_backward() const { return sum(backward_counts); }

int64_t ModuleNode::total_bytes() const { return sum(forward_bytes) + sum(backward_bytes); }

std::string ModuleNode::short_name() const {
  const size_t dot = fqn.rfind('.');
  return dot == std::string::npos ? fqn : fqn.substr(dot + 1);
}

int64_t reference_rank(const CommTrace& trace) {
  if (trace.rank >= 0) return trace.rank;
  const std::vector<int64_t> ranks = ranks_in(trace);
  return ranks.empty() ? 0 : ranks.front();
}

ModuleNode module_tree(const CommTrace& trace) {
  const CommTrace view = rank_view(trace, reference_rank(trace));
  return TreeBuilder(view).build(kGlobalFqn);
}

int64_t module_count(const ModuleNode& root) {
  int64_t count = 1;
  for (const ModuleNode& child : root.children) count += module_count(child);
  return count;
}

}  // namespace dtensor::trace
