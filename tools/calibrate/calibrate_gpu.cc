// Times, on the accelerator at hand, the kernels the capacity planner costs
// (planner/estimate.h) and writes a calibration file (Note [Calibration file
// format] in planner/calibration.h): achieved matmul rates per shape and
// dtype, causal attention forward and backward, memory bandwidth (a copy and
// an add), and an Adam step. tools/calibrate_gpu.sh builds and runs it on a
// GPU host (CMake, no Bazel).
//   calibrate_gpu OUT.calib                  # the GPU, < 1 minute on an H100
//   calibrate_gpu OUT.calib --device cpu --quick   # tiny shapes on the CPU (the suite's self-test)
#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/optim/adam.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#ifdef DTENSOR_CALIBRATE_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace {

c10::Device g_device = c10::kCUDA;
bool g_quick = false;

void synchronize() {
  if (g_device.is_cuda()) torch::cuda::synchronize();
}

// Mean seconds of one call of `fn` over `iters` calls after `warmup`.
double seconds_per_call(const std::function<void()>& fn, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) fn();
  synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) fn();
  synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
}

const char* dtype_name(at::ScalarType t) { return t == at::kBFloat16 ? "bf16" : t == at::kHalf ? "fp16" : "fp32"; }

std::string device_name() {
#ifdef DTENSOR_CALIBRATE_CUDA
  if (g_device.is_cuda()) return at::cuda::getCurrentDeviceProperties()->name;
#endif
  return g_device.str();
}

