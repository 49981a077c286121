// CommDebugMode: counts the collectives this rank issues while it is entered,
// like PyTorch's torch.distributed.tensor.debug.CommDebugMode.
//   debug::CommDebugMode comm;
//   { auto guard = comm.enter(); auto y = torch::mm(x, w); }
//   comm.get_comm_counts();   // {"all_gather_into_tensor": 1}
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backends/collective_event.h"
#include "backends/world.h"

namespace dtensor::debug {

/// Per rank: enter it on every rank you want counted (in a fake world, inside
/// the rank function). Counts are kept after the guard ends; entering again
/// resets them, as in PyTorch.
class CommDebugMode : public CollectiveObserver {
 public:
  /// Observes the current thread's world while alive.
  class Guard {
   public:
    explicit Guard(CommDebugMode* mode);
    Guard(Guard&&) noexcept = default;
    Guard& operator=(Guard&&) noexcept = default;

   private:
    ObserverList::Registration registration_;
  };

  CommDebugMode() = default;
  CommDebugMode(const CommDebugMode&) = delete;
  CommDebugMode& operator=(const CommDebugMode&) = delete;

  /// Resets the counts and starts observing this rank's collectives.
  /// Precondition: the calling thread has a current world.
  [[nodiscard]] Guard enter();

  /// Collective name ("all_reduce", ...) -> number issued.
  std::map<std::string, int64_t> get_comm_counts() const;
  /// Number of collectives issued (barriers included).
  int64_t get_total_counts() const;
  /// Every collective issued, in order.
  const std::vector<CollectiveEvent>& events() const { return events_; }

  void on_collective(const CollectiveEvent& event) override;

 private:
  std::vector<CollectiveEvent> events_;
};

}  // namespace dtensor::debug
