// visualize_sharding on DTensors, printed by one rank.
#include "debug/visualize_sharding.h"

#include <c10/util/Exception.h>

#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/torch_errors.h"
#include "layout/visualize_sharding.h"

namespace dtensor::debug {

std::string sharding_table(const at::Tensor& dtensor, std::string_view header) {
  TORCH_CHECK(
      dtensor.defined() && is_dtensor(dtensor),
      "visualize_sharding: expected a DTensor (distribute_tensor / DTensor::from_local), got a plain tensor");
  const DTensor d(dtensor);
  return rethrow_as_torch_error(
      [&] {
        return dtensor::visualize_sharding(d.spec().meta.shape, d.device_mesh().mesh_shape(),
                                           d.placements(), header);
      },
      "visualize_sharding on rank ", d.device_mesh().global_rank());
}

bool visualize_sharding(const at::Tensor& dtensor, std::string_view header, std::ostream& out,
                        std::optional<int64_t> print_rank) {
  TORCH_CHECK(
      dtensor.defined() && is_dtensor(dtensor),
      "visualize_sharding: expected a DTensor (distribute_tensor / DTensor::from_local), got a plain tensor");
  const DeviceMesh& mesh = DTensor(dtensor).device_mesh();
  const int64_t printer = print_rank.value_or(mesh.mesh_ranks().front());
  if (mesh.global_rank() != printer) return false;
  out << sharding_table(dtensor, header) << std::flush;
  return true;
}

}  // namespace dtensor::debug
