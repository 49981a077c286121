// MeshShape validation, rank <-> coordinate arithmetic and sub-mesh slicing.
// See mesh_shape.h for the API.
#include "layout/mesh_shape.h"

#include <algorithm>
#include <set>

#include "layout/layout_error.h"

namespace dtensor {
namespace {

// Names for messages: "[dp, tp]" or "(none: the mesh is unnamed)".
std::string names_to_string(const std::vector<std::string>& names) {
  if (names.empty()) return "(none: the mesh is unnamed)";
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  return out + "]";
}

void check_dim_names(const std::vector<int64_t>& shape, const std::vector<std::string>& names) {
  if (names.empty()) return;
  DTENSOR_LAYOUT_CHECK(names.size() == shape.size(), "MeshShape::create: got ", names.size(),
                       " dim names ", names_to_string(names), " for the ", shape.size(),
                       "-D mesh shape ", detail::shape_to_string(shape),
                       "; give one name per mesh dim or none at all");
  std::set<std::string> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    DTENSOR_LAYOUT_CHECK(!names[i].empty(), "MeshShape::create: mesh dim ", i,
                         " has an empty name in ", names_to_string(names),
                         "; every name must be non-empty");
    DTENSOR_LAYOUT_CHECK(names[i] != "None", "MeshShape::create: mesh dim ", i,
                         " is named 'None' in ", names_to_string(names),
                         "; 'None' means \"not sharded\" in placement aliases, pick another name");
    DTENSOR_LAYOUT_CHECK(seen.insert(names[i]).second, "MeshShape::create: dim name '", names[i],
                         "' appears twice in ", names_to_string(names),
                         "; mesh dim names must be unique");
  }
}

}  // namespace

MeshShape::MeshShape() : shape_{1}, num_ranks_(1) {}

MeshShape::MeshShape(std::vector<int64_t> shape, std::vector<std::string> dim_names,
                     int64_t num_ranks)
    : shape_(std::move(shape)), dim_names_(std::move(dim_names)), num_ranks_(num_ranks) {}

MeshShape MeshShape::create(std::vector<int64_t> shape, std::vector<std::string> dim_names) {
  DTENSOR_LAYOUT_CHECK(!shape.empty(),
                       "MeshShape::create: the mesh shape is empty; a device mesh needs at "
                       "least one dim, e.g. {world_size}");
  int64_t num_ranks = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    DTENSOR_LAYOUT_CHECK(shape[i] >= 1, "MeshShape::create: mesh dim ", i, " has size ", shape[i],
                         " in shape ", detail::shape_to_string(shape),
                         "; every mesh dim needs at least one rank");
    DTENSOR_LAYOUT_CHECK(!__builtin_mul_overflow(num_ranks, shape[i], &num_ranks),
                         "MeshShape::create: the number of ranks of mesh shape ",
                         detail::shape_to_string(shape), " overflows int64");
  }
  check_dim_names(shape, dim_names);
  return MeshShape(std::move(shape), std::move(dim_names), num_ranks);
}

int MeshShape::normalize_dim(int dim, const char* caller) const {
  const int n = ndim();
  DTENSOR_LAYOUT_CHECK(dim >= -n && dim < n, caller, ": mesh dim ", dim, " is out of range for ",
                       to_string(), "; use a dim in [", -n, ", ", n - 1, "]");
  return dim < 0 ? dim + n : dim;
}

int64_t MeshShape::size(int dim) const {
  return shape_[static_cast<size_t>(normalize_dim(dim, "MeshShape::size"))];
}

int MeshShape::dim_index(std::string_view name) const {
  for (size_t i = 0; i < dim_names_.size(); ++i) {
    if (dim_names_[i] == name) return static_cast<int>(i);
  }
  throw LayoutError(detail::str_cat("MeshShape::dim_index: no mesh dim is named '", name, "' in ",
                                    to_string(), "; known names: ", names_to_string(dim_names_)));
}

void MeshShape::check_rank(int64_t rank, const char* caller) const {
  DTENSOR_LAYOUT_CHECK(rank >= 0 && rank < num_ranks_, caller, ": rank ", rank,
                       " is out of range for ", to_string(), " which has ", num_ranks_,
                       " ranks; use a rank in [0, ", num_ranks_ - 1, "]");
}

std::vector<int64_t> MeshShape::coordinate_of(int64_t rank) const {
  check_rank(rank, "MeshShape::coordinate_of");
  std::vector<int64_t> coordinate(shape_.size());
  for (size_t i = shape_.size(); i-- > 0;) {
    coordinate[i] = rank % shape_[i];
    rank /= shape_[i];
  }
  return coordinate;
}

