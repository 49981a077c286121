// Ring bytes and alpha-beta times of traced collectives.
#include "trace/comm_estimate.h"

#include "trace/collective_name.h"

namespace dtensor::trace {

int64_t ring_bytes_per_rank(const CollectiveRecord& r) {
  const int64_t n = r.group.empty() ? 1 : static_cast<int64_t>(r.group.size());
  // Names that are no collective this build knows (a newer trace's): what
  // this rank contributed.
  const std::optional<CollectiveKind> kind = kind_of_collective(r.kind);
  if (!kind) return n <= 1 ? 0 : r.bytes;
  return dtensor::ring_bytes_per_rank(*kind, r.bytes, r.output_bytes, n);
}

double estimate_collective_us(const CollectiveRecord& r, const CommCostModel& model) {
  const int64_t n = static_cast<int64_t>(r.group.size());
  if (n == 1) return 0.0;
  // Names that are no collective this build knows: a ring of n-1 steps.
  const std::optional<CollectiveKind> kind = kind_of_collective(r.kind);
  return model.collective_us(ring_bytes_per_rank(r), ring_steps(kind.value_or(CollectiveKind::kAllGatherIntoTensor), n));
}

}  // namespace dtensor::trace
