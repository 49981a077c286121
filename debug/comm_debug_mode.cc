// CommDebugMode counting.
#include "debug/comm_debug_mode.h"

namespace dtensor::debug {

CommDebugMode::Guard::Guard(CommDebugMode* mode)
    : registration_(require_current_world("CommDebugMode::enter").observers().add(mode)) {}

CommDebugMode::Guard CommDebugMode::enter() {
  events_.clear();
  return Guard(this);
}

void CommDebugMode::on_collective(const CollectiveEvent& event) { events_.push_back(event); }

std::map<std::string, int64_t> CommDebugMode::get_comm_counts() const {
  std::map<std::string, int64_t> counts;
  for (const auto& e : events_) ++counts[collective_name(e.kind)];
  return counts;
}

int64_t CommDebugMode::get_total_counts() const { return static_cast<int64_t>(events_.size()); }

}  // namespace dtensor::debug
