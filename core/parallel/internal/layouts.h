// The boundary conversions shared by the parallel styles: a module input
// taken as one layout and brought to another, a module output reduced to a
// layout and optionally made local.
//   x = detail::prepare_input(x, mesh, Shard(1), Replicate(), "ColwiseParallel input of LinearImpl");
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "core/device_mesh.h"
#include "layout/placement.h"

namespace dtensor::detail {

/// `input` prepared by PyTorch's rule for declared layouts (ColwiseParallel,
/// RowwiseParallel, PrepareModuleInput; Note [Declared layouts decide]): a
/// plain tensor is taken as this rank's shard under `input_layout`
/// (from_local, no communication), a DTensor (which must live on `mesh`) as
/// it is; the result is redistributed to `desired` when `input_layout`
/// differs from it. `who` names the style and module in errors.
at::Tensor prepare_input(const at::Tensor& input, const DeviceMesh& mesh, const Placement& input_layout,
                         const Placement& desired, const std::string& who);

/// `input` laid out `layout` (SequenceParallel): a plain tensor is taken as
/// this rank's shard, a DTensor laid out otherwise is redistributed.
at::Tensor input_with_layout(const at::Tensor& input, const DeviceMesh& mesh, const Placement& layout,
                             const std::string& who);

/// `output` by the declared rule (PrepareModuleOutput): a plain tensor is
/// taken as `output_layout`, a DTensor as it is; redistributed to `desired`
/// when `output_layout` differs from it, then made local when
/// `use_local_output`.
at::Tensor prepare_output(const at::Tensor& output, const DeviceMesh& mesh, const Placement& output_layout,
                          const Placement& desired, bool use_local_output, const std::string& who);

/// The DTensor `output` of a sharded module (ColwiseParallel,
/// RowwiseParallel) redistributed to `desired` when its placement differs,
/// then made local when `use_local_output`.
at::Tensor output_with_layout(const at::Tensor& output, const Placement& desired,
                              bool use_local_output, const std::string& who);

/// Throws unless `mesh` is 1-D (the tensor-parallel dim), naming `who`.
void check_tp_mesh(const DeviceMesh& mesh, const std::string& who);

}  // namespace dtensor::detail
