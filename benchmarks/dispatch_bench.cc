// Per-op overhead of the DTensor dispatcher: the same small op on a DTensor
// (cached sharding propagation, no redistribution) and on its plain local
// tensor, on a 1-rank solo world. Prints plain and DTensor times per call,
// the extra microseconds and the ratio. A timed program, not Google
// Benchmark: the pairs must run under the same conditions. Times are the
// minimum over repetitions of this thread's CPU time per call.
//   bazel run -c opt //benchmarks:dispatch_bench [-- --iters 20000 --reps 7 --filter mm]
// Instructions per call (deterministic, for before/after): under callgrind
// the program collects only inside each case's timed loop and dumps one
// profile per case, named after it (tools/bench.sh --callgrind sums them up):
//   valgrind --tool=callgrind --instr-atstart=no dispatch_bench --mode dtensor --reps 1 --iters 500
// "redistribute S->R" vs "same, plan uncached" shows what the plan cache saves
// (See Note [Redistribute plan cache] in core/redistribute.cc).
#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/solo/solo_world.h"
#include "benchmarks/bench_util.h"
#include "core/dispatch/sharding_propagator.h"
#include "core/dtensor.h"
#include "core/parallel/module_params.h"
#include "core/redistribute.h"

namespace dtensor {
namespace {

struct Options {
  int iters = 20000;
  int reps = 7;
  std::string filter;
  std::string mode = "both";  // "plain" or "dtensor": run one side only (for profilers)
  int train_steps = 20;
};

bench::Results* g_results = nullptr;

// Minimum over `reps` runs of this thread's CPU time per call of `fn`, in
// microseconds; under callgrind, one profile per side (bench::cpu_us_per_call).
double time_per_call_us(const std::function<void()>& fn, const Options& options, int iters,
                        const std::string& dump_name) {
  return bench::cpu_us_per_call(fn, iters, options.reps, dump_name);
}

struct Case {
  std::string name;
  std::function<void()> plain;
  std::function<void()> dtensor;
  int iters_divisor = 1;  // heavier cases run fewer iterations
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
  const double plain = run_plain ? time_per_call_us(c.plain, options, iters, c.name + " | plain") : 0.0;
  const double dt = run_dtensor ? time_per_call_us(c.dtensor, options, iters, c.name + " | dtensor") : 0.0;
  std::printf("%-24s %12.2f %12.2f %12.2f %8.1f\n", c.name.c_str(), plain, dt, dt - plain, dt / plain);
  std::fflush(stdout);
  if (g_results != nullptr) {
    g_results->rows().push_back({{"op", c.name},
                                 {"plain_us", plain},
                                 {"dtensor_us", dt},
                                 {"extra_us", dt - plain},
                                 {"ratio", plain > 0 ? dt / plain : 0.0}});
  }
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

// Note [Sharding cache stays bounded]
// Training steps of a DTensor Linear with Adam, changing the learning rate
// every step (as a scheduler does): the sharding cache must stop growing after
// the first steps (Adam's first step creates its state; later steps repeat the
// same operators on the same specs with new scalar values, which the cache
// key leaves out, Note [Sharding cache key]). Prints the cache size after
// each step and the hit rate of the steady steps.
void run_training_steps(const Options& options) {
  auto mesh = DeviceMesh::init(c10::kCPU, {1});
  clear_propagation_cache();
  const PropagationCacheStats at_start = propagation_cache_stats();
  auto lin = torch::nn::Linear(8, 8);
  set_parameter(*lin, "weight", distribute_tensor(lin->weight.detach(), mesh, {Shard(0)}).requires_grad_(true));
  set_parameter(*lin, "bias", distribute_tensor(lin->bias.detach(), mesh, {Shard(0)}).requires_grad_(true));
  torch::optim::Adam adam(lin->parameters(), torch::optim::AdamOptions(1e-3));
  const DTensor x = distribute_tensor(at::randn({4, 8}), mesh, {Replicate()});
  std::vector<uint64_t> sizes;
  PropagationCacheStats after_warm{};
  for (int step = 0; step < options.train_steps; ++step) {
    static_cast<torch::optim::AdamOptions&>(adam.param_groups()[0].options()).lr(1e-3 / (1 + step));
    adam.zero_grad();
    (lin->forward(x) * (1.0 + 0.01 * step)).sum().backward();
    adam.step();
    const PropagationCacheStats s = propagation_cache_stats();
    sizes.push_back(s.size);
    if (step == 2) after_warm = s;
  }
  const PropagationCacheStats end = propagation_cache_stats();
  const uint64_t hits = end.hits - after_warm.hits, misses = end.misses - after_warm.misses;
  const double hit_rate = static_cast<double>(hits) / static_cast<double>(std::max<uint64_t>(1, hits + misses));
  std::printf("\nsharding cache over %d Linear+Adam training steps (lr and a scalar change every step):\n"
              "  entries after each step:", options.train_steps);
  for (uint64_t n : sizes) std::printf(" %llu", static_cast<unsigned long long>(n));
  std::printf("\n  growth after step 3: %lld entries; hit rate of steps 4..%d: %.2f%% (%llu hits, %llu misses)\n",
              static_cast<long long>(sizes.back()) - static_cast<long long>(sizes[std::min<size_t>(2, sizes.size() - 1)]),
              options.train_steps, 100.0 * hit_rate, static_cast<unsigned long long>(hits),
              static_cast<unsigned long long>(misses));
  (void)at_start;
  if (g_results != nullptr) {
    g_results->summary()["cache_entries_per_step"] = sizes;
    g_results->summary()["cache_growth_after_step3"] =
        static_cast<int64_t>(sizes.back()) - static_cast<int64_t>(sizes[std::min<size_t>(2, sizes.size() - 1)]);
    g_results->summary()["steady_hit_rate"] = hit_rate;
  }
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
  set_parameter(*dt_lin, "weight", distribute_tensor(plain_lin->weight.detach(), mesh, shard0).requires_grad_(true));
  set_parameter(*dt_lin, "bias", distribute_tensor(plain_lin->bias.detach(), mesh, shard0).requires_grad_(true));
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
      {"mul", [&] { (void)(a * b); }, [&] { (void)(da * da); }},
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
  if (g_results != nullptr) {
    g_results->summary()["ops_cache_hits"] = stats.hits;
    g_results->summary()["ops_cache_misses"] = stats.misses;
  }
  if (options.mode == "both" && options.filter.empty() && options.train_steps > 0)
    run_training_steps(options);
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) {
  const dtensor::bench::Args args = dtensor::bench::parse_args(argc, argv);
  dtensor::Options options;
  if (args.smoke) {
    options.iters = 200;
    options.reps = 1;
    options.train_steps = 5;
  }
  const auto& rest = args.rest;
  for (size_t i = 0; i < rest.size(); ++i) {
    const bool has_value = i + 1 < rest.size();
    if (rest[i] == "--iters" && has_value) options.iters = std::atoi(rest[++i].c_str());
    else if (rest[i] == "--reps" && has_value) options.reps = std::atoi(rest[++i].c_str());
    else if (rest[i] == "--filter" && has_value) options.filter = rest[++i];
    else if (rest[i] == "--mode" && has_value) options.mode = rest[++i];
    else if (rest[i] == "--steps" && has_value) options.train_steps = std::atoi(rest[++i].c_str());
    else {
      std::fprintf(stderr, "usage: %s [--iters N] [--reps N] [--filter EXACT_NAME] "
                   "[--mode both|plain|dtensor] [--steps N] [--smoke] [--json PATH]\n", argv[0]);
      return 2;
    }
  }
  dtensor::bench::Results results("dispatch");
  dtensor::g_results = &results;
  dtensor::run_solo_world(1, 0, [&](dtensor::World&) { dtensor::run(options); });
  dtensor::run_solo_world(4, 0, [&](dtensor::World&) { dtensor::run_redistribute(options); });
  double worst_extra = 0;
  for (const auto& row : results.rows()) {
    const std::string op = row["op"];
    if (op.rfind("redistribute", 0) == 0 || op.rfind("  ", 0) == 0 || op == "Linear fwd+bwd" ||
        op == "Adam step")
      continue;
    worst_extra = std::max(worst_extra, row["extra_us"].get<double>());
  }
  results.summary()["worst_single_op_extra_us"] = worst_extra;
  std::printf("SUMMARY dispatch: worst extra per single op %.2f us (target <= 1 us, issue #38)\n", worst_extra);
  results.write(args.json_path);
  return 0;
}
