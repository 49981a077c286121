// libFuzzer's entry point for one fuzz target; fuzz/build.sh compiles this
// file with -DDTENSOR_FUZZ_ENTRY=placement_parser (or trace_json).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return dtensor::fuzz::DTENSOR_FUZZ_ENTRY(data, size);
}
