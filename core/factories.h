// DTensor factories (PyTorch's torch.distributed.tensor.zeros/ones/empty/full/
// rand/randn/linspace/logspace): each rank materialises only its own block of
// the global tensor.
//   auto w = dtensor::zeros({16, 8}, mesh, {Shard(0)}, at::TensorOptions().requires_grad(true));
//   auto x = dtensor::full({4, 4}, 2.5, mesh, {Replicate()}, at::kDouble);
//   dtensor::manual_seed(7);
//   auto r = dtensor::randn({5, 3}, mesh, {Shard(0)});  // == torch::randn({5, 3})
//                                                       // after torch::manual_seed(7)
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/TensorOptions.h>

#include <cstdint>
#include <vector>

#include "core/device_mesh.h"
#include "core/dtensor.h"
#include "layout/placement.h"
#include "core/random.h"

namespace dtensor {

// Note [DTensor factory arguments]
// Every factory takes (size, [fill_value,] mesh, placements, options):
// - size: the *global* shape; each rank allocates only its local block
//   (torch.chunk sizes, see Note [Chunk semantics]), never the global tensor.
// - placements: one per mesh dim; Shard(d) with d in [-ndim, ndim) or
//   Replicate(). Partial is refused (as PyTorch's factories offer only Shard and
//   Replicate): a partial "ones" would silently sum to mesh.size(); build
//   Replicate and redistribute, or use DTensor::from_local with your partial
//   values. zeros alone accepts Partial of any reduce op, since every reduction
//   of zeros is zero (handy for gradient accumulators).
// - options: dtype (default: LibTorch's default dtype, or for full the dtype
//   inferred from fill_value as at::full does), requires_grad (the result is
//   then a leaf that requires grad; needs a floating or complex dtype). The
//   device is the mesh's: an explicit device must have the mesh's device type
//   (and its index, if given). Layout must be strided, memory format contiguous.
// Errors are c10::Error naming the factory, size, placements, mesh and rank.
// Preconditions: a current world (run_fake_world, ...) in which `mesh` lives;
// every rank calls the factory with the same arguments (SPMD).

/// A DTensor of zeros. Example: zeros({5, 3}, mesh4, {Shard(0)}) holds [2, 3]
/// zeros on ranks 0-1, [1, 3] on rank 2 and [0, 3] on rank 3.
DTensor zeros(const std::vector<int64_t>& size, const DeviceMesh& mesh, Placements placements,
              const at::TensorOptions& options = {});

/// A DTensor of ones. Example: ones({4}, mesh, {Replicate()}, at::kLong).
DTensor ones(const std::vector<int64_t>& size, const DeviceMesh& mesh, Placements placements,
             const at::TensorOptions& options = {});

/// A DTensor with uninitialised values (only the local blocks are allocated).
/// Example: empty({1024, 1024}, mesh, {Shard(1)}).
DTensor empty(const std::vector<int64_t>& size, const DeviceMesh& mesh, Placements placements,
              const at::TensorOptions& options = {});

/// A DTensor filled with `fill_value`; without an explicit dtype it follows
/// at::full (bool -> kBool, integer -> kLong, complex -> default complex
/// dtype, else the default dtype). Example: full({2, 6}, 3, mesh, {Shard(1)}) is int64.
DTensor full(const std::vector<int64_t>& size, const at::Scalar& fill_value, const DeviceMesh& mesh,
             Placements placements, const at::TensorOptions& options = {});

/// Uniform values in [0, 1), drawn as Note [DTensor random modes] says (by
/// default: full_tensor() equals torch::rand(size, dtype) after
/// torch::manual_seed(s) when dtensor::manual_seed(s) was called on every rank
/// and the same random calls were made). Needs a floating dtype (or complex in
/// kSingleDeviceExact). Example: rand({4}, mesh, {Replicate()}).
DTensor rand(const std::vector<int64_t>& size, const DeviceMesh& mesh, Placements placements,
             const at::TensorOptions& options = {}, const RandomOptions& random = {});

/// Standard normal values, drawn like rand. Example:
/// randn({5, 3}, mesh, {Shard(0)}, {}, RandomOptions{RandomMode::kOffsetBased, std::nullopt}).
DTensor randn(const std::vector<int64_t>& size, const DeviceMesh& mesh, Placements placements,
              const at::TensorOptions& options = {}, const RandomOptions& random = {});

/// `steps` values evenly spaced from `start` to `end` (PyTorch 2.15's
/// torch.distributed.tensor.linspace): a 1-D DTensor whose rank holding
/// elements [o, o + k) computes linspace(start + o * step, ..., k) with
/// step = (end - start) / (steps - 1), as PyTorch's does, so values equal
/// PyTorch's bit for bit (and at::linspace's to rounding). Example:
/// linspace(0, 1, 5, mesh2, {Shard(0)}): rank 0 holds [0, 0.25, 0.5], rank 1 [0.75, 1].
DTensor linspace(double start, double end, int64_t steps, const DeviceMesh& mesh, Placements placements,
                 const at::TensorOptions& options = {});

/// base ** linspace(start, end, steps), laid out like linspace (PyTorch 2.15's
/// torch.distributed.tensor.logspace). Example: logspace(0, 3, 4, 10.0, mesh, {Shard(0)}).
DTensor logspace(double start, double end, int64_t steps, double base, const DeviceMesh& mesh,
                 Placements placements, const at::TensorOptions& options = {});

}  // namespace dtensor
