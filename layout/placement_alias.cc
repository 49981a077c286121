// Conversions between the per-tensor-dim alias form and per-mesh-dim placements.
// See placement_alias.h and Note [Alias nesting order].
#include "layout/placement_alias.h"

#include "layout/layout_error.h"

namespace dtensor {
namespace {

bool is_unsharded_entry(const TensorDimAlias& entry) {
  return entry.empty() || (entry.size() == 1 && entry[0] == "None");
}

std::string entry_to_string(const TensorDimAlias& entry) {
  if (is_unsharded_entry(entry)) return "None";
  if (entry.size() == 1) return "'" + entry[0] + "'";
  std::string out = "(";
  for (size_t i = 0; i < entry.size(); ++i) {
    if (i > 0) out += ", ";
    out += entry[i] == "None" ? "None" : "'" + entry[i] + "'";
  }
  return out + ")";
}

void check_named_mesh(const MeshShape& mesh, const char* caller) {
  DTENSOR_LAYOUT_CHECK(mesh.has_dim_names(), caller, ": ", mesh.to_string(),
                       " has no dim names; aliases name mesh dims, so create the mesh with "
                       "dim_names (e.g. {\"dp\", \"tp\"}) or use placements directly");
}

// Assigns Shard(tensor_dim) to every mesh dim named in `entry`, recording
// which tensor dim claimed each mesh dim in `owner` (-1 = unclaimed).
void apply_entry(const AliasSpec& alias, size_t tensor_dim, const MeshShape& mesh,
                 std::vector<int64_t>& owner, Placements& placements) {
  const TensorDimAlias& entry = alias[tensor_dim];
  int previous_mesh_dim = -1;
  for (const std::string& name : entry) {
    DTENSOR_LAYOUT_CHECK(name != "None", "placements_from_alias: tensor dim ", tensor_dim,
                         " of ", to_string(alias), " mixes None with mesh dim names; write None "
                         "alone (or {}) for an unsharded dim");
    const int mesh_dim = mesh.dim_index(name);
    DTENSOR_LAYOUT_CHECK(owner[static_cast<size_t>(mesh_dim)] < 0, "placements_from_alias: mesh dim '",
                         name, "' of ", mesh.to_string(), " is used twice in ", to_string(alias),
                         " (tensor dims ", owner[static_cast<size_t>(mesh_dim)], " and ", tensor_dim,
                         "); each mesh dim can shard at most one tensor dim, once");
    DTENSOR_LAYOUT_CHECK(mesh_dim > previous_mesh_dim, "placements_from_alias: tensor dim ",
                         tensor_dim, " of ", to_string(alias), " lists mesh dims out of ",
                         mesh.to_string(), " order ('", name, "' comes after '",
                         mesh.dim_names()[static_cast<size_t>(previous_mesh_dim)],
                         "'); placements nest shards in mesh dim order, so list them in that "
                         "order (See Note [Alias nesting order] in placement_alias.h)");
    owner[static_cast<size_t>(mesh_dim)] = static_cast<int64_t>(tensor_dim);
    placements[static_cast<size_t>(mesh_dim)] = Shard(static_cast<int64_t>(tensor_dim));
    previous_mesh_dim = mesh_dim;
  }
}

}  // namespace

Placements placements_from_alias(const AliasSpec& alias, const MeshShape& named_mesh) {
  check_named_mesh(named_mesh, "placements_from_alias");
  Placements placements(static_cast<size_t>(named_mesh.ndim()), Replicate());
  std::vector<int64_t> owner(static_cast<size_t>(named_mesh.ndim()), -1);
  for (size_t tensor_dim = 0; tensor_dim < alias.size(); ++tensor_dim) {
    if (is_unsharded_entry(alias[tensor_dim])) continue;
    apply_entry(alias, tensor_dim, named_mesh, owner, placements);
  }
  return placements;
}

AliasSpec alias_from_placements(const Placements& placements, const MeshShape& named_mesh,
                                int64_t tensor_ndim) {
  check_named_mesh(named_mesh, "alias_from_placements");
  const Placements normalized = validate_placements(placements, named_mesh, tensor_ndim);
  AliasSpec alias(static_cast<size_t>(tensor_ndim));
  // Visiting mesh dims in order lists each tensor dim's names in mesh order,
  // which is the nesting order. See Note [Alias nesting order].
  for (size_t mesh_dim = 0; mesh_dim < normalized.size(); ++mesh_dim) {
    const Placement& p = normalized[mesh_dim];
    DTENSOR_LAYOUT_CHECK(!p.is_partial(), "alias_from_placements: ", p.to_string(),
                         " on mesh dim '", named_mesh.dim_names()[mesh_dim], "' of ",
                         to_string(placements), " (", named_mesh.to_string(),
                         ") has no alias form; redistribute it to Replicate or Shard first");
    DTENSOR_LAYOUT_CHECK(!p.is_strided_shard(), "alias_from_placements: ", p.to_string(),
                         " on mesh dim '", named_mesh.dim_names()[mesh_dim], "' of ",
                         to_string(placements), " (", named_mesh.to_string(),
                         ") has no alias form (an alias lists mesh dims in nesting order, and a ",
                         "_StridedShard nests out of order); redistribute it to Replicate or Shard first");
    if (p.is_shard()) {
      alias[static_cast<size_t>(p.shard_dim())].push_back(named_mesh.dim_names()[mesh_dim]);
    }
  }
  return alias;
}

std::string to_string(const AliasSpec& alias) {
  std::string out = "(";
  for (size_t i = 0; i < alias.size(); ++i) {
    if (i > 0) out += ", ";
    out += entry_to_string(alias[i]);
  }
  if (alias.size() == 1) out += ",";
  return out + ")";
}

}  // namespace dtensor
