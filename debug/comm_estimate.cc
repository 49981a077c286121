// Ring bytes and alpha-beta times of traced collectives.
#include "debug/comm_estimate.h"

namespace dtensor::debug {

int64_t ring_bytes_per_rank(const CollectiveRecord& r) {
  const int64_t n = r.group.empty() ? 1 : static_cast<int64_t>(r.group.size());
  if (n <= 1) return 0;
  if (r.kind == "all_reduce") return all_reduce_bytes_per_rank(r.bytes, n);
  if (r.kind == "all_gather_into_tensor") return all_gather_bytes_per_rank(r.output_bytes, n);
  if (r.kind == "reduce_scatter_tensor") return reduce_scatter_bytes_per_rank(r.bytes, n);
  if (r.kind == "all_to_all_single") return all_to_all_bytes_per_rank(r.bytes, n);
  if (r.kind == "barrier") return 0;
  return r.bytes;  // broadcast, scatter and anything newer: what this rank contributed
}

double estimate_collective_us(const CollectiveRecord& r, const CommCostModel& model) {
  if (r.group.size() == 1) return 0.0;
  return model.latency_us +
         static_cast<double>(ring_bytes_per_rank(r)) / (model.bandwidth_gbytes_per_s * 1e3);
}

}  // namespace dtensor::debug
