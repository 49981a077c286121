// Plan estimates: totals of a traced step, per-layer scaling, step time.
#include "planner/estimate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

#include "layout/collective_origin.h"
#include "trace/comm_estimate.h"

namespace dtensor::planner {

// Note [Step time estimate]
// Compute: every local op the step ran on this rank (CommDebugMode with
// record_local_ops sees the local kernels inside DTensor ops, with local
// shapes). The matmul family (aten::mm, addmm, bmm, baddbmm) counts 2mkn
// FLOPs over Topology::peak_tflops; the fused attention kernels
// (_scaled_dot_product_{flash,efficient,cudnn}_attention and their
// backwards) count causal attention's FLOPs, 2 B H L^2 D forward and 2.5
// times that backward (calibrate_gpu's convention), over the peak too, or at
// the calibration's attention rate of the nearest sequence length (without
// one, its matmul rate for [L, D] x [D, L]); memory-bound kernels (pointwise,
// softmax, norms, embedding, their backwards, optimizer arithmetic: see
// kMemoryBoundOps) count 2x their input bytes (read + write) over
// Topology::hbm_gbps. Composite ops (matmul, linear, layer_norm, ...) are not
// counted: their kernels are. With a calibration (Topology::calibration,
// measured by tools/calibrate_gpu.sh), each matmul runs at the measured rate
// of the nearest measured shape of the model's dtype (a bmm as one matmul of
// batch * m rows) and memory-bound bytes at the measured add bandwidth: what
// the accelerator achieves rather than its datasheet, so small and skinny
// matmuls cost what they do.
// Comm: each recorded collective costs the alpha-beta time of its mesh dim's
// link (Topology::link) on its ring bytes (trace/comm_estimate.h), 0 for
// groups of one rank.
// Step: micro_steps * (forward + backward) + update. Serial: compute plus all
// collectives. Overlap: the micro-step collectives of tensor / sequence
// parallelism feed the very next op and stay on the critical path; FSDP's
// (the micro-step collectives over dp: each layer's all_gather, prefetched
// while the previous layer computes, and its reduce_scatter, issued while the
// next layer's backward runs) hide behind the micro-steps' compute but for
// what none can hide: each micro-step's first all-gather (no op runs before
// the parameters it gathers: the root's) and its last gradient reduction on
// each mesh dim (no op runs after it; the root's; HSDP's all_reduce over rep
// after it), the ends; so max(ends, their time - that compute) is exposed.
// The update's collectives (the dp gradient all_reduce) can hide behind the
// last micro-step's backward, as DDP's bucketed all_reduce does, so only
// max(0, update comm - backward compute) is exposed. What is hidden is not
// free: NCCL's kernels take SMs and memory bandwidth, and compute overlapped
// by a collective runs 1 + s times slower (s = Topology::overlap_slowdown, a
// published mean); over hidden time H the step grows by H s / (1 + s) (the
// compute done in H is H / (1 + s)). The longer compute this makes could hide
// more of a collective; that is not counted. The estimates stay lower bounds
// (the calibrated rates, perfect links, no launch gaps): they rank plans,
// they do not promise times.

// Note [Per-layer scaling]
// Tracing a step costs time proportional to the layers traced (~10 ms per
// layer on meta tensors). Every layer of these models is identical, so each
// additive quantity of a step (bytes of parameters, gradients, optimizer
// state, activations at the peak, collectives and their bytes, FLOPs) is
// a + (L - 2) * (b - a) for the traces a (2 layers) and b (3 layers). The
// collective counts and bytes so obtained are exactly what a full trace
// would record (each layer records the same collectives); the peak is exact
// when it scales with depth (activations kept for backward). Not from 1 and
// 2 layers: a 1-layer model's peak lacks what a layer next to another layer
// holds (under fully_shard, the previous layer's parameters gathered ahead
// during backward: Llama 70B's 1.6 GiB, which made the per-layer slope 14
// times too large). The peak's location is the 3-layer trace's. With activation checkpointing of every layer (ac=full, ac=op) the
// layers are still identical. With every n-th layer checkpointed (ac=n) they
// are of two kinds: the step is extrapolated twice, with no layer and with
// every layer checkpointed, and blended by the fraction of checkpointed
// layers (blend_totals): exact for the additive quantities; for the peak an
// approximation (the activations kept per layer of each kind add up, while
// one checkpointed layer's recomputation is counted at its share).

namespace {

constexpr const char* kMicroStep = "micro-step";
constexpr const char* kUpdate = "update";

std::string base_name(const std::string& op) {
  std::string n = op.rfind("aten::", 0) == 0 ? op.substr(6) : op;
  return n.substr(0, n.find('.'));
}

double product(const std::vector<int64_t>& shape) {
  double p = 1;
  for (int64_t s : shape) p *= static_cast<double>(s);
  return p;
}

// A matmul-family kernel as one [m, k] x [k, n] product (a bmm's batch
// folded into m); flops < 0 for other kernels.
struct MatmulShape {
  double flops = -1;
  int64_t m = 0, n = 0, k = 0;
};

MatmulShape matmul_shape(const std::string& name, const std::vector<std::vector<int64_t>>& in) {
  const std::string n = base_name(name);
  auto mm = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    if (a.size() != 2 || b.size() != 2) return MatmulShape{0};
    return MatmulShape{2.0 * static_cast<double>(a[0]) * static_cast<double>(a[1]) * static_cast<double>(b[1]), a[0],
                       b[1], a[1]};
  };
  auto bmm = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    if (a.size() != 3 || b.size() != 3) return MatmulShape{0};
    return MatmulShape{2.0 * static_cast<double>(a[0]) * static_cast<double>(a[1]) * static_cast<double>(a[2]) *
                           static_cast<double>(b[2]),
                       a[0] * a[1], b[2], a[2]};
  };
  if (n == "mm" && in.size() >= 2) return mm(in[0], in[1]);
  if (n == "addmm" && in.size() >= 3) return mm(in[1], in[2]);
  if (n == "bmm" && in.size() >= 2) return bmm(in[0], in[1]);
  if (n == "baddbmm" && in.size() >= 3) return bmm(in[1], in[2]);
  return MatmulShape{};
}

