// Implementation of the viewer's number formatting. See format.h.
#include "gui/model/format.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace dtensor::gui {

std::string format_bytes(int64_t bytes) {
  if (bytes < 0) {
    // -INT64_MIN overflows; one byte off does not show at that size.
    return "-" + format_bytes(bytes == INT64_MIN ? INT64_MAX : -bytes);
  }
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[32];
  if (unit == 0) {
    std::snprintf(buffer, sizeof(buffer), "%lld B", static_cast<long long>(bytes));
  } else {
    double rounded = std::round(value * 10.0) / 10.0;
    if (rounded == std::floor(rounded)) {
      std::snprintf(buffer, sizeof(buffer), "%.0f %s", rounded, kUnits[unit]);
    } else {
      std::snprintf(buffer, sizeof(buffer), "%.1f %s", rounded, kUnits[unit]);
    }
  }
  return buffer;
}

std::string format_shape(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

std::string format_count(int64_t count) {
  std::string digits = std::to_string(count);
  if (count < 0) digits.erase(0, 1);
  std::string out;
  int group = 0;
  for (size_t i = digits.size(); i > 0; --i) {
    if (group == 3) {
      out.insert(out.begin(), ',');
      group = 0;
    }
    out.insert(out.begin(), digits[i - 1]);
    ++group;
  }
  return count < 0 ? "-" + out : out;
}

}  // namespace dtensor::gui
