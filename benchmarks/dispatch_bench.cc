// Per-op overhead of the DTensor dispatcher: the same small op on a DTensor
// (cached sharding propagation, no redistribution) and on its plain local
// tensor, on a 1-rank solo world. Prints plain and DTensor times per call,
// the extra microseconds and the ratio. A timed program, not Google
// Benchmark: the pairs must run under the same conditions. Times are the
// minimum over repetitions of this thread's CPU time per call.
//   bazel run -c opt //benchmarks:dispatch_bench [-- --iters 20000 --reps 7 --filter mm]
// Instructions per call (deterministic, for before/after): run one side under
// callgrind at two iteration counts and divide the difference, e.g.
//   valgrind --tool=callgrind dispatch_bench --filter add --mode dtensor --reps 1 --iters 2000
// "redistribute S->R" vs "same, plan uncached" shows what the plan cache saves
// (See Note [Redistribute plan cache] in core/redistribute.cc).
#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/solo/solo_world.h"
#include "core/dispatch/sharding_propagator.h"
#include "core/dtensor.h"
#include "core/redistribute.h"

namespace dtensor {
namespace {

struct Options {
  int iters = 20000;
  int reps = 7;
  std::string filter;
  std::string mode = "both";  // "plain" or "dtensor": run one side only (for profilers)
};

// This thread's CPU time in microseconds: time spent descheduled on a busy
// machine does not count (wall time on a loaded 2-core box is mostly noise).
double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

// Minimum over `reps` runs of the CPU time per call of `fn`, in microseconds.
double time_per_call_us(const std::function<void()>& fn, const Options& options, int iters) {
  double best = 1e300;
  for (int r = 0; r < options.reps; ++r) {
    const double start = thread_cpu_us();
    for (int i = 0; i < iters; ++i) fn();
    best = std::min(best, (thread_cpu_us() - start) / iters);
  }
  return best;
}

struct Case {
  std::string name;
  std::function<void()> plain;
  std::function<void()> dtensor;
  int iters_divisor = 1;  // heavier cases run fewer iterations
};

// Reaches Module's protected parameter dict (legal: named through a subclass).
struct ParameterAccess : torch::nn::Module {
  static torch::OrderedDict<std::string, at::Tensor>& of(torch::nn::Module& m) {
    return m.*(&ParameterAccess::parameters_);
  }
};

void print_header() {
  std::printf("%-24s %12s %12s %12s %8s\n", "op", "plain us", "DTensor us", "extra us", "ratio");
}

void run_case(const Case& c, const Options& options) {
  if (!options.filter.empty() && c.name != options.filter) return;  // exact name
  const int iters = std::max(1, options.iters / c.iters_divisor);
  const bool run_plain = options.mode != "dtensor", run_dtensor = options.mode != "plain";
  for (int i = 0; i < 100; ++i) {  // warm up: caches, allocator
    if (run_plain) c.plain();
    if (run_dtensor) c.dtensor();
  }
  const double plain = run_plain ? time_per_call_us(c.plain, options, iters) : 0.0;
  const double dt = run_dtensor ? time_per_call_us(c.dtensor, options, iters) : 0.0;
  std::printf("%-24s %12.2f %12.2f %12.2f %8.1f\n", c.name.c_str(), plain, dt, dt - plain, dt / plain);
}

// Redistribute [S(0), S(1)] -> [R, R] of a 8x8 float tensor on a 2x2 mesh of
// a 4-rank solo world (collectives shape-correct, no exchange). "plain" issues
// the same two all_gathers on the communicators directly; the extra is the
// planning and bookkeeping of redistribute.
void run_redistribute(const Options& options) {
  auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
  const Placements replicate{Replicate(), Replicate()};
  const DTensor x = distribute_tensor(at::randn({8, 8}), mesh, {Shard(0), Shard(1)});
  const at::Tensor local = x.local_tensor();
  auto raw = [&] {
    // Mesh dim 1 gathers columns (dim 1), then mesh dim 0 gathers rows.
    at::Tensor send = local.movedim(1, 0).contiguous();
    at::Tensor cols = at::empty({8, 4});
    mesh.communicator(1).all_gather_into_tensor(cols, send);
    at::Tensor half = cols.movedim(0, 1).contiguous();
    at::Tensor full = at::empty({8, 8});
    mesh.communicator(0).all_gather_into_tensor(full, half);
  };
  run_case({"redistribute S,S->R,R", raw, [&] { (void)x.redistribute(replicate); }}, options);
  run_case({"  same, plan uncached", raw,
            [&] {
              clear_redistribute_plan_cache();
              (void)x.redistribute(replicate);
            }},
           options);
}

void run(const Options& options) {
  auto mesh = DeviceMesh::init(c10::kCPU, {1});
  const Placements shard0{Shard(0)}, replicate{Replicate()};
  at::manual_seed(0);
  const at::Tensor a = at::randn({8, 8}), b = at::randn({8, 8}), bias = at::randn({8});
  const DTensor da = distribute_tensor(a, mesh, shard0);
  const DTensor db = distribute_tensor(b, mesh, replicate);
  const DTensor dbias = distribute_tensor(bias, mesh, replicate);

  // nn::Linear forward + backward, plain and with DTensor parameters.
  auto plain_lin = torch::nn::Linear(8, 8);
  auto dt_lin = torch::nn::Linear(8, 8);
  {
    auto& params = ParameterAccess::of(*dt_lin);
    dt_lin->weight = distribute_tensor(plain_lin->weight.detach(), mesh, shard0).requires_grad_(true);
    dt_lin->bias = distribute_tensor(plain_lin->bias.detach(), mesh, shard0).requires_grad_(true);
    params["weight"] = dt_lin->weight;
    params["bias"] = dt_lin->bias;
  }
  const at::Tensor x = at::randn({4, 8});
  const DTensor dx = distribute_tensor(x, mesh, replicate);
  auto linear_step = [](torch::nn::Linear& lin, const at::Tensor& input) {
    lin->zero_grad();
    lin->forward(input).sum().backward();
  };
  linear_step(plain_lin, x);
  linear_step(dt_lin, dx);
  torch::optim::Adam plain_adam(plain_lin->parameters(), torch::optim::AdamOptions(1e-3));
  torch::optim::Adam dt_adam(dt_lin->parameters(), torch::optim::AdamOptions(1e-3));

  std::vector<Case> cases = {
      {"add", [&] { (void)(a + b); }, [&] { (void)(da + da); }},
      {"mul_scalar", [&] { (void)(a * 2.0); }, [&] { (void)(da * 2.0); }},
      {"mm", [&] { (void)at::mm(a, b); }, [&] { (void)at::mm(da, db); }},
      {"relu", [&] { (void)a.relu(); }, [&] { (void)da.relu(); }},
      {"sum", [&] { (void)a.sum(); }, [&] { (void)da.sum(); }},
      {"view", [&] { (void)a.view({64}); }, [&] { (void)da.view({64}); }},
      {"transpose", [&] { (void)a.transpose(0, 1); }, [&] { (void)da.transpose(0, 1); }},
      {"addmm", [&] { (void)at::addmm(bias, a, b); }, [&] { (void)at::addmm(dbias, da, db); }},
      {"add_ (in place)", [&] { const_cast<at::Tensor&>(a).add_(b, 0.0); },
       [&] { const_cast<DTensor&>(da).add_(da, 0.0); }},
      {"Linear fwd+bwd", [&] { linear_step(plain_lin, x); }, [&] { linear_step(dt_lin, dx); }, 10},
      {"Adam step", [&] { plain_adam.step(); }, [&] { dt_adam.step(); }, 10},
  };

  std::printf("DTensor dispatch overhead, 1-rank solo world, float32 8x8 (Linear 4x8 -> 8)\n");
  print_header();
  for (const Case& c : cases) run_case(c, options);
  PropagationCacheStats stats = propagation_cache_stats();
  RedistributePlanCacheStats plans = redistribute_plan_cache_stats();
  std::printf("sharding cache: %llu hits, %llu misses; plan cache: %llu hits, %llu misses\n",
              static_cast<unsigned long long>(stats.hits), static_cast<unsigned long long>(stats.misses),
              static_cast<unsigned long long>(plans.hits), static_cast<unsigned long long>(plans.misses));
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) {
  dtensor::Options options;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) options.iters = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) options.reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) options.filter = argv[++i];
    else if (!std::strcmp(argv[i], "--mode") && i + 1 < argc) options.mode = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--iters N] [--reps N] [--filter EXACT_NAME] [--mode both|plain|dtensor]\n", argv[0]);
      return 2;
    }
  }
  dtensor::run_solo_world(1, 0, [&](dtensor::World&) { dtensor::run(options); });
  dtensor::run_solo_world(4, 0, [&](dtensor::World&) { dtensor::run_redistribute(options); });
  return 0;
}
