// What an accelerator achieves on the kernels the planner costs, as measured
// by tools/calibrate_gpu.sh (tools/calibrate/calibrate_gpu.cc) on the GPU at
// hand: matmul rates per shape and dtype, causal attention, memory bandwidth,
// an Adam step. Plain C++ (no LibTorch). See Note [Calibration file format].
//   Calibration c = parse_calibration(read_text("h100.calib"));
//   c.matmul_tflops("bf16", 4096, 14336, 4096);   // the measured shape nearest to it
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtensor::planner {

// Note [Calibration file format]
// A text file, one measurement per line, '#' starts a comment:
//   gpu NVIDIA H100 80GB HBM3              # what was measured (free text)
//   source calibrate_gpu, LibTorch 2.11.0, 2026-11-27   # how and when (free text)
//   hbm_gbps 2950                          # a device-to-device copy, bytes read + written, GB/s
//   pointwise_gbps 2800                    # an add of two tensors, 2 reads + 1 write, GB/s
//   matmul bf16 4096 14336 4096 690.5      # dtype M N K: achieved TFLOP/s of [M, K] x [K, N]
//   attention bf16 8 32 2048 128 410 330   # dtype B H L D: causal forward, backward TFLOP/s
//   adam_us_per_mparam 95.2                # an Adam step, microseconds per million fp32 parameters
// Lines may come in any order; every matmul line is kept (one per shape).
// GB means 1e9 bytes. The estimate (Note [Step time estimate]) reads the
// matmul rates, the attention rates (fused attention kernels, by sequence
// length) and pointwise_gbps; the Adam row is not read yet.

struct MatmulRate {
  std::string dtype;  // "bf16", "fp16", "fp32"
  int64_t m = 0, n = 0, k = 0;
  double tflops = 0;
};

struct AttentionRate {
  std::string dtype;
  int64_t batch = 0, heads = 0, seq = 0, head_dim = 0;
  double forward_tflops = 0, backward_tflops = 0;
};

struct Calibration {
  std::string gpu;
  std::string source;
  double hbm_gbps = 0;
  double pointwise_gbps = 0;
  double adam_us_per_mparam = 0;
  std::vector<MatmulRate> matmuls;
  std::vector<AttentionRate> attention;

  /// The rate of the measured `dtype` matmul nearest to M x N x K (distance:
  /// the sum of |log| ratios of the three sizes). Throws std::invalid_argument
  /// when no matmul of `dtype` was measured.
  double matmul_tflops(const std::string& dtype, int64_t m, int64_t n, int64_t k) const;
  /// The causal attention rate (forward or backward) of the measured `dtype`
  /// row nearest to sequence length `seq` and head dim `head_dim` (the same
  /// distance), or nullopt when no attention of `dtype` was measured.
  std::optional<double> attention_tflops(const std::string& dtype, int64_t seq, int64_t head_dim, bool forward) const;
};

/// Parses Note [Calibration file format]. Throws std::invalid_argument naming
/// the line and what is wrong (unknown key, a missing or non-positive number).
Calibration parse_calibration(const std::string& text);

}  // namespace dtensor::planner
