// local_map: placement checks, to_local / from_local around a local function.
#include "core/experimental/local_map.h"

#include <c10/util/Exception.h>

#include "core/dtensor.h"
#include "core/dtensor_impl.h"

namespace dtensor::experimental {
namespace {

struct LocalMapSpec {
  LocalFn fn;
  PlacementsList out_placements;
  std::optional<PlacementsList> in_placements;
  std::optional<PlacementsList> in_grad_placements;
  std::optional<DeviceMesh> mesh;
  bool redistribute_inputs = false;
};

const std::optional<Placements>& entry(const std::optional<PlacementsList>& list, size_t i) {
  static const std::optional<Placements> kNone;
  return list && i < list->size() ? (*list)[i] : kNone;
}

at::Tensor to_local_input(const LocalMapSpec& s, const DeviceMesh& mesh, const at::Tensor& x, size_t i) {
  DTensor d(x);
  TORCH_CHECK(d.device_mesh() == mesh, "local_map: input ", i, " lives on ", d.device_mesh().to_string(),
              ", not on ", mesh.to_string());
  const std::optional<Placements>& want = entry(s.in_placements, i);
  if (want && *want != d.placements()) {
    TORCH_CHECK(s.redistribute_inputs, "local_map: input ", i, " has placements ", to_string(d.placements()),
                " but in_placements expects ", to_string(*want), " (rank ", mesh.global_rank(),
                "); redistribute it first or pass redistribute_inputs=true");
    d = d.redistribute(*want);
  }
  std::optional<Placements> grad = entry(s.in_grad_placements, i);
  if (!grad) grad = want;
  return d.to_local(grad);
}

Tensors call_local_map(const LocalMapSpec& s, const Tensors& inputs) {
  if (s.in_placements) {
    TORCH_CHECK(s.in_placements->size() == inputs.size(), "local_map: in_placements has ",
                s.in_placements->size(), " entries for ", inputs.size(), " inputs");
  }
  std::optional<DeviceMesh> mesh = s.mesh;
  bool any_dtensor = false;
  for (const at::Tensor& x : inputs) {
    if (x.defined() && is_dtensor(x)) {
      any_dtensor = true;
      if (!mesh) mesh = DTensor(x).device_mesh();
    }
  }
  if (!any_dtensor) return s.fn(inputs);
  Tensors locals;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& x = inputs[i];
    if (x.defined() && is_dtensor(x)) {
      locals.push_back(to_local_input(s, *mesh, x, i));
    } else {
      TORCH_CHECK(!entry(s.in_placements, i) || !x.defined(), "local_map: input ", i,
                  " is a plain tensor but in_placements expects a DTensor with ",
                  to_string(*entry(s.in_placements, i)), "; distribute it first or set its entry to nullopt");
      locals.push_back(x);
    }
  }
  Tensors outputs = s.fn(locals);
  TORCH_CHECK(outputs.size() == s.out_placements.size(), "local_map: the function returned ", outputs.size(),
              " tensors but out_placements has ", s.out_placements.size(), " entries");
  for (size_t j = 0; j < outputs.size(); ++j) {
    const std::optional<Placements>& p = s.out_placements[j];
    if (!p || !outputs[j].defined()) continue;
    TORCH_CHECK(!is_dtensor(outputs[j]), "local_map: output ", j, " is already a DTensor; the function "
                "must return local tensors");
    outputs[j] = DTensor::from_local(outputs[j], *mesh, *p);
  }
  return outputs;
}

}  // namespace

std::function<Tensors(const Tensors&)> local_map(LocalFn fn, PlacementsList out_placements,
                                                 std::optional<PlacementsList> in_placements,
                                                 std::optional<PlacementsList> in_grad_placements,
                                                 std::optional<DeviceMesh> mesh, bool redistribute_inputs) {
  TORCH_CHECK(fn != nullptr, "local_map: the function is empty");
  auto spec = std::make_shared<LocalMapSpec>(LocalMapSpec{std::move(fn), std::move(out_placements),
                                                          std::move(in_placements), std::move(in_grad_placements),
                                                          std::move(mesh), redistribute_inputs});
  return [spec](const Tensors& inputs) { return call_local_map(*spec, inputs); };
}

}  // namespace dtensor::experimental
