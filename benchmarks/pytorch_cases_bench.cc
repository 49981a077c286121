// PyTorch's own DTensor host-overhead benchmark, our side: the eight cases
// of PyTorch's benchmarks/dynamo/pr_time_benchmarks/benchmarks/dtensor.py
// (detach, to_local + from_local, five redistributes, add + backward,
// add_, view, uniform_, is_same_size) on a 256-rank world (solo mode: this
// process plays rank 0, collectives move no data), CPU tensors of the same
// shapes. benchmarks/pytorch_cases.py runs PyTorch's side (its fake process
// group of 256 ranks) with the same timing; tools/bench.sh pytorch prints
// both side by side. Per case: this thread's CPU time per call of the DTensor
// work, of the plain LibTorch work it wraps (the same op on the local
// tensors; for the redistributes, the raw collectives on the same backend;
// to_local / from_local and is_same_size wrap nothing), and the extra.
//   bazel run -c opt //benchmarks:pytorch_cases_bench [-- --iters 2000 --reps 7 --json out.json]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "backends/solo/solo_world.h"
#include "benchmarks/bench_util.h"
#include "core/device_mesh.h"
#include "core/dtensor.h"

namespace dtensor {
namespace {

constexpr int64_t kWorld = 256;  // PyTorch's benchmark world size

// Minimum over `reps` of this thread's CPU microseconds per call of `fn`,
// after a warm-up; under callgrind, one profile per case and side.
double per_call_us(const std::function<void()>& fn, int iters, int reps, const std::string& name) {
  for (int i = 0; i < std::max(1, iters / 10); ++i) fn();
  return bench::cpu_us_per_call(fn, iters, reps, name);
}

struct Case {
  std::string name;
  std::function<void()> dtensor;
  std::function<void()> plain;  // empty: wraps no LibTorch work
};

int run(const bench::Args& args) {
  int iters = args.smoke ? 20 : 2000;
  int reps = args.smoke ? 1 : 7;
  for (size_t i = 0; i + 1 < args.rest.size(); ++i) {
    if (args.rest[i] == "--iters") iters = std::atoi(args.rest[i + 1].c_str());
    if (args.rest[i] == "--reps") reps = std::atoi(args.rest[i + 1].c_str());
  }
  at::set_num_threads(1);
  bench::Results results("pytorch_cases");
  run_solo_world(kWorld, /*rank=*/0, [&](World&) {
    const DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {kWorld}, {"dp"});
    Communicator& comm = mesh.communicator(0);
    const at::Tensor la = at::ones({10, 10});
    const at::Tensor lb = at::ones({10, 10});
    DTensor a = DTensor::from_local(la, mesh, {Replicate()});
    DTensor b = DTensor::from_local(lb, mesh, {Replicate()});
    DTensor c = DTensor::from_local(at::ones({10, 10}), mesh, {Partial()});
    // add + backward: [2, 512] Shard(0) and [512, 2] Shard(1) locals, [512, 512] global.
    DTensor ga = DTensor::from_local(at::ones({2, 512}).requires_grad_(), mesh, {Shard(0)});
    DTensor gb = DTensor::from_local(at::ones({512, 2}).requires_grad_(), mesh, {Shard(1)});
    const at::Tensor px = at::ones({2, 512}).requires_grad_();
    const at::Tensor py = at::ones({2, 512}).requires_grad_();
    // The raw collectives of the five redistributes, on this backend (padded
    // pieces as the DTensor layer sends them: 10 rows over 256 ranks).
    at::Tensor piece = at::ones({1, 10});
    at::Tensor gathered = at::empty({kWorld, 10});
    at::Tensor a2a_in = at::ones({kWorld, 1});
    at::Tensor a2a_out = at::empty({kWorld, 1});
    at::Tensor reduced = at::ones({10, 10});
    at::Tensor rs_in = at::ones({kWorld, 10});
    at::Tensor rs_out = at::empty({1, 10});
    const std::vector<Case> cases = {
        {"detach", [&] { a.detach(); }, [&] { la.detach(); }},
        {"to_from_local",
         [&] {
           const at::Tensor local = a.to_local();
           DTensor::from_local(local, mesh, {Replicate()});
         },
         nullptr},
        {"collectives",
         [&] {
           DTensor x = a.redistribute({Shard(0)});  // local chunk
           x = x.redistribute({Shard(1)});          // all_to_all
           x = x.redistribute({Replicate()});       // all_gather
           c.redistribute({Replicate()});           // all_reduce
           c.redistribute({Shard(0)});              // reduce_scatter
         },
         [&] {
           la.narrow(0, 0, 1);
           comm.all_to_all_single(a2a_out, a2a_in);
           comm.all_gather_into_tensor(gathered, piece);
           comm.all_reduce(reduced);
           comm.reduce_scatter_tensor(rs_out, rs_in);
         }},
        {"add_backward", [&] { (ga + gb).sum().backward(); }, [&] { (px + py).sum().backward(); }},
        {"inplace", [&] { a.add_(b); }, [&] { at::Tensor t = la; t.add_(lb); }},
        {"view", [&] { a.view({100}); }, [&] { la.view({100}); }},
        {"random", [&] { a.uniform_(); }, [&] { at::Tensor t = la; t.uniform_(); }},
        {"custom_handler", [&] { at::is_same_size(a, b); }, nullptr},
    };
    std::printf("%-16s %12s %12s %12s\n", "case", "dtensor us", "plain us", "extra us");
    for (const Case& k : cases) {
      const double dt = per_call_us(k.dtensor, iters, reps, k.name + " | dtensor");
      const double plain = k.plain ? per_call_us(k.plain, iters, reps, k.name + " | plain") : 0.0;
      std::printf("%-16s %12.2f %12.2f %12.2f\n", k.name.c_str(), dt, plain, dt - plain);
      results.rows().push_back({{"case", k.name}, {"dtensor_us", dt}, {"plain_us", plain}, {"extra_us", dt - plain}});
    }
  });
  results.summary()["world_size"] = kWorld;
  results.write(args.json_path);
  return 0;
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) { return dtensor::run(dtensor::bench::parse_args(argc, argv)); }
