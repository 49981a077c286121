// DTensorSpec helpers: local shape/offset through layout/, hashing, text.
#include "core/dtensor_spec.h"

#include <c10/util/Exception.h>

#include <sstream>

#include "core/torch_errors.h"
#include "layout/shard_layout.h"

namespace dtensor {

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t running = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = running;
    running *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

bool DTensorSpec::has_partial() const {
  for (const auto& p : placements) {
    if (p.is_partial()) return true;
  }
  return false;
}

bool DTensorSpec::is_replicated() const {
  for (const auto& p : placements) {
    if (!p.is_replicate()) return false;
  }
  return true;
}

std::vector<int> DTensorSpec::mesh_dims_sharding(int64_t dim) const {
  std::vector<int> dims;
  for (size_t i = 0; i < placements.size(); ++i) {
    if (placements[i].is_shard(dim)) dims.push_back(static_cast<int>(i));
  }
  return dims;
}

namespace {
ShardLayout layout_of(const DTensorSpec& spec) {
  return rethrow_as_torch_error(
      [&] {
        return local_shape_and_offset(spec.meta.shape, spec.mesh.mesh_shape(), spec.placements,
                                      spec.mesh.get_coordinate());
      },
      "DTensorSpec ", spec.to_string());
}
}  // namespace

std::vector<int64_t> DTensorSpec::local_shape() const {
  // Not through rethrow_as_torch_error: its context is built before the call,
  // and to_string() cost more than the rest of from_local (issue #38).
  try {
    return dtensor::local_shape(meta.shape, mesh.mesh_shape(), placements, mesh.get_coordinate());
  } catch (const LayoutError& e) {
    TORCH_CHECK(false, "DTensorSpec ", to_string(), ": ", e.what());
  }
}
std::vector<int64_t> DTensorSpec::global_offset() const { return layout_of(*this).global_offset; }

DTensorSpec DTensorSpec::with_placements(Placements new_placements) const {
  DTensorSpec spec = *this;
  spec.placements = std::move(new_placements);
  return spec;
}

std::string DTensorSpec::to_string() const {
  std::ostringstream out;
  out << "Spec(" << dtensor::to_string(placements) << " on " << mesh.to_string() << ", "
      << c10::toString(meta.dtype) << c10::IntArrayRef(meta.shape) << ")";
  return out.str();
}

size_t DTensorSpec::hash() const {
  size_t h = mesh.hash();
  for (const auto& p : placements) h = h * 31 + std::hash<Placement>()(p);
  for (int64_t s : meta.shape) h = h * 31 + static_cast<size_t>(s);
  for (int64_t s : meta.stride) h = h * 17 + static_cast<size_t>(s);
  return h * 7 + static_cast<size_t>(meta.dtype);
}

std::ostream& operator<<(std::ostream& out, const DTensorSpec& spec) {
  return out << spec.to_string();
}

Placements checked_placements(const Placements& placements, const DeviceMesh& mesh,
                              int64_t tensor_ndim, const std::string& context) {
  return rethrow_as_torch_error(
      [&] { return validate_placements(placements, mesh.mesh_shape(), tensor_ndim); }, context,
      " on rank ", mesh.global_rank());
}

}  // namespace dtensor
