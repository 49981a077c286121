// Implementation of the viewer's number formatting. See format.h.
#include "gui/model/format.h"

#include <cstdint>
#include <cstdio>

namespace dtensor::gui {

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
