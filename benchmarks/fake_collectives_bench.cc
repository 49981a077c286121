// Fake-world collective throughput against plain memcpy, and small-message
// latency. A timed program printing tables (rank threads are not a good fit
// for Google Benchmark's per-thread model):
//   bazel run -c opt //benchmarks:fake_collectives_bench [-- --latency | --small | --large]
//       [--json out.json] [--smoke]
#include <ATen/Functions.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "backends/fake/fake_world.h"
#include "benchmarks/bench_util.h"

namespace dtensor {
namespace {

using Clock = std::chrono::steady_clock;

bench::Results* g_results = nullptr;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Iterations that take about `budget` seconds for an operation of `bytes`.
int iterations_for(int64_t bytes, double budget_bytes) {
  return static_cast<int>(std::clamp(budget_bytes / static_cast<double>(bytes), 3.0, 2000.0));
}

// Seconds per memcpy of `bytes` bytes, one thread, warm buffers.
double memcpy_seconds(int64_t bytes) {
  std::vector<char> src(static_cast<size_t>(bytes), 1);
  std::vector<char> dst(static_cast<size_t>(bytes), 2);
  const int iters = iterations_for(bytes, 2e9);
  std::memcpy(dst.data(), src.data(), src.size());
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) {
    std::memcpy(dst.data(), src.data(), src.size());
    src[static_cast<size_t>(i) % src.size()] = static_cast<char>(i);  // keep the copies alive
  }
  return seconds(Clock::now() - start) / iters;
}

// The collective under test on one rank; `bytes` is the larger buffer's size.
using Issue = std::function<void(Communicator&)>;

Issue make_issue(const std::string& kind, int64_t ranks, int64_t bytes) {
  const int64_t numel = bytes / 4;
  if (kind == "all_reduce") {
    auto t = std::make_shared<at::Tensor>(at::ones({numel}));
    return [t](Communicator& c) { c.all_reduce(*t); };
  }
  auto big = std::make_shared<at::Tensor>(at::ones({numel}));
  auto small = std::make_shared<at::Tensor>(at::ones({numel / ranks}));
  if (kind == "all_gather_into_tensor") {
    return [big, small](Communicator& c) { c.all_gather_into_tensor(*big, *small); };
  }
  if (kind == "all_to_all_single") {
    auto out = std::make_shared<at::Tensor>(at::empty({numel / ranks * ranks}));
    auto in = std::make_shared<at::Tensor>(at::ones({numel / ranks * ranks}));
    return [in, out](Communicator& c) { c.all_to_all_single(*out, *in); };
  }
  return [big, small](Communicator& c) { c.reduce_scatter_tensor(*small, *big); };
}

// Seconds per collective, measured on rank 0 between two barriers.
double collective_seconds(const std::string& kind, int64_t ranks, int64_t bytes, int iters) {
  double result = 0;
  run_fake_world(ranks, [&](World& world) {
    auto comm = world.world_group();
    Issue issue = make_issue(kind, ranks, bytes);
    for (int i = 0; i < 2; ++i) issue(*comm);  // warm-up: buffers, page faults
    comm->barrier();
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) issue(*comm);
    comm->barrier();
    if (world.rank() == 0) result = seconds(Clock::now() - start) / iters;
  });
  return result;
}

