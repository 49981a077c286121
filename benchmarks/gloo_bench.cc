// Gloo backend overhead: all_reduce bus bandwidth between 2 and 4 processes
// on loopback through our Communicator (GlooWorld) against c10d's
// ProcessGroupGloo used directly, in the same processes, alternating the two
// per size so that both see the same machine load.
//   bazel run -c opt //benchmarks:gloo_bench [-- --json out.json]
// The parent starts the ranks with the launcher library (backends/launch); each
// rank connects a GlooWorld (store on MASTER_PORT) and a plain c10d group
// (its own TCPStore on BENCH_C10D_PORT). Bus bandwidth as nccl-tests defines
// it for all_reduce: 2 (n - 1) / n x bytes / time. Target: ratio within 5%.
#include <ATen/ops/ones.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unistd.h>
#include <sstream>
#include <string>
#include <vector>

#include "backends/gloo/gloo_world.h"
#include "backends/launch/env.h"
#include "backends/launch/store.h"
#include "benchmarks/bench_util.h"
#include "backends/launch/launcher.h"

namespace dtensor {
namespace {

std::vector<int64_t> sizes_for(bool smoke) {
  if (smoke) return {4 << 10};
  return {4 << 10, 64 << 10, 1 << 20, 16 << 20};
}

// One rank: prints "RESULT bytes ours_s c10d_s" lines (rank 0 only).
int worker(bool smoke) {
  const LaunchEnv env = launch_env_from_environment();
  GlooWorldOptions options;
  options.timeout = std::chrono::minutes(2);
  auto world = gloo_world(env, options);
  auto comm = world->world_group();

  LaunchEnv c10d_env = env;
  c10d_env.port = std::atoi(std::getenv("BENCH_C10D_PORT"));
  auto store = connect_store(c10d_env, std::chrono::seconds(60));
  auto pg_options = c10d::ProcessGroupGloo::Options::create();
  pg_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  pg_options->threads = options.threads;
  auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, static_cast<int>(env.rank),
                                                        static_cast<int>(env.world_size), pg_options);
  for (int64_t bytes : sizes_for(smoke)) {
    at::Tensor t = at::ones({bytes / 4});
    std::vector<at::Tensor> tensors = {t};
    const int iters = smoke ? 3 : static_cast<int>(std::clamp<int64_t>((256 << 20) / bytes, 5, 500));
    auto ours = [&] { comm->all_reduce(t); };
    auto direct = [&] { pg->allreduce(tensors)->wait(); };
    for (int i = 0; i < 3; ++i) {
      ours();
      direct();
    }
    double best_ours = 1e300, best_direct = 1e300;
    for (int rep = 0; rep < (smoke ? 1 : 5); ++rep) {  // alternate: same load for both
      comm->barrier();
      double start = bench::wall_s();
      for (int i = 0; i < iters; ++i) ours();
      best_ours = std::min(best_ours, (bench::wall_s() - start) / iters);
      comm->barrier();
      start = bench::wall_s();
      for (int i = 0; i < iters; ++i) direct();
      best_direct = std::min(best_direct, (bench::wall_s() - start) / iters);
    }
    if (env.rank == 0) {
      std::printf("RESULT %lld %.9f %.9f\n", static_cast<long long>(bytes), best_ours, best_direct);
      std::fflush(stdout);
    }
  }
  comm->barrier();
  return 0;
}

int parent(const bench::Args& args, const char* self) {
  bench::Results results("gloo");
  std::printf("Gloo all_reduce on loopback: our GlooWorld vs c10d ProcessGroupGloo directly\n");
  std::printf("%-6s %10s %11s %11s %12s %12s %8s\n", "procs", "bytes", "ours us", "c10d us",
              "ours busGB/s", "c10d busGB/s", "ratio");
  double worst = 0;
  for (int nproc : {2, 4}) {
    launch::LaunchSpec spec;
    spec.nproc = nproc;
    char path[4096] = {};
    const ssize_t n = readlink(self, path, sizeof(path) - 1);
    spec.argv = {n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string(self)};
    if (args.smoke) spec.argv.push_back("--smoke");
    spec.env = {{"BENCH_C10D_PORT", std::to_string(launch::find_free_port())}};
    spec.timeout = std::chrono::minutes(5);
    std::mutex mutex;
    std::vector<std::string> lines;
    spec.on_line = [&](int rank, const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex);
      if (rank == 0 && line.rfind("RESULT ", 0) == 0) lines.push_back(line);
    };
    const launch::LaunchResult job = launch::launch_local(spec);
    if (!job.ok()) {
      std::printf("%s\n", job.report().c_str());
      return 1;
    }
    for (const std::string& line : lines) {
      std::istringstream in(line.substr(7));
      long long bytes = 0;
      double ours = 0, direct = 0;
      in >> bytes >> ours >> direct;
      const double factor = 2.0 * (nproc - 1) / nproc * static_cast<double>(bytes) / 1e9;
      const double ratio = ours / direct;
      worst = std::max(worst, ratio);
      std::printf("%-6d %10lld %11.1f %11.1f %12.3f %12.3f %8.3f\n", nproc, bytes, ours * 1e6,
                  direct * 1e6, factor / ours, factor / direct, ratio);
      results.rows().push_back({{"procs", nproc},
                                {"bytes", bytes},
                                {"ours_us", ours * 1e6},
                                {"c10d_us", direct * 1e6},
                                {"ours_busbw_gbs", factor / ours},
                                {"c10d_busbw_gbs", factor / direct},
                                {"time_ratio", ratio}});
    }
    std::fflush(stdout);
  }
  std::printf("SUMMARY gloo: worst time ratio ours/c10d %.3f (target <= 1.05)\n", worst);
  results.summary() = {{"worst_time_ratio", worst}};
  results.write(args.json_path);
  return 0;
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) {
  const dtensor::bench::Args args = dtensor::bench::parse_args(argc, argv);
  if (std::getenv("RANK") != nullptr) return dtensor::worker(args.smoke);
  (void)argv;
  return dtensor::parent(args, "/proc/self/exe");
}
