// Human-readable numbers for the viewer's labels: byte sizes, shapes and
// counts. Pure functions, no ImGui. Times and rank lists are shared with the
// layout printers and reports: layout/text.h.
//   format_bytes(1536);              // "1.5 KiB"
//   format_count(1234567);           // "1,234,567"
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

// A count with thousands separators: 1234567 -> "1,234,567".
std::string format_count(int64_t count);

}  // namespace dtensor::gui
