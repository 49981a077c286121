// MeshShape: the shape of an N-D device mesh (with optional dim names) and the
// row-major mapping between global ranks and mesh coordinates. No devices here.
//   auto mesh = MeshShape::create({2, 4}, {"dp", "tp"});
//   mesh.coordinate_of(5);        // {1, 1}
//   mesh.group_ranks(5, /*mesh_dim=*/1);   // {4, 5, 6, 7}: the tp group of rank 5
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace dtensor {

// An N-D arrangement of `num_ranks()` ranks. Rank r sits at the coordinate
// whose row-major linear index is r (the last mesh dim varies fastest), as in
// torch.arange(world_size).reshape(shape) for PyTorch's init_device_mesh.
// Immutable value type; build it with MeshShape::create.
class MeshShape {
 public:
  // A 1-D mesh of one rank, Mesh(1), so that containers and structs can hold
  // a MeshShape before they are assigned a real one.
  MeshShape();

  // Validates and builds a mesh. `dim_names` is empty (unnamed mesh) or holds
  // one distinct, non-empty name per mesh dim ("None" is reserved: placement
  // aliases use it for "not sharded"). Throws LayoutError for an empty shape,
  // a size < 1, a name count != shape.size(), or an empty/duplicate name.
  // Example: MeshShape::create({2, 2}, {"dp", "tp"}).
  static MeshShape create(std::vector<int64_t> shape, std::vector<std::string> dim_names = {});

  // Number of mesh dims (>= 1).
  int ndim() const { return static_cast<int>(shape_.size()); }
  // Size of every mesh dim, e.g. {2, 4}.
  const std::vector<int64_t>& shape() const { return shape_; }
  // Size of mesh dim `dim`; negative dims count from the end (-1 is the last).
  // Throws LayoutError if dim is outside [-ndim, ndim).
  int64_t size(int dim) const;
  // Total number of ranks: the product of shape().
  int64_t num_ranks() const { return num_ranks_; }
  // The dim names given to create(); empty for an unnamed mesh.
  const std::vector<std::string>& dim_names() const { return dim_names_; }
  // True when create() was given names.
  bool has_dim_names() const { return !dim_names_.empty(); }
  // Index of the mesh dim called `name`. Throws LayoutError listing the known
  // names when there is no such dim (or the mesh has no names).
  // Example: Mesh(dp=2, tp=4).dim_index("tp") == 1.
  int dim_index(std::string_view name) const;
  // Maps a possibly negative mesh dim to [0, ndim); throws LayoutError when
  // out of range. `caller` names the public function in the message.
  int normalize_dim(int dim, const char* caller = "MeshShape::normalize_dim") const;

  // Coordinate of `rank` (one entry per mesh dim). Throws if rank is not in
  // [0, num_ranks). Example: Mesh(2, 4).coordinate_of(6) == {1, 2}.
  std::vector<int64_t> coordinate_of(int64_t rank) const;
  // Inverse of coordinate_of. Throws if the coordinate has the wrong length or
  // an entry outside its mesh dim. Example: Mesh(2, 4).rank_of({1, 2}) == 6.
  int64_t rank_of(const std::vector<int64_t>& coordinate) const;
  // The ranks that differ from `rank` only along `mesh_dim`, in increasing
  // coordinate order: the process group of that mesh dim containing `rank`.
  // Example: Mesh(2, 4).group_ranks(6, 0) == {2, 6}.
  std::vector<int64_t> group_ranks(int64_t rank, int mesh_dim) const;
  // Every group along `mesh_dim`, ordered by their lowest rank; together they
  // partition all ranks. Example: Mesh(2, 2).all_groups(0) == {{0, 2}, {1, 3}}.
  std::vector<std::vector<int64_t>> all_groups(int mesh_dim) const;
  // Throws LayoutError unless num_ranks() == world_size (a mesh must cover the
  // whole world it is built on).
  void check_world_size(int64_t world_size) const;

  // The sub-mesh made of the named dims, in the order requested, keeping their
  // names: Mesh(dp=2, cp=3, tp=4).slice({"tp", "dp"}) == Mesh(tp=4, dp=2).
  // This is the shape of PyTorch's mesh["tp"] / mesh["dp", "tp"]. Throws for an
  // unnamed mesh, an empty list, an unknown name or a repeated name.
  MeshShape slice(const std::vector<std::string>& names) const;

  // Stable text form: "Mesh(dp=2, tp=2)" when named, "Mesh(2, 2)" otherwise.
  std::string to_string() const;

  // Equal when shapes and dim names are equal.
  friend bool operator==(const MeshShape& a, const MeshShape& b) {
    return a.shape_ == b.shape_ && a.dim_names_ == b.dim_names_;
  }
  friend bool operator!=(const MeshShape& a, const MeshShape& b) { return !(a == b); }

 private:
  MeshShape(std::vector<int64_t> shape, std::vector<std::string> dim_names, int64_t num_ranks);
  void check_rank(int64_t rank, const char* caller) const;

  std::vector<int64_t> shape_;
  std::vector<std::string> dim_names_;
  int64_t num_ranks_;
};

// Streams mesh.to_string() (gtest prints values through this).
std::ostream& operator<<(std::ostream& out, const MeshShape& mesh);

}  // namespace dtensor

namespace std {
// Hash consistent with MeshShape's operator== (shape and names).
template <>
struct hash<dtensor::MeshShape> {
  size_t operator()(const dtensor::MeshShape& mesh) const;
};
}  // namespace std
