// Registers every built-in rule family.
#include "core/ops/builtin_rules.h"

namespace dtensor {

void register_builtin_rules(ShardingRegistry& registry) {
  register_pointwise_rules(registry);
  register_reduction_rules(registry);
  register_matrix_rules(registry);
  register_view_rules(registry);
  register_tensor_rules(registry);
  register_concat_split_rules(registry);
  register_math_rules(registry);
  register_vector_product_rules(registry);
  register_nn_rules(registry);
  register_loss_rules(registry);
  register_spatial_rules(registry);
  register_norm_rules(registry);
  register_scatter_rules(registry);
  register_index_rules(registry);
  register_optimizer_rules(registry);
  register_linalg_rules(registry);
  register_attention_rules(registry);
  register_fft_rules(registry);
  register_loss_parallel_rules(registry);  // after the math and loss rules it wraps
  register_autograd_overrides();
  register_missing_meta_kernels();
}

}  // namespace dtensor
