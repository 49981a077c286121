// Small helpers of the trace model. See trace_model.h.
#include "gui/model/trace_model.h"

namespace dtensor::gui {
namespace {

int64_t sum(const KindMap& map) {
  int64_t total = 0;
  for (const auto& [kind, value] : map) total += value;
  return total;
}

int64_t count_modules(const ModuleNode& node) {
  int64_t count = 1;
  for (const ModuleNode& child : node.children) count += count_modules(child);
  return count;
}

}  // namespace

int64_t ModuleNode::total_forward() const { return sum(forward_counts); }

int64_t ModuleNode::total_backward() const { return sum(backward_counts); }

int64_t ModuleNode::total_bytes() const { return sum(forward_bytes) + sum(backward_bytes); }

std::string ModuleNode::short_name() const {
  size_t dot = fqn.rfind('.');
  return dot == std::string::npos ? fqn : fqn.substr(dot + 1);
}

int64_t Trace::module_count() const { return count_modules(root); }

}  // namespace dtensor::gui
