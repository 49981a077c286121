// The machine a plan runs on: an alpha-beta link per mesh dim name, the
// accelerator's peak matmul rate and memory bandwidth, and its memory cap.
// Plain C++ (no LibTorch). See Note [Topology file format].
//   Topology t = default_topology();                 // H100-like, tp on NVLink
//   Topology t = parse_topology(read_text("cluster.topo"));
//   t.link("dp").collective_us(1 << 20, /*ring_steps=*/7);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "layout/comm_cost.h"
#include "planner/calibration.h"

namespace dtensor::planner {

// Note [Topology file format]
// A text file, one setting per line, '#' starts a comment:
//   peak_tflops 989          # dense matmul peak of one accelerator, TFLOP/s
//   hbm_gbps 3350            # memory bandwidth, GB/s (pointwise ops by bytes)
//   memory_gib 80            # memory cap per rank, GiB
//   link tp 3 450            # mesh dim "tp": latency 3 us, 450 GB/s per rank
//   link dp 10 50            # mesh dim "dp": latency 10 us, 50 GB/s per rank
//   link * 10 50             # any other mesh dim
//   link ep 10 50 1.5        # optional 4th number: latency per ring step, us
//                            # (default 0.5; Note [Comm cost model])
//   cuda_context_gib 0.5     # device memory outside PyTorch's allocator: the
//                            # CUDA context, cuBLAS/cuDNN workspaces, kernels
//   nccl_gib_per_communicator 0.5   # NCCL's buffers of each communicator a rank uses
//   allocator expandable     # PYTORCH_CUDA_ALLOC_CONF of the runs: "expandable"
//                            # (expandable_segments:True, the default here) or
//                            # "segments" (PyTorch's own default)
//   overlap_slowdown 0.189   # compute runs this much slower while a collective
//                            # overlaps it (0: not at all)
// The last three give memory as the GPU sees it (Note [Device memory] in
// planner/estimate.cc); 0 is allowed for the two sizes.
// Lines may come in any order; what a file leaves out keeps the default.
// The defaults (default_topology) are an H100 SXM node of 8 GPUs: dense BF16
// peak 989 TFLOP/s, HBM3 3.35 TB/s, 80 GiB; "tp" on NVLink (450 GB/s per
// direction, 3 us), every other dim across nodes on one 400 Gb/s NIC per GPU
// (50 GB/s, 10 us). They are datasheet numbers, not measurements: a step
// estimate from them is a lower bound (100% of peak), useful to rank plans.
// The device memory defaults are assumptions from user reports (NVIDIA/nccl
// issue 1685: an 8 x H100 rank held 1.06 GB outside PyTorch with its NCCL
// communicator up, before its first all_to_all): 0.5 GiB of CUDA context and
// 0.5 GiB per communicator. The allocator: expandable segments, as
// torchtitan launches its runs (run_train.sh) and as PyTorch recommends
// against fragmentation; with PyTorch's default segments the allocator model
// finds FSDP runs of deep models fragmenting into many partly used segments
// (Llama 3 70B with full AC on 64 ranks: 138 GiB reserved for 48 GiB live),
// which a real run would meet with cache flushes or run out of memory.
// The overlap slowdown: NCCL's kernels take SMs and memory bandwidth from the
// compute they overlap; 0.189 is the mean slowdown of overlapped compute Lee
// et al. measured on A100 and H100 (and MI250, MI210) training GPT and Llama
// models ("Characterizing Compute-Communication Overlap in GPU-Accelerated
// Distributed Deep Learning", arXiv 2507.03114, 2025: mean 18.9%, at most
// 40%), one figure for every GPU kind (Note [Step time estimate] in
// planner/estimate.cc).
// GB means 1e9 bytes, GiB 2^30.

struct Topology {
  double peak_tflops = 989.0;
  double hbm_gbps = 3350.0;
  double memory_gib = 80.0;
  /// Device memory outside PyTorch's caching allocator (Note [Device memory]).
  double cuda_context_gib = 0.5;
  double nccl_gib_per_communicator = 0.5;
  /// PyTorch's caching allocator with expandable_segments:True.
  bool expandable_segments = true;
  /// Compute is 1 + this times slower while a collective overlaps it.
  double overlap_slowdown = 0.189;
  /// Mesh dim name -> its link; "*" is the link of dims not listed.
  std::map<std::string, CommCostModel> links = {{"tp", CommCostModel{3.0, 450.0}},
                                                {"*", CommCostModel{10.0, 50.0}}};
  /// What the accelerator achieved when measured (tools/calibrate_gpu.sh):
  /// with it, each matmul runs at the measured rate of its nearest shape and
  /// memory-bound ops at the measured add bandwidth, instead of the peaks
  /// above (Note [Step time estimate]). Not part of the topology file (the
  /// CLI's --calibration FILE).
  std::shared_ptr<const Calibration> calibration;

  /// The link of mesh dim `dim_name` ("*" when not listed).
  const CommCostModel& link(const std::string& dim_name) const;
  /// memory_gib in bytes.
  int64_t memory_cap_bytes() const;
};

/// The defaults of Note [Topology file format].
Topology default_topology();

/// The allocator mode as the topology file and the report's JSON spell it:
/// "expandable" (expandable_segments:True) or "segments".
const char* allocator_mode_name(bool expandable_segments);
/// The mode allocator_mode_name spells `name` as (true: expandable
/// segments); nullopt for any other name.
std::optional<bool> parse_allocator_mode(const std::string& name);

/// Parses Note [Topology file format] over the defaults. Throws
/// std::invalid_argument naming the line and what is wrong (unknown key,
/// missing or non-positive number). Example: parse_topology("link dp 8 25\n").
Topology parse_topology(const std::string& text);

/// The settings as the file format writes them (parse_topology(to_text(t)) == t).
std::string topology_text(const Topology& topology);

}  // namespace dtensor::planner
