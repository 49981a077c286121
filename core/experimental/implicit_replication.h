// implicit_replication: inside it, plain tensors mixed with DTensors are
// treated as Replicate (as torch.distributed.tensor.experimental.
// implicit_replication). Outside it only 0-dim plain tensors are.
//   { dtensor::experimental::implicit_replication guard; auto y = dt + torch::ones({4}); }
#pragma once

#include "core/dispatch/dispatch_mode.h"

namespace dtensor::experimental {

/// RAII guard, per thread (per rank in a fake world); nests. Also wrap a
/// backward() in it when LibTorch 1.13's autograd formulas build plain
/// tensors, e.g. split / chunk / unbind with outputs that get no gradient.
using implicit_replication = ImplicitReplicationGuard;

}  // namespace dtensor::experimental
