// The capacity planner's step program for the example Transformer
// (examples/models/transformer.h, PyTorch's DTensor test model): tensor
// parallelism by parallelize_transformer over "tp" (with or without sequence
// parallelism), data parallelism by average_gradients over "dp", the plan's
// optimizer. Needs real kernels (the vocab-parallel embedding has no meta
// kernel in LibTorch's C++ build): trace it on CPU (solo or fake world).
//   PlanEstimate e = planner::estimate_plan(transformer_step_program(), planner::parse_model("transformer"),
//                                           plan, topo, {2, c10::kCPU});
#pragma once

#include "planner/step_trace.h"

namespace dtensor::examples {

/// The step program of planner::ModelKind::kExampleTransformer: ModelArgs
/// from the model (layers, dim, heads, vocab, max_seq_len = seq, dropout 0,
/// seed 3), parameters in the model's dtype, micro-batches of
/// plan.micro_batch sequences of training_batch's tokens (the same on every
/// rank), cross-entropy loss.
planner::StepProgram transformer_step_program();

}  // namespace dtensor::examples
