// FSDP's host cost per training step (issue #38, item 3), dtensor's side:
// the example Transformer (PyTorch's DTensor test model; 32 layers by
// default) under fully_shard (every block, then the root) on a fake world of
// WORLD ranks, each training on its share of the batch, against the same
// model without FSDP trained on one rank's share on one device. Host cost
// per step and rank = the rank thread's CPU time per step (its share of the
// model, its DTensor and FSDP work and the fake collectives it runs) minus
// the one-device step's. benchmarks/pytorch_fsdp_host_cost.py measures
// PyTorch's fully_shard on Gloo processes the same way (per process).
//   bazel run -c opt //benchmarks:fsdp_host_cost_bench [-- --layers 32 --world 8 --steps 5 --json out.json]
// Both sides: dim 64, 4 heads, vocab 128, sequence 16, one sequence per rank,
// Adam lr 0.01, dropout 0, ATen threads 1.
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "benchmarks/bench_util.h"
#include "core/collectives.h"
#include "examples/models/transformer_training.h"

namespace dtensor {
namespace {

examples::TrainingConfig config_for(int64_t layers, int64_t world, bool fsdp) {
  examples::TrainingConfig config;
  config.mesh_shape = {world};
  config.fully_shard = fsdp;
  config.batch = fsdp ? world : 1;  // one sequence per rank
  config.seq_len = 16;
  config.model =
      examples::ModelArgs().dropout_p(0.0).seed(3).n_layers(layers).dim(64).n_heads(4).vocab_size(128).max_seq_len(16);
  return config;
}

// Minimum over `reps` of this thread's CPU milliseconds per step.
template <typename Step, typename Barrier>
double cpu_ms_per_step(Step&& step, Barrier&& barrier, int warm, int steps, int reps) {
  for (int i = 0; i < warm; ++i) step();
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    barrier();
    const double start = bench::thread_cpu_us();
    for (int i = 0; i < steps; ++i) step();
    best = std::min(best, (bench::thread_cpu_us() - start) / steps / 1e3);
  }
  return best;
}

int run(const bench::Args& args) {
  int64_t layers = args.smoke ? 2 : 32, world = args.smoke ? 2 : 8;
  int steps = args.smoke ? 1 : 5, reps = args.smoke ? 1 : 3;
  for (size_t i = 0; i + 1 < args.rest.size(); ++i) {
    if (args.rest[i] == "--layers") layers = std::stoll(args.rest[i + 1]);
    if (args.rest[i] == "--world") world = std::stoll(args.rest[i + 1]);
    if (args.rest[i] == "--steps") steps = std::stoi(args.rest[i + 1]);
    if (args.rest[i] == "--reps") reps = std::stoi(args.rest[i + 1]);
  }
  at::set_num_threads(1);
  const int warm = 2;
  examples::SingleDeviceTrainer one(config_for(layers, world, /*fsdp=*/false));
  const double single_ms = cpu_ms_per_step([&] { one.step(); }, [] {}, warm, steps, reps);
  std::vector<double> rank_ms(static_cast<size_t>(world));
  run_fake_world(world, [&](World& w) {
    examples::TransformerTrainer trainer(config_for(layers, world, /*fsdp=*/true));
    rank_ms[static_cast<size_t>(w.rank())] =
        cpu_ms_per_step([&] { trainer.step(); }, [&] { collectives::barrier(w); }, warm, steps, reps);
  });
  double mean = 0;
  for (double ms : rank_ms) mean += ms / static_cast<double>(world);
  const auto [lo, hi] = std::minmax_element(rank_ms.begin(), rank_ms.end());
  std::printf("dtensor fully_shard, %lld layers, %lld fake ranks: one-rank step %.2f ms CPU, FSDP step %.2f ms "
              "CPU per rank (min %.2f, max %.2f), host cost %.2f ms\n",
              static_cast<long long>(layers), static_cast<long long>(world), single_ms, mean, *lo, *hi,
              mean - single_ms);
  std::printf("SUMMARY fsdp host cost %lld layers %lld ranks: %.2f ms per step and rank\n",
              static_cast<long long>(layers), static_cast<long long>(world), mean - single_ms);
  bench::Results results("fsdp_host_cost");
  results.rows().push_back({{"side", "dtensor"},
                            {"layers", layers},
                            {"world", world},
                            {"one_rank_cpu_ms", single_ms},
                            {"fsdp_cpu_ms_mean", mean},
                            {"fsdp_cpu_ms_min", *lo},
                            {"fsdp_cpu_ms_max", *hi},
                            {"host_cost_ms", mean - single_ms}});
  results.write(args.json_path);
  return 0;
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) { return dtensor::run(dtensor::bench::parse_args(argc, argv)); }