int64_t MeshShape::rank_of(const std::vector<int64_t>& coordinate) const {
  DTENSOR_LAYOUT_CHECK(coordinate.size() == shape_.size(), "MeshShape::rank_of: coordinate ",
                       detail::shape_to_string(coordinate), " has ", coordinate.size(),
                       " entries but ", to_string(), " has ", shape_.size(),
                       " dims; give one entry per mesh dim");
  int64_t rank = 0;
  for (size_t i = 0; i < shape_.size(); ++i) {
    DTENSOR_LAYOUT_CHECK(coordinate[i] >= 0 && coordinate[i] < shape_[i],
                         "MeshShape::rank_of: coordinate ", detail::shape_to_string(coordinate),
                         " is outside ", to_string(), " at mesh dim ", i, "; entry ", i,
                         " must be in [0, ", shape_[i] - 1, "]");
    rank = rank * shape_[i] + coordinate[i];
  }
  return rank;
}

std::vector<int64_t> MeshShape::group_ranks(int64_t rank, int mesh_dim) const {
  check_rank(rank, "MeshShape::group_ranks");
  const auto dim = static_cast<size_t>(normalize_dim(mesh_dim, "MeshShape::group_ranks"));
  std::vector<int64_t> coordinate = coordinate_of(rank);
  std::vector<int64_t> group;
  group.reserve(static_cast<size_t>(shape_[dim]));
  for (int64_t i = 0; i < shape_[dim]; ++i) {
    coordinate[dim] = i;
    group.push_back(rank_of(coordinate));
  }
  return group;
}

std::vector<std::vector<int64_t>> MeshShape::all_groups(int mesh_dim) const {
  const int dim = normalize_dim(mesh_dim, "MeshShape::all_groups");
  const auto index = static_cast<size_t>(dim);
  std::vector<std::vector<int64_t>> groups;
  groups.reserve(static_cast<size_t>(num_ranks_ / shape_[index]));
  // A rank leads its group (is the lowest rank in it) iff its coordinate along
  // `dim` is 0; visiting ranks in increasing order sorts groups by lowest rank.
  for (int64_t rank = 0; rank < num_ranks_; ++rank) {
    if (coordinate_of(rank)[index] == 0) groups.push_back(group_ranks(rank, dim));
  }
  return groups;
}

void MeshShape::check_world_size(int64_t world_size) const {
  DTENSOR_LAYOUT_CHECK(num_ranks_ == world_size, "MeshShape::check_world_size: ", to_string(),
                       " has ", num_ranks_, " ranks but the world has ", world_size,
                       " ranks; choose a mesh shape whose sizes multiply to ", world_size);
}

MeshShape MeshShape::slice(const std::vector<std::string>& names) const {
  DTENSOR_LAYOUT_CHECK(has_dim_names(), "MeshShape::slice: ", to_string(),
                       " has no dim names; create the mesh with dim_names to slice it by name");
  DTENSOR_LAYOUT_CHECK(!names.empty(), "MeshShape::slice: no dim names given for ", to_string(),
                       "; name at least one of ", names_to_string(dim_names_));
  std::vector<int64_t> shape;
  std::set<std::string> seen;
  for (const std::string& name : names) {
    DTENSOR_LAYOUT_CHECK(seen.insert(name).second, "MeshShape::slice: dim name '", name,
                         "' is requested twice in ", names_to_string(names), " on ", to_string(),
                         "; name each mesh dim at most once");
    shape.push_back(shape_[static_cast<size_t>(dim_index(name))]);
  }
  return create(std::move(shape), names);
}

std::string MeshShape::to_string() const {
  std::string out = "Mesh(";
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (i > 0) out += ", ";
    if (has_dim_names()) out += dim_names_[i] + "=";
    out += std::to_string(shape_[i]);
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& out, const MeshShape& mesh) {
  return out << mesh.to_string();
}

}  // namespace dtensor

size_t std::hash<dtensor::MeshShape>::operator()(const dtensor::MeshShape& mesh) const {
  size_t seed = 0x9e3779b97f4a7c15ull;
  auto mix = [&seed](size_t value) {
    seed ^= value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
  };
  for (int64_t size : mesh.shape()) mix(std::hash<int64_t>{}(size));
  for (const std::string& name : mesh.dim_names()) mix(std::hash<std::string>{}(name));
  return seed;
}
