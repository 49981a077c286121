// Human-readable numbers for the viewer's labels: byte sizes, shapes, rank
// lists and times. Pure functions, no ImGui.
//   format_bytes(1536);              // "1.5 KiB"
//   format_rank_list({0, 1, 2, 5});  // "0-2, 5"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtensor::gui {

// Bytes with a binary unit and at most one decimal: 512 -> "512 B",
// 1536 -> "1.5 KiB", 3 << 20 -> "3 MiB". Negative values get a leading '-'.
std::string format_bytes(int64_t bytes);

// A shape or coordinate as "[8, 6]"; an empty vector gives "[]".
std::string format_shape(const std::vector<int64_t>& values);

// Ascending ranks with runs of 3 or more shortened: {0, 1, 2, 5} -> "0-2, 5".
// Precondition: `ranks` is sorted ascending.
std::string format_rank_list(const std::vector<int64_t>& ranks);

// Microseconds with a fitting unit: 5.0 -> "5.00 us", 1234.0 -> "1.23 ms",
// 2.5e6 -> "2.50 s".
std::string format_us(double us);

// A count with thousands separators: 1234567 -> "1,234,567".
std::string format_count(int64_t count);

}  // namespace dtensor::gui