// Sizes 1 KiB .. 64 MiB by 4 (`from` .. `to` in that range).
void throughput_table(int64_t from, int64_t to) {
  std::printf(
      "\n== Throughput; bytes = each rank's larger buffer (all_reduce: the tensor, "
      "all_gather: output, reduce_scatter: input) ==\n");
  std::printf(
      "world GB/s = ranks x bytes / time; memcpy GB/s = one thread copying `bytes`\n"
      "(all_to_all: input = output = bytes);\n"
      "ratio = memcpy GB/s / world GB/s = time / (ranks x one memcpy of `bytes`):\n"
      "1 = as fast as one thread memcpying every rank's buffer once\n\n");
  std::printf("%-24s %5s %10s %12s %11s %11s %7s\n", "collective", "ranks", "bytes", "time/op us",
              "world GB/s", "memcpy GB/s", "ratio");
  const std::vector<std::string> kinds = {"all_reduce", "all_gather_into_tensor",
                                          "reduce_scatter_tensor", "all_to_all_single"};
  for (const std::string& kind : kinds) {
    for (int64_t ranks : {2, 4, 8}) {
      for (int64_t bytes = from; bytes <= to; bytes *= 4) {
        const int iters = iterations_for(bytes * ranks, 1e9);
        const double t = collective_seconds(kind, ranks, bytes, iters);
        const double world_gbs = static_cast<double>(ranks * bytes) / t / 1e9;
        const double memcpy_gbs = static_cast<double>(bytes) / memcpy_seconds(bytes) / 1e9;
        std::printf("%-24s %5ld %10ld %12.1f %11.2f %11.2f %7.2f\n", kind.c_str(),
                    static_cast<long>(ranks), static_cast<long>(bytes), t * 1e6, world_gbs,
                    memcpy_gbs, memcpy_gbs / world_gbs);
        std::fflush(stdout);
        if (g_results != nullptr) {
          g_results->rows().push_back({{"table", "throughput"},
                                       {"collective", kind},
                                       {"ranks", ranks},
                                       {"bytes", bytes},
                                       {"time_us", t * 1e6},
                                       {"world_gbs", world_gbs},
                                       {"memcpy_gbs", memcpy_gbs},
                                       {"ratio", memcpy_gbs / world_gbs}});
        }
      }
    }
  }
}

// One small-message case of the latency table.
struct Case {
  const char* name;
  // Builds one rank's tensors once and returns the call to repeat.
  std::function<std::function<void(Communicator&)>()> prepare;
  bool alone = false;  // on a group of one: the cost outside any rendezvous
};

std::vector<Case> latency_cases() {
  return {
      {"all_reduce f32[1], group of one",
       [] {
         at::Tensor t = at::ones({1});
         return [t](Communicator& c) mutable { c.all_reduce(t); };
       },
       /*alone=*/true},
      {"barrier", [] { return [](Communicator& c) { c.barrier(); }; }},
      {"all_reduce f64[1] (8 B)",
       [] {
         at::Tensor t = at::ones({1}, at::kDouble);
         return [t](Communicator& c) mutable { c.all_reduce(t); };
       }},
      {"all_gather f64[1] -> [4] (8 B)",
       [] {
         at::Tensor in = at::ones({1}, at::kDouble);
         at::Tensor out = at::empty({4}, at::kDouble);
         return [in, out](Communicator& c) mutable { c.all_gather_into_tensor(out, in); };
       }},
      {"all_reduce f32[1] (4 B)",
       [] {
         at::Tensor t = at::ones({1});
         return [t](Communicator& c) mutable { c.all_reduce(t); };
       }},
      {"all_reduce f32[256] (1 KiB)",
       [] {
         at::Tensor t = at::ones({256});
         return [t](Communicator& c) mutable { c.all_reduce(t); };
       }},
      {"all_reduce bf16[256] (512 B)",
       [] {
         at::Tensor t = at::ones({256}, at::kBFloat16);
         return [t](Communicator& c) mutable { c.all_reduce(t); };
       }},
      {"all_gather f32[64] -> [256]",
       [] {
         at::Tensor in = at::ones({64});
         at::Tensor out = at::empty({256});
         return [in, out](Communicator& c) mutable { c.all_gather_into_tensor(out, in); };
       }},
      {"reduce_scatter f32[256] -> [64]",
       [] {
         at::Tensor in = at::ones({256});
         at::Tensor out = at::empty({64});
         return [in, out](Communicator& c) mutable { c.reduce_scatter_tensor(out, in); };
       }},
      {"broadcast f32[256]",
       [] {
         at::Tensor t = at::ones({256});
         return [t](Communicator& c) mutable { c.broadcast(t); };
       }},
  };
}

