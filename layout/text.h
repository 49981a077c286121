// Text formatting shared by the layout printers, the comm reports and the
// viewer: times, rank lists. Pure C++17, no LibTorch.
//   format_us(5.0096);                  // "5.010"
//   format_duration_us(1234.0);         // "1.23 ms"
//   format_rank_list({0, 1, 2, 5});     // "0-2, 5"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtensor {

/// Microseconds as a plain number with three decimals, for tables and plans
/// that name the unit themselves: 5.0096 -> "5.010", 0.0 -> "0.000".
std::string format_us(double us);

/// Microseconds with a fitting unit and two decimals, for labels:
/// 5.0 -> "5.00 us", 1234.0 -> "1.23 ms", 2.5e6 -> "2.50 s".
std::string format_duration_us(double us);

/// Ascending ranks with runs of 3 or more shortened: {0, 1, 2, 5} -> "0-2, 5",
/// {0, 1} -> "0, 1", {} -> "". Precondition: `ranks` is sorted ascending.
std::string format_rank_list(const std::vector<int64_t>& ranks);

}  // namespace dtensor