// The calibration's name of the model's dtype, by element size.
const char* calibrated_dtype(int64_t element_size) { return element_size == 2 ? "bf16" : "fp32"; }

// A fused attention kernel (Note [Step time estimate]): its causal FLOPs,
// whether it is the forward, and its sequence length and head dim; flops 0
// for other kernels. The planner's programs run causal attention.
struct AttentionShape {
  double flops = 0;
  bool forward = true;
  int64_t seq = 0, head_dim = 0;
};

AttentionShape attention_shape(const std::string& name, const std::vector<std::vector<int64_t>>& in) {
  const std::string n = base_name(name);
  const std::string prefix = "_scaled_dot_product_";
  if (n.compare(0, prefix.size(), prefix) != 0 || n.find("attention") == std::string::npos) return {};
  const bool forward = n.size() < 9 || n.compare(n.size() - 9, 9, "_backward") != 0;
  // Forward: (query, key, value, ...); backward: (grad_out, query, key, value, ...).
  const size_t q = forward ? 0 : 1;
  if (in.size() < q + 2 || in[q].size() != 4 || in[q + 1].size() != 4) return {};
  const std::vector<int64_t>& query = in[q];
  const std::vector<int64_t>& key = in[q + 1];
  const double causal_forward = 2.0 * static_cast<double>(query[0]) * static_cast<double>(query[1]) *
                                static_cast<double>(query[2]) * static_cast<double>(key[2]) * static_cast<double>(query[3]);
  return AttentionShape{forward ? causal_forward : 2.5 * causal_forward, forward, query[2], query[3]};
}

// Microseconds of one matmul, of one fused attention kernel, and of `bytes`
// of memory-bound traffic, on `topology`'s accelerator (Note [Step time estimate]).
double matmul_us(const MatmulShape& s, const Topology& topology, int64_t element_size) {
  if (s.flops <= 0) return 0;
  const double tflops = topology.calibration
                            ? topology.calibration->matmul_tflops(calibrated_dtype(element_size), s.m, s.n, s.k)
                            : topology.peak_tflops;
  return s.flops / (tflops * 1e6);
}
double attention_us(const AttentionShape& a, const Topology& topology, int64_t element_size) {
  if (!topology.calibration) return a.flops / (topology.peak_tflops * 1e6);
  const char* dtype = calibrated_dtype(element_size);
  // Without a measured attention row, the rate of its matmuls' shape ([L, D] x [D, L]).
  const std::optional<double> tflops = topology.calibration->attention_tflops(dtype, a.seq, a.head_dim, a.forward);
  return a.flops / (tflops.value_or(topology.calibration->matmul_tflops(dtype, a.seq, a.seq, a.head_dim)) * 1e6);
}
double memory_bound_us(double bytes, const Topology& topology) {
  const double gbps = topology.calibration && topology.calibration->pointwise_gbps > 0
                          ? topology.calibration->pointwise_gbps
                          : topology.hbm_gbps;
  return bytes / (gbps * 1e3);
}