void latency_table(bool smoke) {
  const int batch = smoke ? 50 : 2000;
  std::printf("\n== Small-message latency, 4 ranks (median of 9 batches of %d) ==\n\n", batch);
  std::printf("%-34s %10s\n", "collective", "us/op");
  const std::vector<Case> cases = latency_cases();
  for (const Case& c : cases) {
    std::vector<double> batches;
    run_fake_world(4, [&](World& world) {
      auto comm = world.world_group();
      if (c.alone) comm = world.new_group({world.rank()});
      auto issue = c.prepare();
      for (int i = 0; i < 200; ++i) issue(*comm);
      for (int b = 0; b < 9; ++b) {
        comm->barrier();
        const auto start = Clock::now();
        for (int i = 0; i < batch; ++i) issue(*comm);
        comm->barrier();
        if (world.rank() == 0) batches.push_back(seconds(Clock::now() - start) / batch);
      }
    });
    std::sort(batches.begin(), batches.end());
    const double us = batches[batches.size() / 2] * 1e6;
    std::printf("%-34s %10.2f\n", c.name, us);
    std::fflush(stdout);
    if (g_results != nullptr) {
      g_results->rows().push_back({{"table", "latency"}, {"collective", c.name}, {"ranks", 4}, {"us", us}});
    }
  }
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) {
  // No mode: everything; --latency, --small (1 KiB..64 KiB) or --large (1 MiB..64 MiB).
  const dtensor::bench::Args args = dtensor::bench::parse_args(argc, argv);
  const std::string mode = args.rest.empty() ? "" : args.rest[0];
  dtensor::bench::Results results("fake_collectives");
  dtensor::g_results = &results;
  std::printf("fake_collectives_bench: %u hardware threads\n", std::thread::hardware_concurrency());
  if (mode.empty() || mode == "--latency") dtensor::latency_table(args.smoke);
  const int64_t kib = 1024;
  if (args.smoke) {
    dtensor::throughput_table(kib, 4 * kib);
  } else {
    if (mode.empty()) dtensor::throughput_table(kib, 64 * kib * kib);
    if (mode == "--small") dtensor::throughput_table(kib, 64 * kib);
    if (mode == "--large") dtensor::throughput_table(kib * kib, 64 * kib * kib);
  }
  // Summary: the largest message of each collective on 8 ranks, and 8-byte latency.
  double worst_large = 0;
  int64_t largest = 0;
  for (const auto& row : results.rows())
    if (row["table"] == "throughput") largest = std::max<int64_t>(largest, row["bytes"].get<int64_t>());
  for (const auto& row : results.rows()) {
    if (row["table"] == "throughput" && row["bytes"].get<int64_t>() == largest) {
      worst_large = std::max(worst_large, row["ratio"].get<double>());
      results.summary()["ratio_" + row["collective"].get<std::string>() + "_" +
                        std::to_string(row["ranks"].get<int64_t>()) + "ranks"] = row["ratio"];
    }
    if (row["table"] == "latency" && row["collective"] == "all_reduce f64[1] (8 B)")
      results.summary()["latency_8B_all_reduce_4ranks_us"] = row["us"];
  }
  results.summary()["largest_bytes"] = largest;
  results.summary()["worst_ratio_at_largest"] = worst_large;
  if (largest > 0) {
    std::printf("SUMMARY fake collectives: worst time/memcpy ratio at %lld bytes: %.2f (target <= 2)\n",
                static_cast<long long>(largest), worst_large);
  }
  if (results.summary().contains("latency_8B_all_reduce_4ranks_us")) {
    std::printf("SUMMARY fake collectives: 8-byte all_reduce on 4 ranks %.1f us (target < 20 us)\n",
                results.summary()["latency_8B_all_reduce_4ranks_us"].get<double>());
  }
  results.write(args.json_path);
  return 0;
}
