// Human-readable numbers for the viewer's labels: shapes and counts. Pure
// functions, no ImGui. Times, byte sizes and rank lists are shared with the
// layout printers, reports and the planner: layout/text.h.
//   format_shape({8, 6});            // "[8, 6]"
//   format_count(1234567);           // "1,234,567"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtensor::gui {

// A shape or coordinate as "[8, 6]"; an empty vector gives "[]".
std::string format_shape(const std::vector<int64_t>& values);

// A count with thousands separators: 1234567 -> "1,234,567".
std::string format_count(int64_t count);

}  // namespace dtensor::gui
