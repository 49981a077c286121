// The planner's Llama-style decoder, written with DTensor ops on parameters
// created directly on the mesh (dtensor::empty), so it is built at any size
// on meta tensors: token embedding (vocab-parallel, S(0) over tp), per layer
// norm -> attention (wq/wk/wv column-, wo row-parallel; grouped-query heads
// repeated to the query heads; causal fused (flash) attention) -> residual, norm -> SwiGLU FFN (w1/w3
// column-, w2 row-parallel) -> residual; final norm, output projection
// (column-parallel, logits gathered), cross entropy. Megatron-style tensor
// parallelism over "tp", with sequence parallelism the residual stream is
// S(1) (sequence) and the norms run on sequence shards; data parallelism over
// "dp" averages gradients (one all_reduce bucket, core/parallel/data_parallel.h).
//   StepMeasure m = trace_solo_step(llama_step_program(), parse_model("llama-70b"), plan);
#pragma once

#include "planner/step_trace.h"

namespace dtensor::planner {

/// The step program of ModelKind::kLlama (see step_trace.h's StepProgram).
/// Norms are RMSNorm written with pointwise ops (as Llama's reference code);
/// attention is the fused causal kernel (_scaled_dot_product_flash_attention). Runs on meta tensors (only ops with meta
/// kernels in LibTorch's C++ build; see Note [Embedding on meta tensors]).
StepProgram llama_step_program();

}  // namespace dtensor::planner
