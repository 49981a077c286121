// Implementation of the shared text formatting. See text.h.
#include "layout/text.h"

#include <cmath>
#include <cstdio>

namespace dtensor {

std::string format_us(double us) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.3f", us);
  return buffer;
}

std::string format_duration_us(double us) {
  char buffer[64];
  if (us < 1000.0) {
    std::snprintf(buffer, sizeof(buffer), "%.2f us", us);
  } else if (us < 1e6) {
    std::snprintf(buffer, sizeof(buffer), "%.2f ms", us / 1e3);
  } else {
    std::snprintf(buffer, sizeof(buffer), "%.2f s", us / 1e6);
  }
  return buffer;
}

std::string format_bytes(double bytes, int decimals) {
  if (bytes < 0) return "-" + format_bytes(-bytes, decimals);
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 6) {
    bytes /= 1024.0;
    ++unit;
  }
  char buffer[64];
  if (unit == 0) {
    std::snprintf(buffer, sizeof(buffer), "%.0f B", bytes);
  } else if (decimals >= 0) {
    std::snprintf(buffer, sizeof(buffer), "%.*f %s", decimals, bytes, kUnits[unit]);
  } else {
    // Round first: 1.96 KiB shows as "2 KiB", not "2.0 KiB".
    const double rounded = std::round(bytes * 10.0) / 10.0;
    std::snprintf(buffer, sizeof(buffer), rounded == std::floor(rounded) ? "%.0f %s" : "%.1f %s",
                  rounded, kUnits[unit]);
  }
  return buffer;
}

std::string format_rank_list(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t end = i;
    while (end + 1 < ranks.size() && ranks[end + 1] == ranks[end] + 1) ++end;
    if (!out.empty()) out += ", ";
    if (end - i >= 2) {
      out += std::to_string(ranks[i]) + "-" + std::to_string(ranks[end]);
      i = end + 1;
    } else {
      out += std::to_string(ranks[i]);
      ++i;
    }
  }
  return out;
}

std::string trim_space(std::string_view text) {
  constexpr const char* kSpace = " \t\r\n";
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return "";
  const size_t last = text.find_last_not_of(kSpace);
  return std::string(text.substr(first, last - first + 1));
}

}  // namespace dtensor
