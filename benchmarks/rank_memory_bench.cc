// What per-rank memory accounting (Note [Rank memory accounting]) costs an
// allocation: an at::empty + free loop with LibTorch's own CPU allocator, with
// the counting allocator installed but no rank (any thread outside a world),
// and charging a rank, side by side in one run.
//   bazel run -c opt //benchmarks:rank_memory_bench [-- --json out.json] [--smoke]
#include <ATen/Functions.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "backends/rank_memory.h"
#include "benchmarks/bench_util.h"

namespace dtensor {
namespace {

using Clock = std::chrono::steady_clock;

// Nanoseconds per at::empty of `numel` floats (freed at once), best of `reps`.
double ns_per_empty(int64_t numel, int iters, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) {
      at::Tensor t = at::empty({numel}, at::kFloat);
      (void)t;
    }
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    best = std::min(best, ns / iters);
  }
  return best;
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) {
  using namespace dtensor;
  const bench::Args args = bench::parse_args(argc, argv);
  bench::Results results("rank_memory");
  const int iters = args.smoke ? 200 : 200000;
  const int reps = args.smoke ? 1 : 5;
  const std::vector<int64_t> sizes = {1, 256, 65536};
  std::vector<double> plain;
  // 1. Before any world: LibTorch's allocator alone (the counting one is not
  //    installed until the first accounted scope). Warm up first.
  for (int64_t n : sizes) ns_per_empty(n, iters, 1);
  for (int64_t n : sizes) plain.push_back(ns_per_empty(n, iters, reps));
  auto account = std::make_shared<RankMemoryAccount>(0, 0);
  { ScopedRankMemory install(&account); }  // installs the counting allocators
  std::printf("at::empty + free of N floats, ns per call (best of %d x %d)\n", reps, iters);
  std::printf("%10s %12s %14s %10s %14s %10s\n", "N", "libtorch", "outside world", "ratio",
              "charged rank", "ratio");
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double outside = ns_per_empty(sizes[i], iters, reps);
    double charged = 0;
    {
      ScopedRankMemory scope(&account);
      charged = ns_per_empty(sizes[i], iters, reps);
    }
    std::printf("%10lld %12.1f %14.1f %10.2f %14.1f %10.2f\n", static_cast<long long>(sizes[i]),
                plain[i], outside, outside / plain[i], charged, charged / plain[i]);
    results.rows().push_back({{"numel", sizes[i]},
                              {"libtorch_ns", plain[i]},
                              {"outside_world_ns", outside},
                              {"charged_ns", charged}});
  }
  const RankMemoryStats s = account->stats();
  std::printf("charged allocations: %lld, live bytes after: %lld\n",
              static_cast<long long>(s.allocations), static_cast<long long>(s.current_bytes));
  results.write(args.json_path);
  return s.current_bytes == 0 ? 0 : 1;
}
