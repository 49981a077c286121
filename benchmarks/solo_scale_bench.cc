// Solo-mode scale: time and peak memory to trace one training step (forward,
// backward, Adam) of a 7B-like transformer on meta tensors, as one rank of
// worlds of 8 to 65,536 ranks (mesh dp x tp, tp = 8). Each world runs in a
// child process so that peak RSS is that world's alone.
//   bazel run -c opt //benchmarks:solo_scale_bench [-- --json out.json]
// Model (Llama-7B-like sizes, Megatron-style tensor parallelism written with
// plain DTensor ops): 32 layers, dim 4096, FFN 11008, vocab 32000, sequence
// 2048, one sequence per dp rank, 6.6 B parameters; per layer q/k/v and the
// gated FFN's w1/w3 ColwiseParallel-like ([R, S(1)]), o and w2
// RowwiseParallel-like ([R, S(0)]) matmuls, a pointwise attention stand-in,
// a gated product (x w1) * (x w3) as activation (relu and silu lack meta
// kernels in LibTorch 1.13), residual adds; loss = sum of the vocab-parallel
// logits.
// Target (issue 9): the largest world under 10 s and under 1 GiB.
#include <ATen/ops/mm.h>
#include <sys/wait.h>
#include <torch/optim/adam.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/solo/solo_world.h"
#include "benchmarks/bench_util.h"
#include "core/dispatch/sharding_propagator.h"
#include "core/dtensor.h"
#include "core/factories.h"
#include "testing/collective_counter.h"

namespace dtensor {
namespace {

struct Config {
  int64_t layers = 32, dim = 4096, ffn = 11008, vocab = 32000, seq = 2048;
};

struct Outcome {
  double seconds = 0, peak_rss_mib = 0;
  int64_t params = 0, collectives = 0, ops_cached = 0;
  double cache_hit_rate = 0;
};

Outcome trace_step(int64_t world_size, const Config& c) {
  Outcome out;
  const double start = bench::wall_s();
  SoloOptions options;
  options.device = c10::kMeta;
  run_solo_world(world_size, /*rank=*/world_size - 1, [&](World& world) {
    testing::CollectiveCounter counter(world);
    const int64_t tp = std::min<int64_t>(8, world_size);
    auto mesh = DeviceMesh::init(c10::kMeta, {world_size / tp, tp}, {"dp", "tp"});
    const at::TensorOptions grad = at::TensorOptions().requires_grad(true);
    const Placements col{Replicate(), Shard(1)}, row{Replicate(), Shard(0)};
    std::vector<at::Tensor> params;
    auto param = [&](std::vector<int64_t> shape, const Placements& p) {
      params.push_back(empty(shape, mesh, p, grad));
      out.params += shape[0] * shape[1];
      return params.back();
    };
    struct Layer {
      at::Tensor wq, wk, wv, wo, w1, w2, w3;
    };
    std::vector<Layer> layers;
    for (int64_t l = 0; l < c.layers; ++l) {
      layers.push_back({param({c.dim, c.dim}, col), param({c.dim, c.dim}, col),
                        param({c.dim, c.dim}, col), param({c.dim, c.dim}, row),
                        param({c.dim, c.ffn}, col), param({c.ffn, c.dim}, row),
                        param({c.dim, c.ffn}, col)});
    }
    at::Tensor w_out = param({c.dim, c.vocab}, col);
    torch::optim::Adam adam(params, torch::optim::AdamOptions(1e-4));
    // Activations: [dp * seq, dim], rows sharded over dp, replicated over tp.
    at::Tensor x = empty({world_size / tp * c.seq, c.dim}, mesh, {Shard(0), Replicate()});
    for (const Layer& layer : layers) {
      at::Tensor q = at::mm(x, layer.wq), k = at::mm(x, layer.wk), v = at::mm(x, layer.wv);
      x = x + at::mm(q * k + v, layer.wo);  // Partial over tp -> all_reduce
      x = x + at::mm(at::mm(x, layer.w1) * at::mm(x, layer.w3), layer.w2);
    }
    at::Tensor loss = at::mm(x, w_out).sum();
    loss.backward();
    adam.step();
    out.collectives = counter.total();
  });
  out.seconds = bench::wall_s() - start;
  out.peak_rss_mib = bench::peak_rss_mib();
  const PropagationCacheStats stats = propagation_cache_stats();
  out.ops_cached = static_cast<int64_t>(stats.size);
  out.cache_hit_rate = static_cast<double>(stats.hits) / static_cast<double>(stats.hits + stats.misses);
  return out;
}

// Runs trace_step in a child process; the result comes back through a pipe.
bool trace_in_child(int64_t world_size, const Config& config, Outcome* out) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Outcome o = trace_step(world_size, config);
    const ssize_t n = write(fds[1], &o, sizeof(o));
    _exit(n == static_cast<ssize_t>(sizeof(o)) ? 0 : 1);
  }
  close(fds[1]);
  const ssize_t n = read(fds[0], out, sizeof(*out));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return n == static_cast<ssize_t>(sizeof(*out)) && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int run(const bench::Args& args) {
  Config config;
  std::vector<int64_t> worlds = {8, 64, 512, 4096, 65536};
  if (args.smoke) {
    config = Config{2, 64, 128, 256, 16};
    worlds = {8, 65536};
  }
  bench::Results results("solo_scale");
  results.doc()["model"] = {{"layers", config.layers}, {"dim", config.dim}, {"ffn", config.ffn},
                            {"vocab", config.vocab}, {"seq", config.seq}};
  std::printf("Solo mode, one training step on meta tensors: %lld layers, dim %lld, ffn %lld, "
              "vocab %lld, seq %lld per dp rank\n",
              static_cast<long long>(config.layers), static_cast<long long>(config.dim),
              static_cast<long long>(config.ffn), static_cast<long long>(config.vocab),
              static_cast<long long>(config.seq));
  std::printf("%-8s %-11s %10s %12s %10s %12s %10s\n", "ranks", "mesh", "seconds", "peak RSS MiB",
              "params B", "collectives", "cache hit");
  for (int64_t n : worlds) {
    Outcome o;
    if (!trace_in_child(n, config, &o)) {
      std::printf("%-8lld FAILED (see stderr)\n", static_cast<long long>(n));
      return 1;
    }
    const int64_t tp = std::min<int64_t>(8, n);
    const std::string mesh = std::to_string(n / tp) + "x" + std::to_string(tp);
    std::printf("%-8lld %-11s %10.2f %12.1f %10.2f %12lld %9.1f%%\n", static_cast<long long>(n),
                mesh.c_str(), o.seconds, o.peak_rss_mib, static_cast<double>(o.params) / 1e9,
                static_cast<long long>(o.collectives), 100.0 * o.cache_hit_rate);
    std::fflush(stdout);
    results.rows().push_back({{"ranks", n},
                              {"mesh", mesh},
                              {"seconds", o.seconds},
                              {"peak_rss_mib", o.peak_rss_mib},
                              {"params", o.params},
                              {"collectives", o.collectives},
                              {"cache_hit_rate", o.cache_hit_rate}});
    if (n == worlds.back()) {
      std::printf("SUMMARY solo %lld ranks: %.2f s, peak RSS %.0f MiB (targets < 10 s, < 1024 MiB)\n",
                  static_cast<long long>(n), o.seconds, o.peak_rss_mib);
      results.summary() = {{"ranks", n}, {"seconds", o.seconds}, {"peak_rss_mib", o.peak_rss_mib}};
    }
  }
  results.write(args.json_path);
  return 0;
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) { return dtensor::run(dtensor::bench::parse_args(argc, argv)); }
