// SequenceParallel: replicated parameters (from_local, no communication),
// input sharded on the sequence dim, output kept as a DTensor.
#include <c10/util/Exception.h>

#include "core/dtensor_impl.h"
#include "core/parallel/internal/layouts.h"
#include "core/parallel/style.h"

namespace dtensor {

SequenceParallel& SequenceParallel::sequence_dim(int64_t dim) {
  sequence_dim_ = dim;
  return *this;
}
SequenceParallel& SequenceParallel::use_local_output(bool value) {
  use_local_output_ = value;
  return *this;
}

std::string SequenceParallel::to_string() const {
  return "SequenceParallel(sequence_dim=" + std::to_string(sequence_dim_) +
         ", use_local_output=" + (use_local_output_ ? "true" : "false") + ")";
}

void SequenceParallel::apply_impl(torch::nn::Module& module, const DeviceMesh& mesh,
                                  const DistributeModuleOptions& options) const {
  const std::string who = "SequenceParallel on " + module.name();
  const Placement seq = Shard(sequence_dim_);
  // Every submodule's own parameters and buffers, as PyTorch's
  // _replicate_module_fn: wrapped, not broadcast.
  PartitionFn partition = [](const std::string&, torch::nn::Module& m, const DeviceMesh& mesh) {
    for (const auto& item : m.named_parameters(/*recurse=*/false)) {
      if (!is_dtensor(item.value())) replicate_parameter(m, item.key(), mesh);
    }
    for (const auto& item : m.named_buffers(/*recurse=*/false)) {
      if (is_dtensor(item.value())) continue;
      set_buffer(m, item.key(),
                 DTensor::from_local(item.value().detach(), mesh,
                                     Placements(static_cast<size_t>(mesh.ndim()), Replicate())));
    }
  };
  InputFn input_fn = [seq, who](torch::nn::Module&, nn::TensorList inputs, const DeviceMesh& mesh) {
    TORCH_CHECK(!inputs.empty(), who, ": the module was called without a tensor input");
    inputs[0] = detail::input_with_layout(inputs[0], mesh, seq, who + " (input)");
    return inputs;
  };
  OutputFn output_fn = [use_local = use_local_output_, who](torch::nn::Module&, at::Tensor output,
                                                            const DeviceMesh&) {
    if (use_local && is_dtensor(output)) return DTensor(output).to_local();
    return output;
  };
  distribute_module(module, mesh, partition, input_fn, output_fn, options);
}

}  // namespace dtensor
