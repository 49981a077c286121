// Logging of sharding decisions, PyTorch's `TORCH_LOGS=+dtensor` for C++:
// each op's input and output placements and the strategy chosen, and every
// redistribution with its collectives, one line each, prefixed by the rank.
//   DTENSOR_LOG=info ./my_program            # or, in code:
//   dtensor::set_log_level(dtensor::LogLevel::kInfo);
// Off by default; see Note [Logging costs nothing when off].
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace dtensor {

/// kInfo: one line per DTensor op (placements in, the plan, placements out)
/// and one per redistribution (placements, shape, each step's collective).
/// kDebug adds the sharding-cache hit or miss and, per mesh dim, the
/// strategy chosen and the cheapest one rejected with their costs.
enum class LogLevel : int { kOff = 0, kInfo = 1, kDebug = 2 };

/// "off" (or ""), "info", "debug" -> the level. Throws std::invalid_argument
/// naming the accepted values for anything else.
/// Example: parse_log_level("debug") == LogLevel::kDebug
LogLevel parse_log_level(std::string_view text);

/// Sets the level for every thread (and every fake-world rank). The initial
/// level comes from the environment variable DTENSOR_LOG, read once when the
/// library loads; an unknown value prints one warning and leaves logging off.
/// Example: dtensor::set_log_level(dtensor::LogLevel::kDebug);
void set_log_level(LogLevel level);

/// Where lines go: called once per line (without the newline), never
/// concurrently. An empty function restores the default, standard error.
/// Example: set_log_sink([&](std::string_view line) { lines.emplace_back(line); });
using LogSink = std::function<void(std::string_view line)>;
void set_log_sink(LogSink sink);

namespace detail {
extern std::atomic<int> g_log_level;
/// Prefixes "[dtensor rank R] " and hands the line to the sink.
void emit_log_line(int64_t rank, const std::string& line);
}  // namespace detail

// Note [Logging costs nothing when off]
// Call sites test log_enabled() before they format anything: one relaxed
// atomic load and a branch per op while logging is off, and nothing is
// built or allocated (BENCHMARKS.md section 12 measures it).
/// True when lines of `level` are printed. Example: if (log_enabled(LogLevel::kInfo)) ...
inline bool log_enabled(LogLevel level) {
  return detail::g_log_level.load(std::memory_order_relaxed) >= static_cast<int>(level);
}

/// The current level.
inline LogLevel log_level() {
  return static_cast<LogLevel>(detail::g_log_level.load(std::memory_order_relaxed));
}

}  // namespace dtensor