const std::set<std::string>& memory_bound_ops() {
  static const std::set<std::string> kMemoryBoundOps = {
      "add", "add_", "sub", "mul", "mul_", "div", "div_", "neg", "sqrt", "rsqrt", "addcmul_", "addcdiv_", "lerp_",
      "silu", "silu_backward", "gelu", "gelu_backward", "sigmoid", "_softmax", "_softmax_backward_data",
      "_log_softmax", "_log_softmax_backward_data", "native_layer_norm", "native_layer_norm_backward",
      "embedding", "embedding_dense_backward", "nll_loss_forward", "nll_loss_backward", "masked_fill",
      "masked_fill_", "where", "copy_", "fill_", "zero_"};
  return kMemoryBoundOps;
}

// add.Scalar, mul.Scalar, ... wrap the scalar and call the .Tensor overload,
// which is recorded too.
bool is_scalar_wrapper(const std::string& name) {
  const std::string suffix = ".Scalar";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// FLOPs, bytes and their time of one trace's local ops, by phase.
struct PhaseCompute {
  double flops = 0, bytes = 0, us = 0;
};

void add_ops(const trace::CommTrace& trace, int64_t element_size, const Topology& topology, PhaseCompute* fwd,
             PhaseCompute* bwd) {
  for (const trace::OpRecord& op : trace.operations) {
    if (op.dtensor) continue;  // its local kernels are recorded as local ops
    PhaseCompute* phase = op.phase == trace::Phase::kForward ? fwd : bwd;
    const MatmulShape mm = matmul_shape(op.name, op.input_shapes);
    const AttentionShape attention = attention_shape(op.name, op.input_shapes);
    if (mm.flops >= 0) {
      phase->flops += mm.flops;
      phase->us += matmul_us(mm, topology, element_size);
    } else if (attention.flops > 0) {
      phase->flops += attention.flops;
      phase->us += attention_us(attention, topology, element_size);
    } else if (memory_bound_ops().count(base_name(op.name)) && !is_scalar_wrapper(op.name)) {
      double elems = 0;
      for (const auto& s : op.input_shapes) elems += product(s);
      const double bytes = 2.0 * elems * static_cast<double>(element_size);
      phase->bytes += bytes;
      phase->us += memory_bound_us(bytes, topology);
    }
  }
}

// One micro-step's FSDP collectives no compute can hide (StepTotals::fsdp_ends_us).
double fsdp_ends_us(const trace::CommTrace& trace, const Topology& topology) {
  const trace::CollectiveRecord* first_gather = nullptr;
  std::map<std::string, const trace::CollectiveRecord*> last_reduction;  // per mesh dim
  for (const trace::CollectiveRecord& r : trace.collectives) {
    if (!r.origin) continue;
    if (r.origin->cause == origin_cause::kFsdpUnshard && r.phase == trace::Phase::kForward) {
      if (!first_gather || r.seq < first_gather->seq) first_gather = &r;
    } else if (r.origin->cause == origin_cause::kFsdpReduceGrad && r.phase == trace::Phase::kBackward) {
      const trace::CollectiveRecord*& last = last_reduction[r.mesh_dim_name];
      if (!last || r.seq > last->seq) last = &r;
    }
  }
  auto time = [&](const trace::CollectiveRecord& r) {
    return trace::estimate_collective_us(r, topology.link(r.mesh_dim_name.empty() ? "?" : r.mesh_dim_name));
  };
  double us = first_gather ? time(*first_gather) : 0;
  for (const auto& [dim, r] : last_reduction) us += time(*r);
  return us;
}

void add_comm(const trace::CommTrace& trace, const char* phase, int64_t times, const Topology& topology,
              std::map<std::tuple<std::string, std::string, std::string>, CommRow>* rows) {
  for (const trace::CollectiveRecord& r : trace.collectives) {
    const std::string dim = r.mesh_dim_name.empty() ? "?" : r.mesh_dim_name;
    CommRow& row = (*rows)[{phase, r.kind, dim}];
    row.kind = r.kind, row.mesh_dim = dim, row.phase = phase;
    row.count += times;
    row.bytes += times * r.bytes;
    row.ring_bytes += times * trace::ring_bytes_per_rank(r);
    row.time_us += static_cast<double>(times) * trace::estimate_collective_us(r, topology.link(dim));
  }
}

int64_t micro_steps_of(const ModelConfig& model, const PlanConfig& plan) {
  return model.batch / (plan.mesh.size_of("rep") * plan.mesh.size_of("dp") * plan.micro_batch);
}

}  // namespace

