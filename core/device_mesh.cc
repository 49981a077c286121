// DeviceMesh construction, slicing and communicator lookup.
#include "core/device_mesh.h"

#include <c10/util/Exception.h>

#include <sstream>

#include "core/torch_errors.h"

namespace dtensor {

struct DeviceMesh::Impl {
  MeshShape shape;
  std::vector<int64_t> mesh_ranks;  // global rank at each row-major position
  std::vector<int64_t> coordinate;  // this rank's position
  c10::Device device{c10::kCPU};
  World* world = nullptr;
  std::vector<std::shared_ptr<Communicator>> communicators;  // one per mesh dim
  // What core/collectives attaches to each collective over a mesh dim: built
  // once here, so tagging costs a shared_ptr copy per collective.
  std::vector<std::shared_ptr<const MeshDimTag>> tags;  // one per mesh dim
  // Note [Mesh hash computed once]: DTensorSpec::hash() (every sharding-cache
  // lookup) hashes the mesh; over all ranks that is O(world size) per op
  // (65,536 ranks in solo mode: most of a traced step). Set when built.
  size_t hash = 0;
};

namespace {
size_t hash_of(const MeshShape& shape, const std::vector<int64_t>& mesh_ranks) {
  size_t h = std::hash<MeshShape>()(shape);
  for (int64_t r : mesh_ranks) h = h * 31 + static_cast<size_t>(r);
  return h;
}

std::vector<std::shared_ptr<const MeshDimTag>> tags_of(const MeshShape& shape, c10::Device device) {
  std::vector<std::shared_ptr<const MeshDimTag>> tags;
  for (int d = 0; d < shape.ndim(); ++d) {
    auto tag = std::make_shared<MeshDimTag>();
    tag->mesh_dim = d;
    tag->mesh_shape = shape.shape();
    tag->mesh_dim_names = shape.dim_names();
    tag->device = device.str();
    tags.push_back(std::move(tag));
  }
  return tags;
}
}  // namespace

namespace {

// Global ranks of the mesh positions whose coordinate differs from
// `coordinate` only along `mesh_dim`, in order.
std::vector<int64_t> ranks_along(const MeshShape& shape, const std::vector<int64_t>& mesh_ranks,
                                 std::vector<int64_t> coordinate, int mesh_dim) {
  std::vector<int64_t> ranks;
  for (int64_t i = 0; i < shape.size(mesh_dim); ++i) {
    coordinate[static_cast<size_t>(mesh_dim)] = i;
    ranks.push_back(mesh_ranks[static_cast<size_t>(shape.rank_of(coordinate))]);
  }
  return ranks;
}

}  // namespace

DeviceMesh DeviceMesh::init(c10::DeviceType device_type, std::vector<int64_t> shape,
                            std::vector<std::string> dim_names) {
  World& world = require_current_world("DeviceMesh::init");
  auto impl = std::make_shared<Impl>();
  impl->shape = rethrow_as_torch_error([&] {
    MeshShape mesh = MeshShape::create(std::move(shape), std::move(dim_names));
    mesh.check_world_size(world.size());
    return mesh;
  }, "DeviceMesh::init");
  TORCH_CHECK(device_type == world.device().type() || device_type == c10::kMeta,
              "DeviceMesh::init on rank ", world.rank(), ": device type ", device_type,
              " does not match the world's device ", world.device(),
              "; use the world's device type (or kMeta for shape-only tracing)");
  impl->device = device_type == c10::kMeta ? c10::Device(c10::kMeta) : world.device();
  impl->world = &world;
  for (int64_t r = 0; r < impl->shape.num_ranks(); ++r) impl->mesh_ranks.push_back(r);
  impl->coordinate = impl->shape.coordinate_of(world.rank());
  for (int d = 0; d < impl->shape.ndim(); ++d) {
    impl->communicators.push_back(
        world.new_group(ranks_along(impl->shape, impl->mesh_ranks, impl->coordinate, d)));
  }
  impl->hash = hash_of(impl->shape, impl->mesh_ranks);
  impl->tags = tags_of(impl->shape, impl->device);
  return DeviceMesh(std::move(impl));
}

const DeviceMesh::Impl& DeviceMesh::impl(const char* caller) const {
  TORCH_CHECK(impl_ != nullptr, caller, ": the DeviceMesh is empty; create it with DeviceMesh::init");
  return *impl_;
}

int DeviceMesh::ndim() const { return impl("DeviceMesh::ndim").shape.ndim(); }
const std::vector<int64_t>& DeviceMesh::shape() const { return impl("DeviceMesh::shape").shape.shape(); }
int64_t DeviceMesh::size() const { return impl("DeviceMesh::size").shape.num_ranks(); }
const MeshShape& DeviceMesh::mesh_shape() const { return impl("DeviceMesh::mesh_shape").shape; }
const std::vector<int64_t>& DeviceMesh::mesh_ranks() const { return impl("DeviceMesh::mesh_ranks").mesh_ranks; }
c10::Device DeviceMesh::device() const { return impl("DeviceMesh::device").device; }
World& DeviceMesh::world() const { return *impl("DeviceMesh::world").world; }
int64_t DeviceMesh::global_rank() const { return world().rank(); }

const std::vector<std::string>& DeviceMesh::dim_names() const {
  return impl("DeviceMesh::dim_names").shape.dim_names();
}

const std::vector<int64_t>& DeviceMesh::get_coordinate() const {
  return impl("DeviceMesh::get_coordinate").coordinate;
}

int64_t DeviceMesh::size(int mesh_dim) const {
  const Impl& m = impl("DeviceMesh::size");
  return rethrow_as_torch_error([&] { return m.shape.size(mesh_dim); }, "DeviceMesh::size");
}

int64_t DeviceMesh::get_local_rank(int mesh_dim) const {
  const Impl& m = impl("DeviceMesh::get_local_rank");
  int dim = rethrow_as_torch_error([&] { return m.shape.normalize_dim(mesh_dim); }, "DeviceMesh::get_local_rank");
  return m.coordinate[static_cast<size_t>(dim)];
}

int64_t DeviceMesh::get_local_rank(const std::string& dim_name) const {
  const Impl& m = impl("DeviceMesh::get_local_rank");
  int dim = rethrow_as_torch_error([&] { return m.shape.dim_index(dim_name); }, "DeviceMesh::get_local_rank");
  return m.coordinate[static_cast<size_t>(dim)];
}

Communicator& DeviceMesh::communicator(int mesh_dim) const {
  const Impl& m = impl("DeviceMesh::communicator");
  int dim = rethrow_as_torch_error([&] { return m.shape.normalize_dim(mesh_dim); }, "DeviceMesh::communicator");
  return *m.communicators[static_cast<size_t>(dim)];
}

std::shared_ptr<const MeshDimTag> DeviceMesh::collective_tag(int mesh_dim) const {
  const Impl& m = impl("DeviceMesh::collective_tag");
  int dim = rethrow_as_torch_error([&] { return m.shape.normalize_dim(mesh_dim); }, "DeviceMesh::collective_tag");
  return m.tags[static_cast<size_t>(dim)];
}

DeviceMesh DeviceMesh::operator[](const std::string& dim_name) const {
  return (*this)[std::vector<std::string>{dim_name}];
}

DeviceMesh DeviceMesh::operator[](const std::vector<std::string>& dim_names) const {
  const Impl& parent = impl("DeviceMesh::operator[]");
  auto sub = std::make_shared<Impl>();
  std::vector<int> dims;
  rethrow_as_torch_error([&] {
    sub->shape = parent.shape.slice(dim_names);
    for (const auto& name : dim_names) dims.push_back(parent.shape.dim_index(name));
    return 0;
  }, "DeviceMesh::operator[]");
  sub->device = parent.device;
  sub->world = parent.world;
  for (int d : dims) {
    sub->coordinate.push_back(parent.coordinate[static_cast<size_t>(d)]);
    sub->communicators.push_back(parent.communicators[static_cast<size_t>(d)]);
  }
  // Global rank of each sub-mesh position: the parent coordinate of this rank
  // with the sliced dims replaced.
  for (int64_t pos = 0; pos < sub->shape.num_ranks(); ++pos) {
    std::vector<int64_t> coord = parent.coordinate;
    std::vector<int64_t> sub_coord = sub->shape.coordinate_of(pos);
    for (size_t i = 0; i < dims.size(); ++i) coord[static_cast<size_t>(dims[i])] = sub_coord[i];
    sub->mesh_ranks.push_back(parent.mesh_ranks[static_cast<size_t>(parent.shape.rank_of(coord))]);
  }
  sub->hash = hash_of(sub->shape, sub->mesh_ranks);
  sub->tags = tags_of(sub->shape, sub->device);
  return DeviceMesh(std::move(sub));
}

std::string DeviceMesh::to_string() const {
  if (!impl_) return "DeviceMesh(empty)";
  std::ostringstream out;
  out << "DeviceMesh(" << impl_->device << ", " << impl_->shape.to_string() << ")";
  return out.str();
}

bool operator==(const DeviceMesh& a, const DeviceMesh& b) {
  if (a.impl_ == b.impl_) return true;
  if (!a.impl_ || !b.impl_) return false;
  return a.impl_->world == b.impl_->world && a.impl_->shape == b.impl_->shape &&
         a.impl_->mesh_ranks == b.impl_->mesh_ranks && a.impl_->device == b.impl_->device;
}

size_t DeviceMesh::hash() const { return impl_ ? impl_->hash : 0; }

std::ostream& operator<<(std::ostream& out, const DeviceMesh& mesh) { return out << mesh.to_string(); }

}  // namespace dtensor
