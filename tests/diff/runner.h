// Runs differential-test programs on dtensor's fake world and writes the same
// record per program as tests/diff/pytorch_runner.py does with PyTorch.
//   nlohmann::json record = run_program(programs[0]);   // {"id", "steps": [...]}
#pragma once

#include <nlohmann/json.hpp>

#include "tests/diff/program.h"

namespace dtensor::diff {

/// Runs `program` on a fake world of program.world_size ranks and returns
/// rank 0's record: per step "raised" (+ "error"), "comms" (collective name ->
/// count, this step only), "bytes" (collective name -> input bytes rank 0
/// contributed) and "outputs" (placements, shape, float64 values of every
/// tensor the step returns; for backward, the gradients of the tensors
/// listed in "grads"; a local tensor's values are rank 0's). A step that
/// raises ends the program, as in the Python runner. Malformed steps
/// (unknown op, bad argument) raise like any error. A failure that is a bug
/// on our side whatever PyTorch does (Note [Internal failures] in runner.cc)
/// marks the step where it happened ("internal": true and "internal_error")
/// or, before any step, the record ("internal_error").
nlohmann::json run_program(const Program& program);

/// The single-device reference of `program`: the same steps on plain global
/// tensors (a Partial input is the reduction of its rank variants;
/// redistribute, full_tensor, to_local and from_local return their input;
/// modules are not parallelized). Same record layout, with "placements":
/// null and empty "comms"; outputs computed between to_local and from_local
/// are null (Note [Local tensors in the reference]). Returns null for inputs
/// with mixed Partial reduce ops (no single global value).
nlohmann::json run_reference(const Program& program);

}  // namespace dtensor::diff
