// The log level (from DTENSOR_LOG at load time) and the one sink every rank
// thread writes its lines to.
#include "core/log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace dtensor {
namespace {

int level_from_environment() {
  const char* value = std::getenv("DTENSOR_LOG");
  if (value == nullptr) return static_cast<int>(LogLevel::kOff);
  try {
    return static_cast<int>(parse_log_level(value));
  } catch (const std::invalid_argument& e) {
    // Too early to throw (static initialisation): say so once and stay off.
    std::fprintf(stderr, "dtensor: %s; logging stays off\n", e.what());
    return static_cast<int>(LogLevel::kOff);
  }
}

struct Sink {
  std::mutex mutex;
  LogSink sink;
};

Sink& sink() {
  static Sink* s = new Sink();  // never destroyed: rank threads may log while the process exits
  return *s;
}

}  // namespace

namespace detail {
std::atomic<int> g_log_level{level_from_environment()};

void emit_log_line(int64_t rank, const std::string& line) {
  std::string text = "[dtensor rank " + std::to_string(rank) + "] " + line;
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);  // whole lines, never interleaved across ranks
  if (s.sink) {
    s.sink(text);
  } else {
    text += '\n';
    std::fwrite(text.data(), 1, text.size(), stderr);
  }
}
}  // namespace detail

LogLevel parse_log_level(std::string_view text) {
  if (text.empty() || text == "off") return LogLevel::kOff;
  if (text == "info") return LogLevel::kInfo;
  if (text == "debug") return LogLevel::kDebug;
  throw std::invalid_argument("DTENSOR_LOG=" + std::string(text) +
                              " is not a log level: use off, info or debug");
}

void set_log_level(LogLevel level) {
  detail::g_log_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

void set_log_sink(LogSink new_sink) {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.sink = std::move(new_sink);
}

}  // namespace dtensor
