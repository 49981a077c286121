// DeviceMesh construction, slicing and communicator lookup.
#include "core/device_mesh.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <sstream>

#include "core/torch_errors.h"

namespace dtensor {

struct DeviceMesh::Impl {
  MeshShape shape;
  std::vector<int64_t> mesh_ranks;  // global rank at each row-major position
  std::vector<int64_t> coordinate;  // this rank's position; empty when not a member
  bool member = false;              // this rank is in mesh_ranks
  c10::Device device{c10::kCPU};
  World* world = nullptr;
  std::vector<std::shared_ptr<Communicator>> communicators;  // one per mesh dim
  // What core/collectives attaches to each collective over a mesh dim: built
  // once here, so tagging costs a shared_ptr copy per collective.
  std::vector<std::shared_ptr<const MeshDimTag>> tags;  // one per mesh dim
  // Where a sub-mesh came from, so that concatenate() can rejoin slices of
  // one mesh: the mesh it was sliced from first (null for a mesh built by
  // init / from_ranks / flatten) and which of that mesh's dims each dim is.
  std::shared_ptr<const Impl> root;
  std::vector<int> root_dims;
  // The meshes flatten() made of this (root) mesh's dims, by the root dims
  // they flatten in their order (Note [Flattened meshes]). Guarded by
  // flattened_mutex; has_flattened lets redistributions skip the lookup.
  struct Flattened {
    std::vector<int> root_dims;
    std::string name;
    std::shared_ptr<const Impl> mesh;
  };
  mutable std::mutex flattened_mutex;
  mutable std::vector<Flattened> flattened;
  mutable std::atomic<bool> has_flattened{false};
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

namespace {

void check_device_type(const char* caller, c10::DeviceType device_type, const World& world) {
  TORCH_CHECK(device_type == world.device().type() || device_type == c10::kMeta, caller,
              " on rank ", world.rank(), ": device type ", device_type,
              " does not match the world's device ", world.device(),
              "; use the world's device type (or kMeta for shape-only tracing)");
}

}  // namespace

// Every constructor ends here: `mesh_ranks` are validated global ranks.
DeviceMesh DeviceMesh::build(MeshShape shape, std::vector<int64_t> mesh_ranks,
                             c10::DeviceType device_type, World& world) {
  auto impl = std::make_shared<Impl>();
  impl->shape = std::move(shape);
  impl->mesh_ranks = std::move(mesh_ranks);
  impl->device = device_type == c10::kMeta ? c10::Device(c10::kMeta) : world.device();
  impl->world = &world;
  auto position = std::find(impl->mesh_ranks.begin(), impl->mesh_ranks.end(), world.rank());
  if (position != impl->mesh_ranks.end()) {
    impl->member = true;
    impl->coordinate = impl->shape.coordinate_of(position - impl->mesh_ranks.begin());
    for (int d = 0; d < impl->shape.ndim(); ++d) {
      impl->communicators.push_back(
          world.new_group(ranks_along(impl->shape, impl->mesh_ranks, impl->coordinate, d)));
    }
  }
  impl->hash = hash_of(impl->shape, impl->mesh_ranks);
  impl->tags = tags_of(impl->shape, impl->device);
  return DeviceMesh(std::move(impl));
}

DeviceMesh DeviceMesh::init(c10::DeviceType device_type, std::vector<int64_t> shape,
                            std::vector<std::string> dim_names) {
  World& world = require_current_world("DeviceMesh::init");
  MeshShape mesh = rethrow_as_torch_error([&] {
    MeshShape m = MeshShape::create(std::move(shape), std::move(dim_names));
    m.check_world_size(world.size());
    return m;
  }, "DeviceMesh::init");
  check_device_type("DeviceMesh::init", device_type, world);
  std::vector<int64_t> ranks(static_cast<size_t>(mesh.num_ranks()));
  for (size_t r = 0; r < ranks.size(); ++r) ranks[r] = static_cast<int64_t>(r);
  return build(std::move(mesh), std::move(ranks), device_type, world);
}

DeviceMesh DeviceMesh::from_ranks(c10::DeviceType device_type, std::vector<int64_t> shape,
                                  std::vector<int64_t> ranks, std::vector<std::string> dim_names) {
  World& world = require_current_world("DeviceMesh::from_ranks");
  MeshShape mesh = rethrow_as_torch_error(
      [&] { return MeshShape::create(std::move(shape), std::move(dim_names)); },
      "DeviceMesh::from_ranks");
  check_device_type("DeviceMesh::from_ranks", device_type, world);
  TORCH_CHECK(static_cast<int64_t>(ranks.size()) == mesh.num_ranks(),
              "DeviceMesh::from_ranks on rank ", world.rank(), ": a mesh of shape ",
              c10::IntArrayRef(mesh.shape()), " needs ", mesh.num_ranks(), " ranks, got ",
              ranks.size(), " (", c10::IntArrayRef(ranks), ")");
  std::vector<int64_t> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    TORCH_CHECK(sorted[i] >= 0 && sorted[i] < world.size(), "DeviceMesh::from_ranks on rank ",
                world.rank(), ": rank ", sorted[i], " in ", c10::IntArrayRef(ranks),
                " is outside the world of ", world.size(), " ranks");
    TORCH_CHECK(i == 0 || sorted[i] != sorted[i - 1], "DeviceMesh::from_ranks on rank ",
                world.rank(), ": rank ", sorted[i], " appears twice in ",
                c10::IntArrayRef(ranks), "; every mesh position needs its own rank");
  }
  return build(std::move(mesh), std::move(ranks), device_type, world);
}

DeviceMesh DeviceMesh::from_tensor(c10::DeviceType device_type, const at::Tensor& ranks,
                                   std::vector<std::string> dim_names) {
  TORCH_CHECK(ranks.defined() && !c10::isFloatingType(ranks.scalar_type()) &&
                  !c10::isComplexType(ranks.scalar_type()) && ranks.dim() >= 1,
              "DeviceMesh::from_tensor: the mesh must be an integer tensor of global ranks "
              "with at least one dim, got ",
              ranks.defined() ? ranks.toString() : std::string("an undefined tensor"));
  at::Tensor flat = ranks.to(at::kCPU, at::kLong).contiguous().view(-1);
  std::vector<int64_t> list(flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
  return from_ranks(device_type, ranks.sizes().vec(), std::move(list), std::move(dim_names));
}

// Note [Flattened meshes]
// flatten() registers the mesh it makes with the root mesh (the mesh that
// init / from_ranks built and every slice of it shares), under the root dims
// it flattens, as PyTorch's DeviceMesh._flatten records it in the root's
// _flatten_mapping. Flattening the same dims under the same name again
// returns the registered mesh (no new communicator). A redistribution over
// several mesh dims of a mesh whose root has such a flattened mesh may then
// run one collective over it instead of one per mesh dim (Note [Merged
// collectives over a flattened mesh] in core/redistribute.cc): the registry
// is what PyTorch 2.15 looks up for that. Each rank holds its own meshes, so
// the registry is per rank; its mutex guards only this rank's threads.
DeviceMesh DeviceMesh::flatten(std::string name) const {
  const Impl& m = impl("DeviceMesh::flatten");
  TORCH_CHECK(m.member, "DeviceMesh::flatten on rank ", m.world->rank(), ": this rank is not in ",
              to_string(), "; only its members flatten it");
  if (name.empty() && m.shape.has_dim_names()) {
    for (const std::string& dim : m.shape.dim_names()) name += (name.empty() ? "" : "_") + dim;
  }
  const Impl& root = m.root ? *m.root : m;
  std::vector<int> root_dims = m.root_dims;
  if (!m.root) {
    for (int d = 0; d < m.shape.ndim(); ++d) root_dims.push_back(d);
  }
  std::lock_guard<std::mutex> lock(root.flattened_mutex);
  for (const Impl::Flattened& f : root.flattened) {
    if (f.root_dims == root_dims && f.name == name) return DeviceMesh(f.mesh);
  }
  MeshShape flat = rethrow_as_torch_error(
      [&] {
        return MeshShape::create({m.shape.num_ranks()},
                                 name.empty() ? std::vector<std::string>{} : std::vector<std::string>{name});
      },
      "DeviceMesh::flatten");
  DeviceMesh made = build(std::move(flat), m.mesh_ranks, m.device.type(), *m.world);
  root.flattened.push_back(Impl::Flattened{std::move(root_dims), std::move(name), made.impl_});
  root.has_flattened.store(true, std::memory_order_release);
  return made;
}

std::optional<DeviceMesh> DeviceMesh::flattened_over(const std::vector<int>& mesh_dims) const {
  const Impl& m = impl("DeviceMesh::flattened_over");
  const Impl& root = m.root ? *m.root : m;
  if (!root.has_flattened.load(std::memory_order_acquire)) return std::nullopt;
  std::vector<int> root_dims;
  for (int d : mesh_dims) root_dims.push_back(m.root ? m.root_dims[static_cast<size_t>(d)] : d);
  std::lock_guard<std::mutex> lock(root.flattened_mutex);
  for (const Impl::Flattened& f : root.flattened) {
    if (f.root_dims == root_dims) return DeviceMesh(f.mesh);
  }
  return std::nullopt;
}

bool DeviceMesh::has_flattened_meshes() const {
  const Impl& m = impl("DeviceMesh::has_flattened_meshes");
  return (m.root ? *m.root : m).has_flattened.load(std::memory_order_acquire);
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

bool DeviceMesh::is_member() const { return impl("DeviceMesh::is_member").member; }

const std::vector<int64_t>& DeviceMesh::member_impl_coordinate(const char* caller) const {
  const Impl& m = impl(caller);
  TORCH_CHECK(m.member, caller, " on rank ", m.world->rank(), ": this rank is not in ", to_string(),
              " over ranks ", c10::IntArrayRef(m.mesh_ranks),
              "; only its members have a coordinate and communicators (check is_member())");
  return m.coordinate;
}

const std::vector<int64_t>& DeviceMesh::get_coordinate() const {
  return member_impl_coordinate("DeviceMesh::get_coordinate");
}

int64_t DeviceMesh::size(int mesh_dim) const {
  const Impl& m = impl("DeviceMesh::size");
  return rethrow_as_torch_error([&] { return m.shape.size(mesh_dim); }, "DeviceMesh::size");
}

int64_t DeviceMesh::get_local_rank(int mesh_dim) const {
  const auto& coordinate = member_impl_coordinate("DeviceMesh::get_local_rank");
  int dim = rethrow_as_torch_error([&] { return impl_->shape.normalize_dim(mesh_dim); }, "DeviceMesh::get_local_rank");
  return coordinate[static_cast<size_t>(dim)];
}

int64_t DeviceMesh::get_local_rank(const std::string& dim_name) const {
  const auto& coordinate = member_impl_coordinate("DeviceMesh::get_local_rank");
  int dim = rethrow_as_torch_error([&] { return impl_->shape.dim_index(dim_name); }, "DeviceMesh::get_local_rank");
  return coordinate[static_cast<size_t>(dim)];
}

Communicator& DeviceMesh::communicator(int mesh_dim) const {
  member_impl_coordinate("DeviceMesh::communicator");
  const Impl& m = *impl_;
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
  member_impl_coordinate("DeviceMesh::operator[]");
  std::vector<int> dims;
  rethrow_as_torch_error([&] {
    impl_->shape.slice(dim_names);  // checks the names (known, distinct)
    for (const auto& name : dim_names) dims.push_back(impl_->shape.dim_index(name));
    return 0;
  }, "DeviceMesh::operator[]");
  if (!impl_->root) return slice(impl_, dims);
  std::vector<int> in_root;
  for (int d : dims) in_root.push_back(impl_->root_dims[static_cast<size_t>(d)]);
  return slice(impl_->root, in_root);
}

DeviceMesh DeviceMesh::slice(const std::shared_ptr<const Impl>& parent_ptr, const std::vector<int>& dims) {
  const Impl& parent = *parent_ptr;
  auto sub = std::make_shared<Impl>();
  std::vector<int64_t> sizes;
  std::vector<std::string> names;
  for (int d : dims) {
    sizes.push_back(parent.shape.size(d));
    if (parent.shape.has_dim_names()) names.push_back(parent.shape.dim_names()[static_cast<size_t>(d)]);
  }
  sub->shape = MeshShape::create(std::move(sizes), std::move(names));
  sub->device = parent.device;
  sub->world = parent.world;
  sub->member = true;
  sub->root = parent_ptr;
  sub->root_dims = dims;
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

DeviceMesh DeviceMesh::concatenate(const std::vector<DeviceMesh>& meshes) {
  TORCH_CHECK(!meshes.empty(), "DeviceMesh::concatenate: no meshes given");
  std::shared_ptr<const Impl> root;
  std::vector<int> dims;
  for (const DeviceMesh& mesh : meshes) {
    mesh.member_impl_coordinate("DeviceMesh::concatenate");
    const std::shared_ptr<const Impl> its_root = mesh.impl_->root ? mesh.impl_->root : mesh.impl_;
    TORCH_CHECK(!root || its_root == root, "DeviceMesh::concatenate: ", mesh.to_string(), " and ",
                meshes.front().to_string(), " are not slices of one mesh; slice them from the same mesh ",
                "(mesh[\"dp\"], mesh[\"tp\"]) to join them");
    root = its_root;
    if (mesh.impl_->root) {
      dims.insert(dims.end(), mesh.impl_->root_dims.begin(), mesh.impl_->root_dims.end());
    } else {
      for (int d = 0; d < mesh.ndim(); ++d) dims.push_back(d);
    }
  }
  for (size_t a = 0; a < dims.size(); ++a) {
    for (size_t b = a + 1; b < dims.size(); ++b) {
      TORCH_CHECK(dims[a] != dims[b], "DeviceMesh::concatenate: dim ", dims[a], " of the mesh they were ",
                  "sliced from appears twice; give each mesh dim once");
    }
  }
  return slice(root, dims);
}

std::string DeviceMesh::to_string() const {
  if (!impl_) return "DeviceMesh(empty)";
  std::ostringstream out;
  out << "DeviceMesh(" << impl_->device << ", " << impl_->shape.to_string();
  // Meshes over ranks other than 0..n-1 in order say which.
  for (size_t i = 0; i < impl_->mesh_ranks.size(); ++i) {
    if (impl_->mesh_ranks[i] != static_cast<int64_t>(i)) {
      out << ", ranks " << c10::IntArrayRef(impl_->mesh_ranks);
      break;
    }
  }
  out << ")";
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
