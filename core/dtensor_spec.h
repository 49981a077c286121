// DTensorSpec: where a DTensor's data lives (mesh + placements) and what the
// global tensor looks like (shape, stride, dtype). A value type, hashable, so
// that sharding decisions can be cached by input specs.
//   DTensorSpec spec{mesh, {Shard(0)}, TensorMeta{{8, 4}, {4, 1}, at::kFloat}};
#pragma once

#include <c10/core/ScalarType.h>

#include <string>
#include <vector>

#include "core/device_mesh.h"
#include "layout/placement.h"

namespace dtensor {

/// Shape, stride and dtype of the global (logical) tensor.
struct TensorMeta {
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
  c10::ScalarType dtype = c10::ScalarType::Float;

  friend bool operator==(const TensorMeta& a, const TensorMeta& b) {
    return a.shape == b.shape && a.stride == b.stride && a.dtype == b.dtype;
  }
  friend bool operator!=(const TensorMeta& a, const TensorMeta& b) { return !(a == b); }
};

/// Contiguous strides of `shape`.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

struct DTensorSpec {
  DeviceMesh mesh;
  Placements placements;
  TensorMeta meta;

  int64_t ndim() const { return static_cast<int64_t>(meta.shape.size()); }
  /// True when any mesh dim holds Partial values.
  bool has_partial() const;
  /// True when every mesh dim is Replicate.
  bool is_replicated() const;
  /// Mesh dims sharding tensor dim `dim` (in nesting order).
  std::vector<int> mesh_dims_sharding(int64_t dim) const;
  /// This rank's local shape and offset into the global tensor.
  std::vector<int64_t> local_shape() const;
  std::vector<int64_t> global_offset() const;
  /// "Spec([S(0), R] on DeviceMesh(cpu, (2, 2)), f32[8, 4])".
  std::string to_string() const;

  /// Same spec with other placements (shape and dtype kept).
  DTensorSpec with_placements(Placements new_placements) const;

  friend bool operator==(const DTensorSpec& a, const DTensorSpec& b) {
    return a.placements == b.placements && a.meta == b.meta && a.mesh == b.mesh;
  }
  friend bool operator!=(const DTensorSpec& a, const DTensorSpec& b) { return !(a == b); }
  size_t hash() const;
};

std::ostream& operator<<(std::ostream& out, const DTensorSpec& spec);

/// `placements` validated for a `tensor_ndim`-D tensor on `mesh`, negative
/// shard dims resolved. Throws c10::Error "<context> on rank R: <why>"
/// otherwise. Example: checked_placements({Shard(-1)}, mesh, 2, "ColwiseParallel") == {Shard(1)}.
Placements checked_placements(const Placements& placements, const DeviceMesh& mesh,
                              int64_t tensor_ndim, const std::string& context);

}  // namespace dtensor
