// DeviceMesh: an N-D grid of the world's ranks with one Communicator per mesh
// dimension (the ranks along that dimension that include this rank).
//   auto mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
//   mesh.get_local_rank("tp");   mesh["tp"].size();   mesh.get_coordinate();
//   auto stage = DeviceMesh::from_ranks(c10::kCPU, {2}, {4, 6});       // ranks 4 and 6 only
//   auto dp_tp = mesh[{"dp", "tp"}].flatten();                         // 1-D "dp_tp" over 4 ranks
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/world.h"
#include "layout/mesh_shape.h"

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

  /// A mesh over an explicit array of global ranks, as PyTorch's
  /// `DeviceMesh(device_type, mesh_tensor)`: `ranks` lists the global rank at
  /// each position of `shape`, row-major, so a subset of the world, in any
  /// order (pipeline stages, HSDP layouts). Every rank may call it, in the
  /// mesh or not; only members get a coordinate and communicators (see
  /// is_member()). Preconditions as init, and `ranks` holds product(shape)
  /// distinct ranks of the world. Example: `from_ranks(c10::kCPU, {2, 2}, {3, 1, 2, 0})`.
  static DeviceMesh from_ranks(c10::DeviceType device_type, std::vector<int64_t> shape,
                               std::vector<int64_t> ranks, std::vector<std::string> dim_names = {});
  /// The same from an integer tensor of global ranks (its shape is the mesh's).
  static DeviceMesh from_tensor(c10::DeviceType device_type, const at::Tensor& ranks,
                                std::vector<std::string> dim_names = {});

  DeviceMesh() = default;  // an empty mesh; only assignable

  int ndim() const;
  const std::vector<int64_t>& shape() const;
  int64_t size(int mesh_dim) const;
  /// Number of ranks in the mesh.
  int64_t size() const;
  const MeshShape& mesh_shape() const;
  const std::vector<std::string>& dim_names() const;
  /// True when this rank is in the mesh (always for init and slices).
  bool is_member() const;
  /// This rank's coordinate in the mesh. Throws for a rank not in the mesh
  /// (check is_member(); PyTorch returns None there).
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
  /// `mesh[{"dp", "tp"}]`: without this overload the braces could also build
  /// a std::string from two `const char*` iterators, and the call would be ambiguous.
  DeviceMesh operator[](std::initializer_list<std::string> dim_names) const {
    return (*this)[std::vector<std::string>(dim_names)];
  }

  /// Slices of one mesh joined into one mesh with their dims in the order
  /// given, as PyTorch's `DeviceMesh._concatenate`: FSDP over tensor
  /// parallelism puts parameters on (dp, tp) from mesh["dp"] and mesh["tp"].
  /// Throws when the meshes were not sliced from the same mesh, or repeat a dim.
  /// Example: `DeviceMesh::concatenate({mesh["dp"], mesh["tp"]}) == mesh`.
  static DeviceMesh concatenate(const std::vector<DeviceMesh>& meshes);
  /// The mesh as one dim over the same ranks in row-major order, as PyTorch's
  /// `mesh["dp", "cp"]._flatten()`: collectives over it span every rank of
  /// this mesh (e.g. the data-parallel gradient reduction over dp x cp). The
  /// dim is called `name`, by default the dim names joined by "_" ("dp_cp"),
  /// unnamed for an unnamed mesh. Only members may call it.
  /// Registers the result with the root mesh (Note [Flattened meshes] in
  /// device_mesh.cc): the same dims and name again return that mesh.
  DeviceMesh flatten(std::string name = "") const;
  /// The mesh flatten() made of exactly `mesh_dims` of this mesh (dims of
  /// this mesh, in the order they were flattened, which for PyTorch's lookup
  /// is ascending), through any slice of the same root; nullopt when none was
  /// made. Example: after `mesh[{"dp", "tp"}].flatten()`,
  /// `mesh.flattened_over({0, 1})` is that mesh.
  std::optional<DeviceMesh> flattened_over(const std::vector<int>& mesh_dims) const;
  /// True when flatten() was called on this mesh's root or a slice of it.
  bool has_flattened_meshes() const;

  /// "DeviceMesh(cpu, (dp=2, tp=2))".
  std::string to_string() const;
  bool defined() const { return impl_ != nullptr; }

  /// True when both handles share one mesh object (== compares by value).
  bool same_object(const DeviceMesh& other) const { return impl_ == other.impl_; }
  friend bool operator==(const DeviceMesh& a, const DeviceMesh& b);
  friend bool operator!=(const DeviceMesh& a, const DeviceMesh& b) { return !(a == b); }
  size_t hash() const;

 private:
  struct Impl;
  explicit DeviceMesh(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  static DeviceMesh build(MeshShape shape, std::vector<int64_t> mesh_ranks,
                          c10::DeviceType device_type, World& world);
  /// The sub-mesh of `parent`'s `dims` (in that order) through this rank.
  static DeviceMesh slice(const std::shared_ptr<const Impl>& parent, const std::vector<int>& dims);
  const Impl& impl(const char* caller) const;
  /// This rank's coordinate; throws naming `caller` when it is not a member.
  const std::vector<int64_t>& member_impl_coordinate(const char* caller) const;
  std::shared_ptr<const Impl> impl_;
};

std::ostream& operator<<(std::ostream& out, const DeviceMesh& mesh);

}  // namespace dtensor