StepTotals step_totals(const StepMeasure& m, const ModelConfig& model, const PlanConfig& plan,
                       const Topology& topology) {
  StepTotals t;
  t.parameter_bytes = m.parameter_bytes;
  t.gradient_bytes = m.gradient_bytes;
  t.optimizer_bytes = m.optimizer_bytes;
  t.peak_bytes = m.peak_bytes;
  t.peak_location = m.peak_location;
  std::map<std::tuple<std::string, std::string, std::string>, CommRow> rows;
  add_comm(m.forward_backward, kMicroStep, micro_steps_of(model, plan), topology, &rows);
  add_comm(m.update, kUpdate, 1, topology, &rows);
  for (auto& [key, row] : rows) t.comm.push_back(row);
  const int64_t es = model.element_size();
  PhaseCompute forward, backward, update;
  add_ops(m.forward_backward, es, topology, &forward, &backward);
  add_ops(m.update, es, topology, &update, &update);
  t.forward_flops = forward.flops, t.backward_flops = backward.flops, t.update_flops = update.flops;
  t.forward_pointwise_bytes = forward.bytes, t.backward_pointwise_bytes = backward.bytes;
  t.update_pointwise_bytes = update.bytes;
  t.forward_compute_us = forward.us, t.backward_compute_us = backward.us, t.update_compute_us = update.us;
  t.fsdp_ends_us = fsdp_ends_us(m.forward_backward, topology);
  t.kept_bytes = m.kept_bytes;
  if (m.allocations) t.allocator = replay_allocations(*m.allocations, topology.expandable_segments);
  return t;
}

AllocatorPeaks replay_allocations(const std::vector<AllocationEvent>& log, bool expandable_segments) {
  CachingAllocatorModel allocator(expandable_segments);
  for (const AllocationEvent& event : log) {
    if (event.is_free) {
      allocator.free(event.id);
    } else {
      allocator.allocate(event.id, event.bytes, event.stream);
    }
  }
  return allocator.peaks();
}

StepTotals extrapolate_layers(const StepTotals& a, const StepTotals& b, int64_t layers) {
  if (a.comm.size() != b.comm.size()) {
    throw std::logic_error("planner: the 2- and 3-layer traces issue different kinds of collectives; "
                           "trace every layer (--trace-layers 0)");
  }
  for (size_t i = 0; i < a.comm.size(); ++i) {
    const CommRow &x = a.comm[i], &y = b.comm[i];
    if (x.kind != y.kind || x.mesh_dim != y.mesh_dim || x.phase != y.phase) {
      throw std::logic_error("planner: the 2- and 3-layer traces' collectives differ (" + x.kind + " over " +
                             x.mesh_dim + " vs " + y.kind + " over " + y.mesh_dim + "); trace every layer");
    }
  }
  // a + (L - 2) * (b - a) is (1 - w) a + w b with w = L - 2 (exact in
  // doubles for these integers, far below 2^53).
  return blend_totals(a, b, static_cast<double>(layers - 2));
}

StepTotals blend_totals(const StepTotals& a, const StepTotals& b, double w) {
  auto mix = [w](double x, double y) { return (1 - w) * x + w * y; };
  auto mixi = [&](int64_t x, int64_t y) {
    return static_cast<int64_t>(std::llround(mix(static_cast<double>(x), static_cast<double>(y))));
  };
  StepTotals t;
  t.parameter_bytes = mixi(a.parameter_bytes, b.parameter_bytes);
  t.gradient_bytes = mixi(a.gradient_bytes, b.gradient_bytes);
  t.optimizer_bytes = mixi(a.optimizer_bytes, b.optimizer_bytes);
  if (a.peak_bytes && b.peak_bytes) t.peak_bytes = mixi(*a.peak_bytes, *b.peak_bytes);
  t.peak_location = w < 0.5 ? a.peak_location : b.peak_location;
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<const CommRow*, const CommRow*>> rows;
  for (const CommRow& r : a.comm) rows[{r.phase, r.kind, r.mesh_dim}].first = &r;
  for (const CommRow& r : b.comm) rows[{r.phase, r.kind, r.mesh_dim}].second = &r;
  for (const auto& [key, pair] : rows) {
    const CommRow none;
    const CommRow& x = pair.first ? *pair.first : none;
    const CommRow& y = pair.second ? *pair.second : none;
    CommRow r = pair.first ? x : y;
    r.count = mixi(x.count, y.count);
    r.bytes = mixi(x.bytes, y.bytes);
    r.ring_bytes = mixi(x.ring_bytes, y.ring_bytes);
    r.time_us = mix(x.time_us, y.time_us);
    t.comm.push_back(r);
  }
  t.forward_flops = mix(a.forward_flops, b.forward_flops);
  t.backward_flops = mix(a.backward_flops, b.backward_flops);
  t.update_flops = mix(a.update_flops, b.update_flops);
  t.forward_pointwise_bytes = mix(a.forward_pointwise_bytes, b.forward_pointwise_bytes);
  t.backward_pointwise_bytes = mix(a.backward_pointwise_bytes, b.backward_pointwise_bytes);
  t.update_pointwise_bytes = mix(a.update_pointwise_bytes, b.update_pointwise_bytes);
  t.forward_compute_us = mix(a.forward_compute_us, b.forward_compute_us);
  t.backward_compute_us = mix(a.backward_compute_us, b.backward_compute_us);
  t.update_compute_us = mix(a.update_compute_us, b.update_compute_us);
  t.fsdp_ends_us = mix(a.fsdp_ends_us, b.fsdp_ends_us);
  if (a.kept_bytes && b.kept_bytes) t.kept_bytes = mixi(*a.kept_bytes, *b.kept_bytes);
  auto mix_peaks = [&](const std::optional<AllocatorPeaks>& x, const std::optional<AllocatorPeaks>& y) {
    std::optional<AllocatorPeaks> p;
    if (x && y) p = AllocatorPeaks{mixi(x->allocated, y->allocated), mixi(x->reserved, y->reserved), mixi(x->pinned, y->pinned)};
    return p;
  };
  t.allocator = mix_peaks(a.allocator, b.allocator);
  return t;
}

