// local_map: runs a function written for local tensors on DTensors (as
// torch.distributed.tensor.experimental.local_map): DTensor inputs are
// checked against (or redistributed to) the expected placements, passed as
// local shards, and the local results are wrapped back as DTensors with the
// declared placements. Differentiable (to_local / from_local).
//   auto f = local_map([](const Tensors& x) { return Tensors{x[0].relu() * 2}; },
//                      /*out_placements=*/{Placements{Shard(0)}},
//                      /*in_placements=*/{{Placements{Shard(0)}}});
//   at::Tensor y = f({dt})[0];   // a DTensor, S(0)
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <vector>

#include "core/device_mesh.h"
#include "core/dtensor_spec.h"

namespace dtensor::experimental {

using Tensors = std::vector<at::Tensor>;
using LocalFn = std::function<Tensors(const Tensors&)>;
/// One entry per input or output: placements on every mesh dim, or nullopt
/// for a non-tensor / plain-tensor slot.
using PlacementsList = std::vector<std::optional<Placements>>;

/// Wraps `fn` (plain tensors in, plain tensors out). When called:
///  - with no DTensor input, `fn` runs as is;
///  - otherwise input i, a DTensor, must have in_placements[i] (when given):
///    a mismatch throws, naming the input and both placements, unless
///    `redistribute_inputs`, which redistributes it; it is then passed as its
///    local shard, whose gradient is laid out as in_grad_placements[i]
///    (default: in_placements[i]). A plain tensor input whose in_placements
///    entry is set throws; nullopt entries pass plain tensors through;
///  - output j becomes DTensor::from_local(out, mesh, out_placements[j])
///    (nullopt: returned as is). `fn` must return out_placements.size()
///    tensors, laid out consistently on every rank (no check is made).
/// `mesh` defaults to the mesh of the DTensor inputs (all on one mesh).
std::function<Tensors(const Tensors&)> local_map(LocalFn fn, PlacementsList out_placements,
                                                 std::optional<PlacementsList> in_placements = std::nullopt,
                                                 std::optional<PlacementsList> in_grad_placements = std::nullopt,
                                                 std::optional<DeviceMesh> mesh = std::nullopt,
                                                 bool redistribute_inputs = false);

}  // namespace dtensor::experimental
