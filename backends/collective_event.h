// What one collective looked like, as reported to observers (tracing, tests).
// Every collective issued through a Communicator produces exactly one event on
// the issuing rank, before it runs:
//   struct Counter : CollectiveObserver { void on_collective(const CollectiveEvent& e) override { ++n; } int n = 0; };
//   auto registration = world.observers().add(&counter);
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "layout/collective_kind.h"
#include "layout/collective_origin.h"
#include "layout/reduce_op.h"

namespace dtensor {

/// Which mesh dim a collective runs over, as core/collectives tags it: dim
/// `mesh_dim` of a mesh of `mesh_shape` (dims named `mesh_dim_names`, empty
/// when unnamed) on `device`. DeviceMesh builds one per dim, once; sub-meshes
/// (mesh["tp"]) have their own, with their own dim index and the same name.
struct MeshDimTag {
  int mesh_dim = -1;
  std::vector<int64_t> mesh_shape;
  std::vector<std::string> mesh_dim_names;
  std::string device;  // "cpu", "cuda:0", "meta"

  /// The dim's name, "" when the mesh is unnamed.
  std::string dim_name() const;
};

/// One collective as this rank issued it. Shapes are of this rank's tensors.
struct CollectiveEvent {
  CollectiveKind kind = CollectiveKind::kBarrier;
  std::vector<int64_t> group_ranks;  // global ranks of the group, in group order
  int64_t group_rank = 0;            // this rank's index in group_ranks
  int64_t global_rank = 0;           // this rank in the world
  uint64_t seq = 0;                  // per-communicator sequence number, from 0
  c10::ScalarType dtype = c10::ScalarType::Float;
  int64_t input_bytes = 0;   // bytes this rank contributes
  int64_t output_bytes = 0;  // bytes this rank receives into its output
  std::vector<std::vector<int64_t>> input_shapes;
  std::vector<std::vector<int64_t>> output_shapes;
  std::optional<ReduceOp> reduce_op;  // all_reduce, reduce_scatter_tensor
  std::optional<int64_t> root;        // broadcast, scatter (group rank)
  bool async_op = false;
  /// The mesh dim it ran over; null when issued on a Communicator directly
  /// rather than through core/collectives.
  std::shared_ptr<const MeshDimTag> mesh;
  /// Why it happened (Note [Collective origins] in core/redistribution_origin.h);
  /// null when no origin frame was open (a Communicator called directly).
  std::shared_ptr<const CollectiveOrigin> origin;

  /// One line: `all_reduce(sum) f32[4, 8] group=[0, 1] seq=3`.
  std::string to_string() const;
};

/// Describes, on demand, why the collectives the calling thread issues now
/// happen. core/ installs one around each redistribution; the Communicator
/// asks it only when it builds an event (only when observed).
class CollectiveOriginSource {
 public:
  virtual ~CollectiveOriginSource() = default;
  virtual std::shared_ptr<const CollectiveOrigin> origin() const = 0;
};

/// Installs `source` (may be null) as the calling thread's and returns the
/// previous one; the installer restores it.
const CollectiveOriginSource* exchange_collective_origin_source(const CollectiveOriginSource* source);
/// The calling thread's origin of the collectives it issues now, or null.
std::shared_ptr<const CollectiveOrigin> current_collective_origin();

/// Receives collective events; must not issue collectives itself.
class CollectiveObserver {
 public:
  virtual ~CollectiveObserver() = default;
  virtual void on_collective(const CollectiveEvent& event) = 0;
};

/// The observers of one rank. Owned by that rank's World, never global, so the
/// ranks of a fake world (threads of one process) see only their own events.
class ObserverList {
 public:
  /// Removes the observer when destroyed.
  class Registration {
   public:
    Registration() = default;
    Registration(ObserverList* list, CollectiveObserver* observer) : list_(list), observer_(observer) {}
    Registration(Registration&& other) noexcept;
    Registration& operator=(Registration&& other) noexcept;
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    ~Registration() { reset(); }
    void reset();

   private:
    ObserverList* list_ = nullptr;
    CollectiveObserver* observer_ = nullptr;
  };

  /// Adds `observer` (not owned) until the returned registration dies.
  [[nodiscard]] Registration add(CollectiveObserver* observer);
  void notify(const CollectiveEvent& event) const;
  bool empty() const;

 private:
  void remove(CollectiveObserver* observer);
  mutable std::mutex mutex_;
  std::vector<CollectiveObserver*> observers_;
};

}  // namespace dtensor