// Note [Device memory]
// The trace's peak is the live bytes (torch.cuda.max_memory_allocated()).
// The GPU holds more (what nvidia-smi shows):
// - the caching allocator's cache: the rank's allocation log replayed
//   through the allocator model (Note [Caching allocator model]), scaled
//   per layer like every other total (Note [Per-layer scaling]), in the
//   topology's allocator mode. It gives what the allocator reserves
//   (torch.cuda.max_memory_reserved(), what torchtitan's memory figure is)
//   and the least it can shrink to by freeing cached blocks (the segments,
//   or pages, that hold a live block);
// - NCCL's buffers: Topology::nccl_gib_per_communicator for each mesh dim
//   the rank communicates over (one process group each, as DeviceMesh makes
//   them), plus the pipeline's send/recv group;
// - the CUDA context: Topology::cuda_context_gib.
// The allocator's figures are at least the live peak (their per-layer
// extrapolation steps in pages and segments, so a slope can come out below
// the live bytes' one).
// The plan fits when the least (pinned + NCCL + context) fits the device.
// When the reserve would not fit beside NCCL and the context, PyTorch frees
// its cache and retries the cudaMalloc: the run fits but pays for it
// (DeviceMemory::cache_flushed), and its reserve is what room there is.
// Streams are modelled as far as the allocation log names them (FSDP's
// collective buffers); cross-stream waits are not (Note [Caching allocator
// model]), so a real run can reserve more.

namespace {

DeviceMemory device_memory(const AllocatorPeaks& peaks, int64_t live_bytes, int64_t extra_bytes,
                           int64_t communicators, int64_t cap_bytes, const Topology& topology) {
  const double gib = 1073741824.0;
  DeviceMemory d;
  d.expandable_segments = topology.expandable_segments;
  d.allocated = std::max(peaks.allocated + extra_bytes, live_bytes);
  d.pinned = std::max(peaks.pinned + extra_bytes, d.allocated);
  d.reserved = std::max(peaks.reserved + extra_bytes, d.pinned);
  d.communicators = communicators;
  d.nccl = static_cast<int64_t>(std::llround(static_cast<double>(communicators) * topology.nccl_gib_per_communicator * gib));
  d.cuda_context = static_cast<int64_t>(std::llround(topology.cuda_context_gib * gib));
  const int64_t room = cap_bytes - d.nccl - d.cuda_context;
  if (d.reserved > room) {
    d.cache_flushed = true;
    d.reserved = std::max(room, d.pinned);
  }
  return d;
}

// Mesh dims the rank's collectives ran over (a communicator each).
int64_t communicators_of(const StepTotals& totals) {
  std::set<std::string> dims;
  for (const CommRow& r : totals.comm) {
    if (r.count > 0) dims.insert(r.mesh_dim);
  }
  return static_cast<int64_t>(dims.size());
}

std::optional<DeviceMemory> device_of(const StepTotals& totals, int64_t live_bytes, int64_t extra_bytes,
                                      int64_t extra_communicators, int64_t cap_bytes, const Topology& topology) {
  if (!totals.allocator) return std::nullopt;
  return device_memory(*totals.allocator, live_bytes, extra_bytes, communicators_of(totals) + extra_communicators, cap_bytes,
                       topology);
}

// What of FSDP's `comm_us` (its `ends_us` among it) `compute_us` does not
// hide (Note [Step time estimate]).
double exposed_fsdp_us(double comm_us, double ends_us, double compute_us) {
  return std::min(comm_us, std::max(ends_us, comm_us - compute_us));
}

// How much longer compute takes for hiding `hidden_us` of collectives.
double slowed_by_overlap_us(double hidden_us, const Topology& topology) {
  const double s = topology.overlap_slowdown;
  return std::max(0.0, hidden_us) * s / (1 + s);
}

}  // namespace

