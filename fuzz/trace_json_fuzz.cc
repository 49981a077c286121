// Fuzz entry for the comm trace JSON readers (debug/ and the viewer's
// gui/model loader). See fuzz_entries.h.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "trace/trace_json.h"
#include "fuzz/fuzz_entries.h"
#include "gui/model/trace_loader.h"

namespace dtensor::fuzz {
namespace {

[[noreturn]] void finding(const std::string& what, const std::string& input) {
  std::fprintf(stderr, "fuzz finding: %s\ninput (%zu bytes): %.400s\n", what.c_str(), input.size(),
               input.c_str());
  std::abort();
}

}  // namespace

int trace_json(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const trace::CommTrace trace = trace::comm_trace_from_json(text);
    const std::string written = trace::comm_trace_to_json(trace);
    const std::string rewritten = trace::comm_trace_to_json(trace::comm_trace_from_json(written));
    if (written != rewritten) finding("write/read/write is not stable", text);
    if (!trace::validate_comm_trace_json(written).empty()) {
      finding("our own output fails validation: " + trace::validate_comm_trace_json(written)[0], text);
    }
  } catch (const trace::TraceJsonError& e) {
    if (std::string(e.what()).empty()) finding("empty error message", text);
  } catch (const std::exception& e) {
    finding(std::string("comm_trace_from_json threw a non-TraceJsonError: ") + e.what(), text);
  }
  try {
    (void)trace::validate_comm_trace_json(text);
  } catch (const std::exception& e) {
    finding(std::string("validate_comm_trace_json threw: ") + e.what(), text);
  }
  try {
    const gui::TraceLoadResult loaded = gui::parse_trace_json(text, "fuzz.json");
    if (loaded.trace.has_value() == !loaded.error.empty()) {
      finding("parse_trace_json must set exactly one of trace and error", text);
    }
  } catch (const std::exception& e) {
    finding(std::string("gui::parse_trace_json threw: ") + e.what(), text);
  }
  return 0;
}

}  // namespace dtensor::fuzz
