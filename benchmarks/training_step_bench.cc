// Training-step simulation cost: one Adam step of the example Transformer
// (tensor + sequence parallel on "tp", data parallel on "dp") on a fake world
// of 4 ranks (mesh 2 x 2) and 8 ranks (2 x 4), against the same step on one
// device. Reports the ratio of wall time and of process CPU time (all
// threads). The fake world runs every rank's share of the model plus the
// collectives and the DTensor dispatch of each rank, on the same 2 cores.
//   bazel run -c opt //benchmarks:training_step_bench [-- --steps 5 --dim 64 --seq-len 16 --json out.json]
// ATen intra-op threads are set to 1 everywhere so that the comparison is of
// work, not of how many OpenMP threads each side happens to start.
#include <ATen/Parallel.h>
#include <ATen/ops/tensor.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "benchmarks/bench_util.h"
#include "core/collectives.h"
#include "core/device_mesh.h"
#include "examples/models/transformer_training.h"

namespace dtensor {
namespace {

// The model of the BENCHMARKS.md table (dim 64, sequence 16: every op is
// small, so a step is mostly per-op overhead), or a wider one (--dim,
// --seq-len) whose arithmetic dominates.
examples::TrainingConfig config_for(std::vector<int64_t> mesh_shape, bool smoke, int64_t dim, int64_t seq_len) {
  examples::TrainingConfig config;
  config.mesh_shape = std::move(mesh_shape);
  config.batch = 8;
  config.seq_len = smoke ? 8 : seq_len;
  config.model = examples::ModelArgs()
                     .dropout_p(0.0)
                     .seed(3)
                     .n_layers(2)
                     .dim(smoke ? 16 : dim)
                     .n_heads(4)
                     .vocab_size(smoke ? 16 : 128)
                     .max_seq_len(std::max<int64_t>(32, seq_len));
  return config;
}

struct Timing {
  double wall_s = 0, cpu_s = 0;  // per step
};

// Single device: the model built once, `warm` steps, then `steps` timed
// steps (timing around whole runs would charge the model's construction to
// the steps).
Timing single_device(const examples::TrainingConfig& config, int warm, int steps) {
  examples::SingleDeviceTrainer trainer(config);
  for (int i = 0; i < warm; ++i) trainer.step();
  Timing best{1e300, 1e300};
  for (int rep = 0; rep < 3; ++rep) {
    const double w = bench::wall_s(), c = bench::process_cpu_s();
    for (int i = 0; i < steps; ++i) trainer.step();
    best.wall_s = std::min(best.wall_s, (bench::wall_s() - w) / steps);
    best.cpu_s = std::min(best.cpu_s, (bench::process_cpu_s() - c) / steps);
  }
  return best;
}

// Fake world: every rank builds the trainer, runs `warm` steps, then
// `steps` steps between two barriers; rank 0 reads the clocks.
Timing fake_world(const examples::TrainingConfig& config, int warm, int steps) {
  int64_t world_size = 1;
  for (int64_t s : config.mesh_shape) world_size *= s;
  Timing best{1e300, 1e300};
  for (int rep = 0; rep < 3; ++rep) {
    double wall = 0, cpu = 0;
    run_fake_world(world_size, [&](World& world) {
      examples::TransformerTrainer trainer(config);
      for (int i = 0; i < warm; ++i) trainer.step();
      collectives::barrier(world);
      const double w = bench::wall_s(), c = bench::process_cpu_s();
      for (int i = 0; i < steps; ++i) trainer.step();
      collectives::barrier(world);
      if (world.rank() == 0) {
        wall = (bench::wall_s() - w) / steps;
        cpu = (bench::process_cpu_s() - c) / steps;
      }
    });
    best.wall_s = std::min(best.wall_s, wall);
    best.cpu_s = std::min(best.cpu_s, cpu);
  }
  return best;
}

int run(const bench::Args& args) {
  int steps = args.smoke ? 1 : 5;
  for (size_t i = 0; i + 1 < args.rest.size(); ++i)
    if (args.rest[i] == "--steps") steps = std::stoi(args.rest[i + 1]);
  int64_t dim = 64, seq_len = 16;
  for (size_t i = 0; i + 1 < args.rest.size(); ++i) {
    if (args.rest[i] == "--dim") dim = std::stoll(args.rest[i + 1]);
    if (args.rest[i] == "--seq-len") seq_len = std::stoll(args.rest[i + 1]);
  }
  at::set_num_threads(1);
  bench::Results results("training_step");
  const int warm = 2;
  std::printf("Transformer training step (Adam), fake world vs one device; ATen threads = 1\n");
  std::printf("%-6s %-8s %12s %12s %12s %12s %10s %10s\n", "ranks", "mesh", "1-dev ms",
              "1-dev cpu ms", "fake ms", "fake cpu ms", "wall x", "cpu x");
  for (const std::vector<int64_t>& mesh : {std::vector<int64_t>{2, 2}, std::vector<int64_t>{2, 4}}) {
    const examples::TrainingConfig config = config_for(mesh, args.smoke, dim, seq_len);
    const Timing one = single_device(config, warm, steps);
    const Timing fake = fake_world(config, warm, steps);
    const int64_t ranks = mesh[0] * mesh[1];
    const std::string mesh_name = std::to_string(mesh[0]) + "x" + std::to_string(mesh[1]);
    std::printf("%-6lld %-8s %12.2f %12.2f %12.2f %12.2f %10.2f %10.2f\n",
                static_cast<long long>(ranks), mesh_name.c_str(), one.wall_s * 1e3,
                one.cpu_s * 1e3, fake.wall_s * 1e3, fake.cpu_s * 1e3, fake.wall_s / one.wall_s,
                fake.cpu_s / one.cpu_s);
    results.rows().push_back({{"ranks", ranks},
                              {"mesh", mesh_name},
                              {"dim", config.model.dim_},
                              {"n_layers", config.model.n_layers_},
                              {"batch", config.batch},
                              {"seq_len", config.seq_len},
                              {"single_wall_ms", one.wall_s * 1e3},
                              {"single_cpu_ms", one.cpu_s * 1e3},
                              {"fake_wall_ms", fake.wall_s * 1e3},
                              {"fake_cpu_ms", fake.cpu_s * 1e3},
                              {"wall_ratio", fake.wall_s / one.wall_s},
                              {"cpu_ratio", fake.cpu_s / one.cpu_s}});
    std::printf("SUMMARY training %lld ranks: fake/single wall %.2fx, cpu %.2fx\n",
                static_cast<long long>(ranks), fake.wall_s / one.wall_s, fake.cpu_s / one.cpu_s);
    std::fflush(stdout);
  }
  results.write(args.json_path);
  return 0;
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) { return dtensor::run(dtensor::bench::parse_args(argc, argv)); }