PlanEstimate estimate_from_totals(const StepTotals& totals, int64_t traced_layers, const ModelConfig& model,
                                  const PlanConfig& plan, const Topology& topology) {
  PlanEstimate e;
  e.model = model, e.plan = plan, e.topology = topology, e.totals = totals;
  e.traced_layers = traced_layers;
  e.micro_steps = micro_steps_of(model, plan);
  const int64_t static_bytes = totals.parameter_bytes + totals.gradient_bytes + totals.optimizer_bytes;
  if (totals.peak_bytes) e.activation_bytes = std::max<int64_t>(0, *totals.peak_bytes - static_bytes);
  e.total_bytes = totals.peak_bytes ? std::max(*totals.peak_bytes, static_bytes) : static_bytes;
  e.cap_bytes = topology.memory_cap_bytes();
  e.device = device_of(totals, e.total_bytes, 0, 0, e.cap_bytes, topology);
  const double n = static_cast<double>(e.micro_steps);
  const double backward_us = totals.backward_compute_us;
  e.compute_us = n * (totals.forward_compute_us + backward_us) + totals.update_compute_us;
  for (const CommRow& r : totals.comm) {
    // FSDP's (and HSDP's, over rep) collectives overlap compute; tp's block it.
    double& bucket = r.phase == kUpdate                         ? e.update_comm_us
                     : r.mesh_dim == "dp" || r.mesh_dim == "rep" ? e.prefetched_comm_us
                                                                  : e.blocking_comm_us;
    bucket += r.time_us;
  }
  const double micro_compute_us = n * (totals.forward_compute_us + backward_us);
  e.step_us_serial = e.compute_us + e.blocking_comm_us + e.prefetched_comm_us + e.update_comm_us;
  e.exposed_fsdp_comm_us = exposed_fsdp_us(e.prefetched_comm_us, n * totals.fsdp_ends_us, micro_compute_us);
  e.exposed_update_comm_us = std::max(0.0, e.update_comm_us - backward_us);
  e.overlap_slowdown_us = slowed_by_overlap_us(e.prefetched_comm_us - e.exposed_fsdp_comm_us, topology) +
                          slowed_by_overlap_us(e.update_comm_us - e.exposed_update_comm_us, topology);
  e.step_us_overlap = e.compute_us + e.blocking_comm_us + e.exposed_fsdp_comm_us + e.exposed_update_comm_us +
                      e.overlap_slowdown_us;
  return e;
}

