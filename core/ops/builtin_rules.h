// The built-in sharding rules, one family per file, registered explicitly.
//   register_builtin_rules(ShardingRegistry::global());   // done by dtensor::init()
#pragma once

#include <string>
#include <vector>

#include "core/dispatch/sharding_registry.h"

namespace dtensor {

void register_builtin_rules(ShardingRegistry& registry);

// One per rule family (core/ops/<family>_rules.cc).
void register_pointwise_rules(ShardingRegistry& registry);
void register_reduction_rules(ShardingRegistry& registry);
void register_matrix_rules(ShardingRegistry& registry);
void register_view_rules(ShardingRegistry& registry);
void register_tensor_rules(ShardingRegistry& registry);
void register_concat_split_rules(ShardingRegistry& registry);
void register_math_rules(ShardingRegistry& registry);
void register_vector_product_rules(ShardingRegistry& registry);
void register_nn_rules(ShardingRegistry& registry);
void register_loss_rules(ShardingRegistry& registry);
void register_spatial_rules(ShardingRegistry& registry);
void register_norm_rules(ShardingRegistry& registry);
void register_scatter_rules(ShardingRegistry& registry);
void register_index_rules(ShardingRegistry& registry);
void register_optimizer_rules(ShardingRegistry& registry);
void register_linalg_rules(ShardingRegistry& registry);
void register_attention_rules(ShardingRegistry& registry);
void register_fft_rules(ShardingRegistry& registry);
/// Loss parallelism (core/ops/loss_parallel_rules.cc): wraps the rules of
/// _log_softmax, nll_loss and their backwards registered before it.
void register_loss_parallel_rules(ShardingRegistry& registry);

/// Operators whose plain tensor arguments (targets, class weights) are taken
/// as Replicate inside dtensor::loss_parallel().
const std::vector<std::string>& loss_parallel_plain_replicated_ops();

/// Meta kernels of ruled ops where LibTorch's C++ has none (core/ops/meta_kernels.cc:
/// the fused attention kernels, the fused RMSNorm backward). Registered once
/// per process, whatever registry register_builtin_rules fills.
void register_missing_meta_kernels();

/// Autograd kernels for DTensors where LibTorch 1.13's formulas build plain
/// tensors (core/ops/autograd_overrides.cc). Registered once per process,
/// whatever registry register_builtin_rules fills.
void register_autograd_overrides();

}  // namespace dtensor
