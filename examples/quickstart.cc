// dtensor quickstart: PyTorch's DTensor test Transformer trained with tensor +
// sequence parallelism (mesh dim "tp") and data parallelism ("dp") on 4 ranks,
// its losses next to one device's, the collectives it issued (CommDebugMode's
// table) and a JSON trace for the viewer.
//   bazel run //examples:quickstart                     # fake world: 4 ranks as threads
//   quickstart --device cuda                            # ... 4 CUDA fake ranks on one GPU
//   torchrun --no_python --nproc_per_node 4 bazel-bin/examples/quickstart   # Gloo, 4 processes
//   dtensor-launch --nproc 1 -- quickstart --backend nccl --mesh 1 --check-against-fake
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/fake/fake_world.h"
#include "backends/init/init_world.h"
#include "debug/comm_debug_mode.h"
#include "debug/fake_world_trace.h"
#include "examples/models/transformer_training.h"
#include "layout/flags.h"
#include "layout/shape_text.h"

namespace {

using dtensor::examples::TrainingConfig;

struct Options {
  TrainingConfig config;
  int steps = 5;
  std::string json = "comm_trace.json";
  int noise_level = 0;
  bool raw = false;  // machine-readable result lines (tests)
  std::string backend = "gloo";          // when launched
  c10::Device device = c10::kCPU;        // of the fake world's ranks
  bool check_against_fake = false;       // when launched
};

const char* kUsage =
    "usage: quickstart [--steps N] [--mesh DP,TP | --mesh TP] [--no-sp] [--fsdp] [--ac none|full|op|N]\n"
    "                  [--dtype float|double]\n"
    "                  [--json PATH] [--noise-level 0..3] [--raw] [--device cpu|cuda]\n"
    "                  [--backend gloo|nccl] [--check-against-fake]\n"
    "Runs on a fake world of mesh-size ranks (threads; --device cuda: CUDA fake ranks on one\n"
    "GPU); launched by torchrun or dtensor_launch (RANK/WORLD_SIZE set) it runs one rank per\n"
    "process on --backend instead (default gloo; nccl: one GPU per process). There,\n"
    "--check-against-fake also runs the same training on a fake world of the job's size in\n"
    "this process and fails (exit 1) unless this rank's collectives per phase are the same\n"
    "and its losses agree (float64: 1e-10, float32: 1e-5): a QUICKSTART_CHECK line says which.\n"
    "--fsdp: fully sharded data parallel (fully_shard on every block and the root) on\n"
    "--mesh DP (default 4) instead of tensor parallelism, or with --mesh DP,TP on dp after\n"
    "tensor (+ sequence) parallelism on tp (FSDP + TP).\n"
    "--ac: activation checkpointing of the blocks: full (every block recomputed in backward),\n"
    "op (torchtitan's selective op: every other matmul's output kept), N (every N-th block).\n";

// Throws std::invalid_argument (usage and exit status 2) for a bad flag;
// prints the usage and exits for --help.
Options parse_options(int argc, char** argv) {
  Options options;
  auto one_of = [](const std::string& value, const char* a, const char* b) {
    if (value != a && value != b) throw std::invalid_argument(std::string("is ") + a + " or " + b);
    return value == a;
  };
  dtensor::Flags flags;
  bool mesh_given = false;
  flags.value("--steps", &options.steps)
      .custom("--mesh", 1,
              [&](const std::vector<std::string>& v) {
                options.config.mesh_shape = dtensor::parse_extents(v[0]);
                mesh_given = true;
              })
      .custom("--fsdp", 0, [&](const std::vector<std::string>&) { options.config.fully_shard = true; })
      .custom("--ac", 1,
              [&](const std::vector<std::string>& v) {
                auto& model = options.config.model;
                if (v[0] == "none" || v[0] == "full" || v[0] == "op") {
                  model = model.checkpoint_every(v[0] == "full" ? 1 : 0).checkpoint_ops(v[0] == "op");
                  return;
                }
                const std::vector<int64_t> every = dtensor::parse_extents(v[0]);
                if (every.size() != 1 || every[0] < 1) throw std::invalid_argument("is none, full, op or N >= 1");
                model = model.checkpoint_every(every[0]).checkpoint_ops(false);
              })
      .custom("--no-sp", 0, [&](const std::vector<std::string>&) { options.config.sequence_parallel = false; })
      .custom("--dtype", 1,
              [&](const std::vector<std::string>& v) {
                options.config.dtype = one_of(v[0], "float", "double") ? at::kFloat : at::kDouble;
              })
      .value("--json", &options.json)
      .value("--noise-level", &options.noise_level)
      .toggle("--raw", &options.raw)
      .custom("--backend", 1,
              [&](const std::vector<std::string>& v) {
                one_of(v[0], "gloo", "nccl");
                options.backend = v[0];
              })
      .custom("--device", 1,
              [&](const std::vector<std::string>& v) {
                options.device = one_of(v[0], "cpu", "cuda") ? c10::Device(c10::kCPU) : c10::Device(c10::kCUDA);
              })
      .toggle("--check-against-fake", &options.check_against_fake);
  std::string error;
  if (!flags.parse(argc, argv, error)) {
    if (!error.empty()) throw std::invalid_argument(error);
    std::printf("%s", kUsage);
    std::exit(0);
  }
  if (options.config.fully_shard) {
    if (!mesh_given) options.config.mesh_shape = {4};
    if (options.config.mesh_shape.size() > 2) throw std::invalid_argument("--fsdp takes --mesh DP or --mesh DP,TP");
  }
  return options;
}

// `bazel run` starts us in the runfiles tree; write where the user ran it.
std::string output_path(const std::string& path) {
  const char* dir = std::getenv("BUILD_WORKING_DIRECTORY");
  if (dir == nullptr || path.empty() || path[0] == '/') return path;
  return std::string(dir) + "/" + path;
}

int64_t mesh_size(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::string mesh_text(const TrainingConfig& config) {
  const std::vector<int64_t>& shape = config.mesh_shape;
  if (config.fully_shard && shape.size() == 1) return "(dp=" + std::to_string(shape[0]) + ")";
  return shape.size() == 2 ? "(dp=" + std::to_string(shape[0]) + ", tp=" + std::to_string(shape[1]) + ")"
                           : "(tp=" + std::to_string(shape[0]) + ")";
}

std::string checkpointing_text(const dtensor::examples::ModelArgs& model) {
  if (model.checkpoint_ops_) return ", selective op activation checkpointing";
  if (model.checkpoint_every_ == 1) return ", full activation checkpointing";
  if (model.checkpoint_every_ > 1) {
    return ", activation checkpointing of every " + std::to_string(model.checkpoint_every_) + "-th block";
  }
  return "";
}

std::string parallelism_only_text(const TrainingConfig& config) {
  if (config.fully_shard && config.mesh_shape.size() == 1) return "fully sharded data parallel (fully_shard) on \"dp\"";
  if (config.fully_shard) {
    return std::string("tensor") + (config.sequence_parallel ? " + sequence" : "") +
           " parallel on \"tp\", fully sharded data parallel (fully_shard) on \"dp\"";
  }
  return std::string("tensor") + (config.sequence_parallel ? " + sequence" : "") + " parallel on \"tp\"" +
         (config.mesh_shape.size() == 2 ? ", data parallel on \"dp\"" : "");
}

std::string parallelism_text(const TrainingConfig& config) {
  return parallelism_only_text(config) + checkpointing_text(config.model);
}

// What one rank saw: its losses and step 1's collectives.
struct RankRun {
  std::vector<double> losses;
  dtensor::examples::StepCounts counts;
};

// The SPMD program every rank runs; step 1's forward + backward is traced by `comm`.
RankRun train(const Options& flags, dtensor::debug::CommDebugMode& comm) {
  dtensor::examples::TransformerTrainer trainer(flags.config);
  RankRun run;
  for (int step = 0; step < flags.steps; ++step) {
    if (step == 0) {
      at::Tensor loss;
      {
        auto guard = comm.enter(trainer.model(), "Transformer");  // the model's forward + backward
        loss = trainer.forward_backward();
      }
      run.losses.push_back(trainer.finish_step(loss));
      run.counts = trainer.last_counts();
    } else {
      run.losses.push_back(trainer.step());
    }
  }
  return run;
}

void print_raw(int64_t rank, const RankRun& run) {
  using dtensor::examples::to_string;
  std::ostringstream out;
  out.precision(17);
  out << "QUICKSTART_RESULT rank=" << rank << " losses=";
  for (size_t i = 0; i < run.losses.size(); ++i) out << (i ? "," : "") << run.losses[i];
  out << " forward=" << to_string(run.counts.forward) << " backward=" << to_string(run.counts.backward)
      << " data_parallel=" << to_string(run.counts.data_parallel)
      << " optimizer=" << to_string(run.counts.optimizer) << "\n";
  std::cout << out.str() << std::flush;
}

void print_report(const Options& flags, const std::string& where, const RankRun& run,
                  const std::vector<double>& single_device, const std::string& table) {
  using dtensor::examples::to_string;
  const auto& args = flags.config.model;
  std::printf(
      "dtensor quickstart: PyTorch's DTensor test Transformer (%lld layers, dim %lld, %lld heads, vocab "
      "%lld)\n",
      static_cast<long long>(args.n_layers_), static_cast<long long>(args.dim_),
      static_cast<long long>(args.n_heads_), static_cast<long long>(args.vocab_size_));
  std::printf("on %s, mesh %s: %s.\n", where.c_str(), mesh_text(flags.config).c_str(),
              parallelism_text(flags.config).c_str());
  std::printf("%s, batch %lld x seq %lld, Adam lr %g, dropout 0.\n\n", c10::toString(flags.config.dtype),
              static_cast<long long>(flags.config.batch), static_cast<long long>(flags.config.seq_len),
              flags.config.lr);
  std::printf("step  loss (%lld ranks)  loss (1 device)    |diff|\n",
              static_cast<long long>(mesh_size(flags.config.mesh_shape)));
  for (size_t i = 0; i < run.losses.size(); ++i) {
    std::printf("%4zu  %15.8f  %15.8f  %8.1e\n", i + 1, run.losses[i], single_device[i],
                std::abs(run.losses[i] - single_device[i]));
  }
  std::printf(
      "\nCollectives of step 1 on rank 0:\n  forward %s\n  backward %s\n  data parallel %s\n  optimizer %s\n",
      to_string(run.counts.forward).c_str(), to_string(run.counts.backward).c_str(),
      to_string(run.counts.data_parallel).c_str(), to_string(run.counts.optimizer).c_str());
  std::printf(
      "\nCommDebugMode table of step 1's forward + backward (noise level %d; --noise-level 1..3 for "
      "more):\n%s\n",
      flags.noise_level, table.c_str());
}

// The one-device reference, on the fake ranks' device.
std::vector<double> single_device_losses(const Options& flags) {
  TrainingConfig config = flags.config;
  config.device = flags.device;
  return dtensor::examples::train_single_device(config, flags.steps);
}

int run_fake(const Options& flags) {
  const std::vector<double> single_device = single_device_losses(flags);
  dtensor::debug::FakeWorldTrace world_trace;
  RankRun rank0;
  std::mutex mutex;
  dtensor::FakeWorldOptions options;
  options.device = flags.device;
  dtensor::run_fake_world(mesh_size(flags.config.mesh_shape), [&](dtensor::World& world) {
    dtensor::debug::CommDebugMode comm(&world_trace);
    RankRun run = train(flags, comm);
    if (flags.raw) print_raw(world.rank(), run);
    if (world.rank() == 0) {
      std::lock_guard<std::mutex> lock(mutex);
      rank0 = run;
    }
  }, options);
  if (flags.raw) {
    std::ostringstream out;
    out.precision(17);
    out << "QUICKSTART_SINGLE_DEVICE losses=";
    for (size_t i = 0; i < single_device.size(); ++i) out << (i ? "," : "") << single_device[i];
    std::cout << out.str() << "\n";
    return 0;
  }
  const std::string ranks = std::to_string(mesh_size(flags.config.mesh_shape));
  print_report(flags,
               flags.device.is_cuda() ? "a fake world of " + ranks + " CUDA ranks (threads, one GPU)"
                                      : "a fake world of " + ranks + " ranks (threads)",
               rank0, single_device, world_trace.generate_comm_debug_tracing_table(flags.noise_level));
  if (!flags.json.empty()) {
    const std::string path = output_path(flags.json);
    world_trace.generate_json_dump(path, /*noise_level=*/3);  // everything: the viewer filters
    std::printf(
        "Wrote every rank's trace of step 1 to %s\n(open it with: bazel run //gui:dtensor_viewer -- %s)\n",
        path.c_str(), path.c_str());
  }
  return 0;
}

// --check-against-fake: rank `rank`'s run of the same flags on a fake world
// of `world_size` CPU ranks in this process.
RankRun fake_run_of_rank(const Options& flags, int64_t world_size, int64_t rank) {
  RankRun out;
  std::mutex mutex;
  dtensor::run_fake_world(world_size, [&](dtensor::World& world) {
    dtensor::debug::CommDebugMode comm;
    RankRun run = train(flags, comm);
    if (world.rank() == rank) {
      std::lock_guard<std::mutex> lock(mutex);
      out = run;
    }
  });
  return out;
}

// "" when `real` and `fake` issued the same collectives per phase and their
// losses agree to `tolerance`; else what differs.
std::string compare_with_fake(const RankRun& real, const RankRun& fake, double tolerance) {
  using dtensor::examples::to_string;
  std::ostringstream diff;
  diff.precision(17);
  struct Phase {
    const char* name;
    const dtensor::testing::Counts& real;
    const dtensor::testing::Counts& fake;
  };
  const Phase phases[] = {{"forward", real.counts.forward, fake.counts.forward},
                          {"backward", real.counts.backward, fake.counts.backward},
                          {"data_parallel", real.counts.data_parallel, fake.counts.data_parallel},
                          {"optimizer", real.counts.optimizer, fake.counts.optimizer}};
  for (const Phase& phase : phases) {
    if (phase.real != phase.fake) {
      diff << " " << phase.name << ": " << to_string(phase.real) << " here, " << to_string(phase.fake)
           << " on the fake world;";
    }
  }
  if (real.losses.size() != fake.losses.size()) {
    diff << " " << real.losses.size() << " losses here, " << fake.losses.size() << " on the fake world;";
  } else {
    for (size_t i = 0; i < real.losses.size(); ++i) {
      if (!(std::abs(real.losses[i] - fake.losses[i]) <= tolerance)) {
        diff << " step " << i + 1 << " loss " << real.losses[i] << " here, " << fake.losses[i]
             << " on the fake world (tolerance " << tolerance << ");";
      }
    }
  }
  return diff.str();
}

// One rank of a launched job (torchrun / dtensor-launch) on Gloo or NCCL.
int run_launched(const Options& flags) {
  const bool nccl = flags.backend == "nccl";
  auto world = dtensor::init_world_from_env(nccl ? dtensor::BackendKind::kNccl : dtensor::BackendKind::kGloo);
  dtensor::ScopedCurrentWorld scope(*world);
  TORCH_CHECK(world->size() == mesh_size(flags.config.mesh_shape), "quickstart: the mesh ",
              mesh_text(flags.config), " needs ", mesh_size(flags.config.mesh_shape),
              " ranks, the job has ", world->size(), "; pass --mesh");
  dtensor::debug::CommDebugMode comm;
  RankRun run = train(flags, comm);
  int status = 0;
  if (flags.check_against_fake) {
    const RankRun fake = fake_run_of_rank(flags, world->size(), world->rank());
    const double tolerance = flags.config.dtype == at::kDouble ? 1e-10 : 1e-5;
    const std::string diff = compare_with_fake(run, fake, tolerance);
    std::ostringstream out;
    out << "QUICKSTART_CHECK rank=" << world->rank() << " backend=" << flags.backend << " ";
    if (diff.empty()) {
      out << "PASSED: collectives per phase equal to the fake world's, losses within " << tolerance << "\n";
    } else {
      out << "FAILED:" << diff << "\n";
    }
    std::cout << out.str() << std::flush;
    status = diff.empty() ? 0 : 1;
  }
  if (flags.raw) {
    print_raw(world->rank(), run);
    return status;
  }
  if (world->rank() != 0) return status;
  const std::vector<double> single_device = dtensor::examples::train_single_device(flags.config, flags.steps);
  print_report(flags, std::string(nccl ? "NCCL, " : "Gloo, ") + std::to_string(world->size()) + " processes", run,
               single_device, comm.generate_comm_debug_tracing_table(flags.noise_level));
  if (!flags.json.empty()) {
    const std::string path = output_path(flags.json);
    comm.generate_json_dump(path, /*noise_level=*/3);
    std::printf("Wrote rank 0's trace of step 1 to %s\n", path.c_str());
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options flags = parse_options(argc, argv);
    return std::getenv("WORLD_SIZE") != nullptr ? run_launched(flags) : run_fake(flags);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "quickstart: %s\n\n%s", e.what(), kUsage);
    return 2;
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "quickstart: %s\n", e.what_without_backtrace());
    return 1;
  }
}
