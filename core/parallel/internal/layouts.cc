// Boundary conversions of the parallel styles.
#include "core/parallel/internal/layouts.h"

#include <c10/util/Exception.h>

#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/redistribution_origin.h"

namespace dtensor::detail {
namespace {

DTensor as_dtensor(const at::Tensor& t, const DeviceMesh& mesh, const Placement& layout,
                   const std::string& who) {
  TORCH_CHECK(t.defined(), who, ": the tensor is undefined");
  if (!is_dtensor(t)) return DTensor::from_local(t, mesh, checked_placements({layout}, mesh, t.dim(), who));
  DTensor d(t);
  TORCH_CHECK(d.device_mesh() == mesh, who, ": the DTensor ", d.spec().to_string(), " lives on ",
              d.device_mesh().to_string(), ", not on the style's mesh ", mesh.to_string(),
              "; redistribute it or use the same mesh");
  return d;
}

DTensor redistribute_if_needed(const DTensor& d, const Placement& desired, const std::string& who) {
  Placements target = checked_placements({desired}, d.device_mesh(), d.dim(), who);
  if (d.placements() == target) return d;
  return d.redistribute(target);
}

// Note [Declared layouts decide]
// PyTorch's ColwiseParallel, RowwiseParallel, PrepareModuleInput and
// PrepareModuleOutput redistribute when the DECLARED layout differs from the
// desired one, not when the tensor's actual placement does: a DTensor input
// is used as it is laid out (PyTorch does not check it against
// input_layouts), and a declared conversion whose input already has the
// desired placement still goes through redistribute, a no-op forward whose
// backward lays the gradient out like the input (a Partial gradient of a
// Replicate input is all_reduced there). The differential test
// (tests/diff, structured programs) pins both effects against PyTorch 2.11.
DTensor redistribute_declared(const DTensor& d, const Placement& declared, const Placement& desired,
                              const std::string& who) {
  if (declared == desired) return d;
  return d.redistribute(checked_placements({desired}, d.device_mesh(), d.dim(), who));
}

}  // namespace

at::Tensor prepare_input(const at::Tensor& input, const DeviceMesh& mesh, const Placement& input_layout,
                         const Placement& desired, const std::string& who) {
  ExplicitOriginScope origin(origin_cause::kParallelStyle, who);  // See Note [Collective origins]
  return redistribute_declared(as_dtensor(input, mesh, input_layout, who), input_layout, desired, who);
}

at::Tensor input_with_layout(const at::Tensor& input, const DeviceMesh& mesh, const Placement& layout,
                             const std::string& who) {
  ExplicitOriginScope origin(origin_cause::kParallelStyle, who);
  return redistribute_if_needed(as_dtensor(input, mesh, layout, who), layout, who);
}

at::Tensor prepare_output(const at::Tensor& output, const DeviceMesh& mesh, const Placement& output_layout,
                          const Placement& desired, bool use_local_output, const std::string& who) {
  ExplicitOriginScope origin(origin_cause::kParallelStyle, who);
  DTensor d = redistribute_declared(as_dtensor(output, mesh, output_layout, who), output_layout, desired, who);
  return use_local_output ? d.to_local() : at::Tensor(d);
}

at::Tensor output_with_layout(const at::Tensor& output, const Placement& desired,
                              bool use_local_output, const std::string& who) {
  ExplicitOriginScope origin(origin_cause::kParallelStyle, who);
  TORCH_CHECK(is_dtensor(output), who, ": the output is a plain tensor; was forward bypassed?");
  DTensor d = redistribute_if_needed(DTensor(output), desired, who);
  return use_local_output ? d.to_local() : at::Tensor(d);
}

void check_tp_mesh(const DeviceMesh& mesh, const std::string& who) {
  TORCH_CHECK(mesh.defined(), who, ": the mesh is empty; create it with DeviceMesh::init");
  TORCH_CHECK(mesh.ndim() == 1, who, ": tensor parallel styles take a 1-D mesh, got ", mesh.to_string(),
              "; pass the tensor-parallel sub-mesh (mesh[\"tp\"]) and parallelize the other dims separately");
}

}  // namespace dtensor::detail