// The matmul shapes of a Llama-style layer (tokens M by the hidden, MLP and
// output projections N x K of 8B/70B under TP 1..8), from small to large.
struct MatmulShape {
  int64_t m, n, k;
};
std::vector<MatmulShape> matmul_shapes() {
  if (g_quick) return {{64, 64, 64}, {128, 256, 64}};
  std::vector<MatmulShape> shapes;
  for (int64_t m : {1024, 4096, 16384}) {
    for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{
             {1024, 4096}, {4096, 4096}, {14336, 4096}, {4096, 14336}, {1792, 4096}, {4096, 1792},
             {8192, 8192}, {28672, 8192}, {8192, 28672}, {3584, 8192}, {8192, 3584}}) {
      shapes.push_back({m, n, k});
    }
  }
  return shapes;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      g_quick = true;
    } else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      g_device = c10::Device(argv[++i]);
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr, "calibrate_gpu: unknown option %s\nusage: calibrate_gpu OUT.calib [--device cpu] [--quick]\n",
                   argv[i]);
      return 2;
    } else {
      out_path = argv[i];
    }
  }
  if (out_path.empty()) {
    std::fprintf(stderr, "usage: calibrate_gpu OUT.calib [--device cpu] [--quick]\n");
    return 2;
  }
  if (g_device.is_cuda() && !torch::cuda::is_available()) {
    std::printf("no GPU: calibrate_gpu needs one (or --device cpu)\n");
    return 77;
  }
  at::globalContext().setAllowTF32CuBLAS(false);  // fp32 rows are fp32, not TF32
  const int warmup = g_quick ? 1 : 3, iters = g_quick ? 2 : 10;
  std::ofstream out(out_path);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  out << "# Written by calibrate_gpu (tools/calibrate_gpu.sh); Note [Calibration file format] in planner/calibration.h\n"
      << "gpu " << device_name() << "\n"
      << "source calibrate_gpu, LibTorch " << TORCH_VERSION << ", " << date << (g_quick ? ", --quick" : "") << "\n";

  // Memory bandwidth: a copy (read + write) and an add (2 reads + a write).
  const int64_t elems = g_quick ? (1 << 16) : (256LL << 20);  // 1 GiB of fp32
  at::Tensor a = at::rand({elems}, at::TensorOptions().device(g_device)), b = at::rand_like(a), c = at::empty_like(a);
  const double copy_s = seconds_per_call([&] { c.copy_(a); }, warmup, iters);
  const double add_s = seconds_per_call([&] { at::add_out(c, a, b); }, warmup, iters);
  const double bytes = static_cast<double>(elems) * 4;
  out << "hbm_gbps " << 2 * bytes / copy_s / 1e9 << "   # copy\n";
  out << "pointwise_gbps " << 3 * bytes / add_s / 1e9 << "   # add\n";
  std::printf("copy %.0f GB/s, add %.0f GB/s\n", 2 * bytes / copy_s / 1e9, 3 * bytes / add_s / 1e9);
  a = b = c = at::Tensor();

  for (at::ScalarType dtype : {at::kBFloat16, at::kFloat}) {
    for (const MatmulShape& s : matmul_shapes()) {
      const auto options = at::TensorOptions().dtype(dtype).device(g_device);
      at::Tensor x = at::randn({s.m, s.k}, options), w = at::randn({s.k, s.n}, options), y = at::empty({s.m, s.n}, options);
      const double sec = seconds_per_call([&] { at::mm_out(y, x, w); }, warmup, iters);
      const double tflops = 2.0 * s.m * s.n * s.k / sec / 1e12;
      out << "matmul " << dtype_name(dtype) << " " << s.m << " " << s.n << " " << s.k << " " << tflops << "\n";
      std::printf("matmul %s %lld x %lld x %lld: %.1f TFLOP/s\n", dtype_name(dtype), static_cast<long long>(s.m),
                  static_cast<long long>(s.n), static_cast<long long>(s.k), tflops);
    }
  }

  // Causal attention, [B, H, L, D]: forward 2 * 2 * B H L^2 D / 2 FLOPs (half
  // the scores are masked), backward 2.5x the forward.
  const at::ScalarType attention_dtype = g_device.is_cuda() ? at::kBFloat16 : at::kFloat;
  for (int64_t l : g_quick ? std::vector<int64_t>{64} : std::vector<int64_t>{2048, 8192}) {
    const int64_t batch = g_quick ? 1 : 16384 / l, heads = g_quick ? 2 : 32, dim = g_quick ? 16 : 128;
    const auto options = at::TensorOptions().dtype(attention_dtype).device(g_device);
    at::Tensor q = at::randn({batch, heads, l, dim}, options).requires_grad_(true);
    at::Tensor k = at::randn({batch, heads, l, dim}, options).requires_grad_(true);
    at::Tensor v = at::randn({batch, heads, l, dim}, options).requires_grad_(true);
    at::Tensor grad = at::randn({batch, heads, l, dim}, options);
    const double flops = 2.0 * batch * heads * l * l * dim;  // causal forward
    double fwd_s = 0;
    {
      at::NoGradGuard no_grad;
      fwd_s = seconds_per_call([&] { at::scaled_dot_product_attention(q, k, v, {}, 0.0, true); }, warmup, iters);
    }
    const double both_s = seconds_per_call(
        [&] {
          at::Tensor o = at::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
          o.backward(grad);
        },
        warmup, iters);
    const double bwd_s = std::max(both_s - fwd_s, 1e-9);
    out << "attention " << dtype_name(attention_dtype) << " " << batch << " " << heads << " " << l << " " << dim << " "
        << flops / fwd_s / 1e12 << " " << 2.5 * flops / bwd_s / 1e12 << "\n";
    std::printf("attention %s B %lld H %lld L %lld D %lld: forward %.1f, backward %.1f TFLOP/s\n",
                dtype_name(attention_dtype), static_cast<long long>(batch), static_cast<long long>(heads),
                static_cast<long long>(l), static_cast<long long>(dim), flops / fwd_s / 1e12,
                2.5 * flops / bwd_s / 1e12);
  }

  // An Adam step over fp32 parameters (LibTorch's per-tensor loop: 64 tensors).
  const int64_t per_tensor = g_quick ? 1024 : (4 << 20);
  std::vector<at::Tensor> params;
  for (int i = 0; i < 64; ++i) {
    at::Tensor p = at::randn({per_tensor}, at::TensorOptions().device(g_device)).requires_grad_(true);
    p.mutable_grad() = at::randn_like(p);
    params.push_back(p);
  }
  torch::optim::Adam adam(params, torch::optim::AdamOptions(1e-3));
  const double adam_s = seconds_per_call([&] { adam.step(); }, warmup, iters);
  const double us_per_mparam = adam_s * 1e6 / (64.0 * per_tensor / 1e6);
  out << "adam_us_per_mparam " << us_per_mparam << "\n";
  std::printf("adam %.1f us per million parameters\n", us_per_mparam);
  out.close();
  std::printf("calibrate_gpu: wrote %s\n", out_path.c_str());
  return out.good() ? 0 : 1;
}