namespace {

// One traced (and, for deep models, scaled) estimate of `plan` without a pp
// mesh dim: the whole model, or one pipeline stage of it.
PlanEstimate estimate_traced(const StepProgram& program, const ModelConfig& model, const PlanConfig& plan,
                             const Topology& topology, const EstimateOptions& options) {
  if (options.max_traced_layers <= 0 || model.layers <= std::max<int64_t>(options.max_traced_layers, 3)) {
    return estimate_from_totals(step_totals(trace_solo_step(program, model, plan, options.solo_device), model, plan, topology),
                                model.layers, model, plan, topology);
  }
  ModelConfig two = model, three = model;
  two.layers = 2, three.layers = 3;
  auto scaled = [&](const PlanConfig& p) {
    const StepTotals a = step_totals(trace_solo_step(program, two, p, options.solo_device), two, p, topology);
    const StepTotals b = step_totals(trace_solo_step(program, three, p, options.solo_device), three, p, topology);
    return extrapolate_layers(a, b, model.layers);
  };
  if (plan.checkpoint_every > 1 && !plan.checkpoint_ops) {
    // Every n-th layer checkpointed: the two kinds of layer scale apart
    // (Note [Per-layer scaling]).
    PlanConfig plain = plan, every = plan;
    plain.checkpoint_every = 0;
    every.checkpoint_every = 1;
    const double checkpointed = static_cast<double>(model.layers / plan.checkpoint_every);
    return estimate_from_totals(blend_totals(scaled(plain), scaled(every), checkpointed / static_cast<double>(model.layers)),
                                3, model, plan, topology);
  }
  return estimate_from_totals(scaled(plan), 3, model, plan, topology);
}

// Note [Pipeline stages]
// A plan with a "pp" mesh dim splits the layers into pp stages of layers / pp
// each (with v = PlanConfig::virtual_stages > 1, Megatron's interleaved
// 1F1B: each rank holds v chunks of layers / (pp v) layers). No pipeline
// runtime is traced: the first and the last stage are, each as its own solo
// step over the stage's dp x tp mesh (PlanConfig::stage): the first holds
// the embedding, the last the final norm, output and loss, each its share
// of the layers; a middle stage is the first without the embedding, so it
// is bounded by the first in memory and time. From those:
// - memory: a rank holds the activations its forwards keep for backward
//   (StepMeasure::kept_bytes, per micro-batch through all its layers) for
//   every micro-batch in flight, and the traced peak of one on top: peak +
//   (k - 1) * kept. 1F1B: the first rank has k = min(m, pp) micro-batches
//   in flight, the last 1; interleaved: the first (v pp + pp - 1) / v, the
//   last ((v - 1) pp + 1) / v, in units of all of a rank's layers (its
//   warm-up chunk forwards plus one);
// - time: one micro-batch on a rank costs its forward + backward compute,
//   its tp collectives and what of its FSDP collectives its compute does not
//   hide (Note [Step time estimate]), plus 2 v sends of the activations
//   (forward) and their gradient (backward) over the pp link, [micro, seq,
//   dim] (seq / tp with sequence parallelism); the slower of the two stages
//   sets the pace. A step is (m + (pp - 1) / v) such micro-batches (the
//   bubble is the (pp - 1) / v: fill and drain), then the update, whose
//   collectives hide behind the last backward as without pp.
// The estimate reports the rank that holds more memory (its totals and comm
// rows; the other's peak is in PipelineEstimate).
PlanEstimate estimate_pipeline(const StepProgram& program, const ModelConfig& model, const PlanConfig& plan,
                               const Topology& topology, const EstimateOptions& options) {
  const int64_t pp = plan.mesh.size_of("pp"), v = plan.virtual_stages, tp = plan.mesh.size_of("tp");
  PlanConfig stage_plan = plan;
  stage_plan.mesh = MeshConfig{};
  for (size_t i = 0; i < plan.mesh.names.size(); ++i) {
    if (plan.mesh.names[i] == "pp") continue;
    stage_plan.mesh.names.push_back(plan.mesh.names[i]);
    stage_plan.mesh.sizes.push_back(plan.mesh.sizes[i]);
  }
  stage_plan.virtual_stages = 1;
  ModelConfig stage_model = model;
  stage_model.layers = model.layers / pp;
  stage_plan.stage = PipelineStage::kFirst;
  const PlanEstimate first = estimate_traced(program, stage_model, stage_plan, topology, options);
  stage_plan.stage = PipelineStage::kLast;
  const PlanEstimate last = estimate_traced(program, stage_model, stage_plan, topology, options);

  const double m = static_cast<double>(first.micro_steps), p = static_cast<double>(pp), vs = static_cast<double>(v);
  PipelineEstimate pipe;
  pipe.stages = pp, pipe.virtual_stages = v;
  pipe.in_flight_first = v == 1 ? std::min(m, p) : std::min(m * vs, vs * p + p - 1) / vs;
  pipe.in_flight_last = v == 1 ? 1.0 : std::min(m * vs, (vs - 1) * p + 1) / vs;
  auto held = [](const PlanEstimate& s, double in_flight) {
    const int64_t kept = s.totals.kept_bytes.value_or(s.activation_bytes.value_or(0));
    return s.total_bytes + static_cast<int64_t>(std::llround((in_flight - 1) * static_cast<double>(kept)));
  };
  pipe.first_bytes = held(first, pipe.in_flight_first);
  pipe.last_bytes = held(last, pipe.in_flight_last);
  auto compute_of = [](const PlanEstimate& s) { return s.totals.forward_compute_us + s.totals.backward_compute_us; };
  // A micro-batch's FSDP collectives: what its compute does not hide, and
  // how much slower the compute is for hiding the rest.
  auto exposed_fsdp_of = [&](const PlanEstimate& s) {
    return exposed_fsdp_us(s.prefetched_comm_us / m, s.totals.fsdp_ends_us, compute_of(s));
  };
  auto fsdp_slowdown_of = [&](const PlanEstimate& s) {
    return slowed_by_overlap_us(s.prefetched_comm_us / m - exposed_fsdp_of(s), topology);
  };
  auto micro_us = [&](const PlanEstimate& s) {
    return compute_of(s) + s.blocking_comm_us / m + exposed_fsdp_of(s) + fsdp_slowdown_of(s);
  };
  pipe.first_micro_us = micro_us(first), pipe.last_micro_us = micro_us(last);
  pipe.send_bytes = plan.micro_batch * model.seq * model.dim * model.element_size() /
                    (plan.sequence_parallel && tp > 1 ? tp : 1);
  pipe.send_us = topology.link("pp").collective_us(pipe.send_bytes, /*ring_steps=*/1);
  const double per_micro = std::max(pipe.first_micro_us, pipe.last_micro_us) + 2 * vs * pipe.send_us;
  pipe.bubble_us = (p - 1) / vs * per_micro;
  auto update_slowdown_of = [&](const PlanEstimate& s) {
    return slowed_by_overlap_us(s.update_comm_us - s.exposed_update_comm_us, topology);
  };
  auto update_us = [&](const PlanEstimate& s) {
    return s.totals.update_compute_us + s.exposed_update_comm_us + update_slowdown_of(s);
  };
  auto serial_micro = [&](const PlanEstimate& s) {
    return compute_of(s) + (s.blocking_comm_us + s.prefetched_comm_us) / m + 2 * vs * pipe.send_us;
  };

  const PlanEstimate& held_more = pipe.first_bytes >= pipe.last_bytes ? first : last;
  PlanEstimate e = held_more;
  e.model = model, e.plan = plan;
  e.total_bytes = std::max(pipe.first_bytes, pipe.last_bytes);
  // The micro-batches in flight on top of the traced one; the pp send/recv group.
  e.device = device_of(e.totals, e.total_bytes, e.total_bytes - held_more.total_bytes, 1, e.cap_bytes, topology);
  const int64_t static_bytes = e.totals.parameter_bytes + e.totals.gradient_bytes + e.totals.optimizer_bytes;
  if (e.activation_bytes) e.activation_bytes = std::max<int64_t>(0, e.total_bytes - static_bytes);
  e.compute_us = m * std::max(compute_of(first), compute_of(last)) +
                 std::max(first.totals.update_compute_us, last.totals.update_compute_us);
  e.step_us_overlap = m * per_micro + pipe.bubble_us + std::max(update_us(first), update_us(last));
  // The step's exposed collectives and slowdown: the pacing stage's m
  // micro-batches (the bubble's share is the bubble's) and the slower update.
  const PlanEstimate& pace = pipe.first_micro_us >= pipe.last_micro_us ? first : last;
  const PlanEstimate& updating = update_us(first) >= update_us(last) ? first : last;
  e.exposed_fsdp_comm_us = m * exposed_fsdp_of(pace);
  e.exposed_update_comm_us = updating.exposed_update_comm_us;
  e.overlap_slowdown_us = m * fsdp_slowdown_of(pace) + update_slowdown_of(updating);
  e.step_us_serial = (m + (p - 1) / vs) * std::max(serial_micro(first), serial_micro(last)) +
                     std::max(first.totals.update_compute_us + first.update_comm_us,
                              last.totals.update_compute_us + last.update_comm_us);
  e.pipeline = pipe;
  return e;
}

}  // namespace

