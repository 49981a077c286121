// The readable comm tracing table (PyTorch's generate_comm_debug_tracing_table
// layout): one indented block per module with its collectives per phase and,
// at higher noise levels, module data and operations.
//   std::cout << comm_debug_tracing_table(comm.trace(), /*noise_level=*/1, /*color=*/false);
#pragma once

#include <string>

#include "trace/trace_model.h"

namespace dtensor::debug {

/// The table of `trace` at `noise_level` (see trace::NoiseFilter), modules in tree
/// order (Global first, children in first-entry order), indented four spaces
/// per tree level as in PyTorch. Collective lines add the bytes this rank sent:
/// "*all_reduce: 1 (320 B)". With `color`, collective and operation lines
/// carry PyTorch's ANSI colours. A merged trace shows its reference rank and
/// ends with the ranks that differ. Example (noise level 0):
///   Global
///     FORWARD PASS
///       *all_reduce: 1 (320 B)
///       MLPModule
///         FORWARD PASS
///           *all_reduce: 1 (320 B)
std::string comm_debug_tracing_table(const trace::CommTrace& trace, int noise_level, bool color);

/// `text` without ANSI escape sequences (ESC '[' ... final byte).
std::string strip_ansi(const std::string& text);

/// True when standard output is a terminal (colour is then worth printing).
bool stdout_is_terminal();

}  // namespace dtensor::debug
