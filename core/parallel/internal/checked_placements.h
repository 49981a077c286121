// Placement validation for core/parallel, turning core/layout's LayoutError
// into the c10::Error that LibTorch users catch.
//   Placements p = detail::checked_placements({Shard(-1)}, mesh, /*tensor_ndim=*/2, "ColwiseParallel");
#pragma once

#include <c10/util/Exception.h>

#include "core/device_mesh.h"
#include "core/layout/layout_error.h"
#include "core/layout/placement.h"

namespace dtensor::detail {

/// `placements` validated for a `tensor_ndim`-D tensor on `mesh`, negative
/// shard dims resolved; throws c10::Error naming `caller` otherwise.
inline Placements checked_placements(const Placements& placements, const DeviceMesh& mesh, int64_t tensor_ndim,
                                     const std::string& caller) {
  try {
    return validate_placements(placements, mesh.mesh_shape(), tensor_ndim);
  } catch (const LayoutError& e) {
    TORCH_CHECK(false, caller, ": ", e.what());
  }
}

}  // namespace dtensor::detail
