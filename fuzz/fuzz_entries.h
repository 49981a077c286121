// Fuzz entry points (issue 10): each takes arbitrary bytes, feeds them to a
// parser, checks the parser's promises and aborts (a fuzzer finding) when one
// is broken. libFuzzer drives them through fuzz/libfuzzer_main.cc (clang,
// fuzz/build.sh); fuzz_corpus_test runs them over the checked-in corpus with
// the normal compiler so CI exercises them.
//   dtensor::fuzz::placement_parser(data, size);   // returns 0
#pragma once

#include <cstddef>
#include <cstdint>

namespace dtensor::fuzz {

/// Placement text and the planner: "<mesh byte><shape byte>FROM|TO". parse_placements
/// must succeed or throw LayoutError; a parsed list must print and parse back
/// to itself; when both lists fit the mesh derived from the first bytes,
/// plan_redistribute must return a valid chain of steps or throw LayoutError.
int placement_parser(const uint8_t* data, size_t size);

/// Comm trace JSON: trace::comm_trace_from_json must return or throw
/// trace::TraceJsonError (nothing else); a trace it returns must write and read back to
/// the same JSON; validate_comm_trace_json must not throw; the viewer's
/// gui::parse_trace_json must not throw and must set exactly one of trace/error.
int trace_json(const uint8_t* data, size_t size);

}  // namespace dtensor::fuzz
