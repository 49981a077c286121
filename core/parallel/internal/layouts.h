// The boundary conversions shared by the parallel styles: a module input
// taken as one layout and brought to another, a module output reduced to a
// layout and optionally made local.
//   x = detail::prepare_input(x, mesh, Shard(1), Replicate(), "ColwiseParallel input of LinearImpl");
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "core/device_mesh.h"
#include "core/layout/placement.h"

namespace dtensor::detail {

/// `input` as a DTensor on the 1-D `mesh` laid out `desired`: a plain tensor
/// is first taken as this rank's shard under `input_layout` (from_local, no
/// communication); a DTensor (which must live on `mesh`) is redistributed
/// when its placement differs. `who` names the style and module in errors.
at::Tensor prepare_input(const at::Tensor& input, const DeviceMesh& mesh, const Placement& input_layout,
                         const Placement& desired, const std::string& who);

/// `output` (a DTensor on `mesh`, or a plain tensor taken as `output_layout`)
/// redistributed to `desired`, then made local when `use_local_output`.
at::Tensor prepare_output(const at::Tensor& output, const DeviceMesh& mesh, const Placement& output_layout,
                          const Placement& desired, bool use_local_output, const std::string& who);

/// Throws unless `mesh` is 1-D (the tensor-parallel dim), naming `who`.
void check_tp_mesh(const DeviceMesh& mesh, const std::string& who);

}  // namespace dtensor::detail
