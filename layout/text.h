// Text formatting shared by the layout printers, the comm reports and the
// viewer: times, byte sizes, rank lists, whitespace. Pure C++, no LibTorch.
//   format_us(5.0096);                  // "5.010"
//   format_bytes(1536);                 // "1.5 KiB"
//   format_bytes(1536, 2);              // "1.50 KiB"
//   format_duration_us(1234.0);         // "1.23 ms"
//   format_rank_list({0, 1, 2, 5});     // "0-2, 5"
//   trim_space("  S(0) ");              // "S(0)"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtensor {

/// Microseconds as a plain number with three decimals, for tables and plans
/// that name the unit themselves: 5.0096 -> "5.010", 0.0 -> "0.000".
std::string format_us(double us);

/// Microseconds with a fitting unit and two decimals, for labels:
/// 5.0 -> "5.00 us", 1234.0 -> "1.23 ms", 2.5e6 -> "2.50 s".
std::string format_duration_us(double us);

/// Bytes with a binary unit (B, KiB, ..., EiB); negative values get a '-'.
/// For labels (`decimals` < 0): at most one decimal, none when it is ".0":
/// 512 -> "512 B", 1536 -> "1.5 KiB", 3 << 20 -> "3 MiB". For tables
/// (`decimals` >= 0): exactly that many above bytes, so columns align:
/// (1536, 2) -> "1.50 KiB", (512, 2) -> "512 B".
std::string format_bytes(double bytes, int decimals = -1);

/// Ascending ranks with runs of 3 or more shortened: {0, 1, 2, 5} -> "0-2, 5",
/// {0, 1} -> "0, 1", {} -> "". Precondition: `ranks` is sorted ascending.
std::string format_rank_list(const std::vector<int64_t>& ranks);

/// `text` without the ASCII whitespace (space, tab, CR, LF) at both ends.
std::string trim_space(std::string_view text);

}  // namespace dtensor
