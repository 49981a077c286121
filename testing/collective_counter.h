// Counts the collectives this rank issues, by kind, while it lives: the one
// observer that tests, examples and benchmarks share.
//   dtensor::testing::CollectiveCounter counter(world);
//   y.full_tensor();
//   EXPECT_EQ(counter.counts(), (dtensor::testing::Counts{{"all_gather_into_tensor", 1}}));
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backends/collective_event.h"
#include "backends/world.h"

namespace dtensor::testing {

/// Collective name ("all_reduce", collective_name's spelling) -> count; the
/// same type as trace::KindCounts, so EXPECT_COMM_COUNTS takes it.
using Counts = std::map<std::string, int64_t>;

/// Registered on world.observers() from construction to destruction, so it
/// sees only this rank's events (each rank of a fake world makes its own).
/// Not thread-safe across ranks: one counter per rank.
class CollectiveCounter : public CollectiveObserver {
 public:
  /// Starts counting `world`'s collectives; `world` must outlive the counter.
  explicit CollectiveCounter(World& world);

  void on_collective(const CollectiveEvent& event) override;

  /// Counts since construction or the last clear() / take().
  const Counts& counts() const { return counts_; }
  /// Sum of counts(). Example: 2 after one all_reduce and one broadcast.
  int64_t total() const;
  /// The events counted, in issue order.
  const std::vector<CollectiveEvent>& events() const { return events_; }
  /// Forgets what was counted.
  void clear();
  /// counts(), then clear(): the counts of one step of a loop.
  Counts take();

 private:
  Counts counts_;
  std::vector<CollectiveEvent> events_;
  ObserverList::Registration registration_;
};

/// "{all_gather_into_tensor: 1, all_reduce: 6}" for failure messages.
std::string to_string(const Counts& counts);

}  // namespace dtensor::testing
