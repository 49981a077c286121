// LossParallelGuard: sets RuleMode::kLossParallel (Note [Rule modes]).
#include "core/parallel/loss_parallel.h"

#include "core/ops/builtin_rules.h"

namespace dtensor {

LossParallelGuard::LossParallelGuard()
    : mode_(RuleMode::kLossParallel, loss_parallel_plain_replicated_ops()) {}

}  // namespace dtensor