PlanEstimate estimate_plan(const StepProgram& program, const ModelConfig& model, const PlanConfig& plan,
                           const Topology& topology, const EstimateOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  // Checked on the whole model (the traces check their 2- and 3-layer ones).
  const std::string problem = plan_problem(model, plan);
  if (!problem.empty()) {
    throw std::invalid_argument("plan " + plan.to_string() + " cannot run " + model.to_string() + ": " + problem);
  }
  PlanEstimate e = plan.mesh.size_of("pp") > 1 ? estimate_pipeline(program, model, plan, topology, options)
                                               : estimate_traced(program, model, plan, topology, options);
  e.trace_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return e;
}

double model_flops_per_token(const ModelConfig& m) {
  const double embedding = static_cast<double>(m.vocab * m.dim);
  const double n = static_cast<double>(m.parameter_count()) - embedding;
  return 6 * n + 12.0 * static_cast<double>(m.layers) * static_cast<double>(m.dim) * static_cast<double>(m.seq);
}

double PlanEstimate::tokens_per_second_per_gpu() const {
  const double tokens = static_cast<double>(model.batch) * static_cast<double>(model.seq);
  return step_us_overlap > 0 ? tokens / static_cast<double>(plan.mesh.world_size()) / (step_us_overlap / 1e6) : 0;
}

double PlanEstimate::mfu() const {
  return tokens_per_second_per_gpu() * model_flops_per_token(model) / (topology.peak_tflops * 1e12);
}

std::string PlanEstimate::verdict() const {
  const double gib = 1073741824.0;
  char buf[160];
  if (fits()) {
    const int64_t used = device ? device->total() : total_bytes;
    std::snprintf(buf, sizeof(buf), "fits (%.2f GiB free of %.2f GiB%s)", static_cast<double>(cap_bytes - used) / gib,
                  static_cast<double>(cap_bytes) / gib,
                  device && device->cache_flushed ? "; the allocator must free its cache to make room: slow" : "");
  } else {
    std::snprintf(buf, sizeof(buf), "does not fit by %.2f GiB (cap %.2f GiB)",
                  static_cast<double>(needed_bytes() - cap_bytes) / gib, static_cast<double>(cap_bytes) / gib);
  }
  return buf;
}

}  // namespace dtensor::planner
