// DeviceMesh: an N-D grid of the world's ranks with one Communicator per mesh
// dimension (the ranks along that dimension that include this rank).
//   auto mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
//   mesh.get_local_rank("tp");   mesh["tp"].size();   mesh.get_coordinate();
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/world.h"
#include "core/layout/mesh_shape.h"

namespace dtensor {

/// A device mesh over the current thread's world. Cheap to copy (shared).
class DeviceMesh {
 public:
  /// Lays the current world's ranks out row-major in `shape`. Preconditions:
  /// a current world (run_fake_world, solo_world, init_world_from_env), the
  /// product of `shape` equals the world size, `device_type` is the world's
  /// device type (or kMeta, for shape-only tracing). Example:
  /// `DeviceMesh::init(c10::kCPU, {2, 4}, {"dp", "tp"})`.
  static DeviceMesh init(c10::DeviceType device_type, std::vector<int64_t> shape,
                         std::vector<std::string> dim_names = {});

  DeviceMesh() = default;  // an empty mesh; only assignable

  int ndim() const;
  const std::vector<int64_t>& shape() const;
  int64_t size(int mesh_dim) const;
  /// Number of ranks in the mesh.
  int64_t size() const;
  const MeshShape& mesh_shape() const;
  const std::vector<std::string>& dim_names() const;
  /// This rank's coordinate in the mesh.
  const std::vector<int64_t>& get_coordinate() const;
  /// This rank's index along `mesh_dim` (or the named dim).
  int64_t get_local_rank(int mesh_dim) const;
  int64_t get_local_rank(const std::string& dim_name) const;
  /// Global rank of every mesh position, row-major.
  const std::vector<int64_t>& mesh_ranks() const;
  /// This rank's global rank.
  int64_t global_rank() const;
  /// The device of this rank's local tensors.
  c10::Device device() const;
  c10::DeviceType device_type() const { return device().type(); }
  World& world() const;

  /// The group of ranks along `mesh_dim` that contains this rank; created once
  /// per mesh and shared by its copies and sub-meshes.
  Communicator& communicator(int mesh_dim) const;
  /// The mesh dim's identity that core/collectives attaches to its collectives
  /// (CollectiveEvent::mesh); each mesh and sub-mesh has its own.
  std::shared_ptr<const MeshDimTag> collective_tag(int mesh_dim) const;

  /// Sub-mesh of one or several named dims (in the order given), through this
  /// rank: `mesh["tp"]`, `mesh[{"dp", "tp"}]`.
  DeviceMesh operator[](const std::string& dim_name) const;
  DeviceMesh operator[](const std::vector<std::string>& dim_names) const;

  /// "DeviceMesh(cpu, (dp=2, tp=2))".
  std::string to_string() const;
  bool defined() const { return impl_ != nullptr; }

  friend bool operator==(const DeviceMesh& a, const DeviceMesh& b);
  friend bool operator!=(const DeviceMesh& a, const DeviceMesh& b) { return !(a == b); }
  size_t hash() const;

 private:
  struct Impl;
  explicit DeviceMesh(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const Impl& impl(const char* caller) const;
  std::shared_ptr<const Impl> impl_;
};

std::ostream& operator<<(std::ostream& out, const DeviceMesh& mesh);

}  // namespace dtensor
