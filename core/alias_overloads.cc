// The alias form (one entry per tensor dim naming the mesh dims that shard
// it) at the public entry points: each overload converts to placements and
// calls the placements form, so there is one implementation of each.
#include <c10/util/Exception.h>

#include "core/dtensor.h"
#include "layout/placement_alias.h"
#include "core/torch_errors.h"

namespace dtensor {
namespace {

Placements placements_of(const AliasSpec& alias, const DeviceMesh& mesh, int64_t tensor_ndim,
                         const char* caller) {
  TORCH_CHECK(static_cast<int64_t>(alias.size()) == tensor_ndim, caller, " on rank ",
              mesh.global_rank(), ": the alias ", to_string(alias), " has ", alias.size(),
              " entries but the tensor has ", tensor_ndim,
              " dims; give one entry per tensor dim ({} or {\"None\"} for a dim not sharded)");
  return rethrow_as_torch_error([&] { return placements_from_alias(alias, mesh.mesh_shape()); },
                                caller);
}

}  // namespace

DTensor distribute_tensor(const at::Tensor& tensor, const DeviceMesh& mesh, const AliasSpec& alias,
                          const DistributeOptions& options) {
  TORCH_CHECK(tensor.defined(), "distribute_tensor: the tensor is undefined");
  return distribute_tensor(tensor, mesh, placements_of(alias, mesh, tensor.dim(), "distribute_tensor"),
                           options);
}

DTensor DTensor::from_local(const at::Tensor& local, const DeviceMesh& mesh, const AliasSpec& alias,
                            const FromLocalOptions& options) {
  TORCH_CHECK(local.defined(), "DTensor::from_local: the local tensor is undefined");
  return from_local(local, mesh, placements_of(alias, mesh, local.dim(), "DTensor::from_local"),
                    options);
}

DTensor DTensor::redistribute(const AliasSpec& alias, const RedistributeOptions& options) const {
  return redistribute(placements_of(alias, device_mesh(), dim(), "DTensor::redistribute"), options);
}

AliasSpec DTensor::alias() const {
  return rethrow_as_torch_error(
      [&] { return alias_from_placements(placements(), device_mesh().mesh_shape(), dim()); },
      "DTensor::alias");
}

}  // namespace dtensor
