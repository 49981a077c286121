// Plan report text and JSON. See report.h.
#include "planner/report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "layout/text.h"

namespace dtensor::planner {
namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string pad(const std::string& s, size_t width) { return s.size() >= width ? s : s + std::string(width - s.size(), ' '); }
std::string rpad(const std::string& s, size_t width) { return s.size() >= width ? s : std::string(width - s.size(), ' ') + s; }

std::string ms(double us) { return fmt("%.2f ms", us / 1e3); }

}  // namespace

std::string plan_report_text(const PlanEstimate& e) {
  std::ostringstream out;
  out << "model      " << e.model.to_string() << " (" << fmt("%.3g", static_cast<double>(e.model.parameter_count()))
      << " parameters)\n";
  out << "plan       " << e.plan.to_string() << " (" << e.plan.mesh.world_size() << " ranks, " << e.micro_steps
      << " micro-step" << (e.micro_steps == 1 ? "" : "s") << " of " << e.plan.micro_batch << " sequence"
      << (e.plan.micro_batch == 1 ? "" : "s") << ")\n";
  out << "traced     " << e.traced_layers << " of " << e.model.layers << " layers"
      << (e.traced_layers < e.model.layers ? " (2 and 3 traced, scaled per layer)" : "") << " in "
      << fmt("%.3f", e.trace_seconds) << " s\n\n";
  out << "memory per rank          bytes\n";
  auto mem = [&](const char* name, double bytes) { out << "  " << pad(name, 22) << rpad(format_bytes(bytes, 2), 12) << "\n"; };
  mem("parameters", static_cast<double>(e.totals.parameter_bytes));
  mem("gradients", static_cast<double>(e.totals.gradient_bytes));
  mem("optimizer state", static_cast<double>(e.totals.optimizer_bytes));
  if (e.activation_bytes) {
    mem("activations at peak", static_cast<double>(*e.activation_bytes));
  } else {
    out << "  " << pad("activations at peak", 22) << rpad("n/a", 12) << "  (this world counts no memory)\n";
  }
  mem("total (peak)", static_cast<double>(e.total_bytes));
  if (!e.totals.peak_location.empty()) out << "  peak at " << e.totals.peak_location << "\n";
  if (e.device) {
    // Note [Device memory]: the rows add up to what nvidia-smi would show.
    const DeviceMemory& d = *e.device;
    auto row = [&](const char* name, double bytes, const std::string& why) {
      out << "  " << pad(name, 22) << rpad(format_bytes(bytes, 2), 12) << "  " << why << "\n";
    };
    out << "as the GPU sees it\n";
    row("allocator cache", static_cast<double>(d.reserved - e.total_bytes),
        std::string("PyTorch's caching allocator, ") + (d.expandable_segments ? "expandable segments" : "default segments") +
            ": rounding and cached blocks over the live peak" +
            (d.cache_flushed ? "; it would hold " + format_bytes(static_cast<double>(d.pinned), 2) +
                                   " at least and must free its cache to fit (slow)"
                             : ""));
    row("reserved", static_cast<double>(d.reserved), "torch.cuda.max_memory_reserved()");
    row("NCCL buffers", static_cast<double>(d.nccl),
        std::to_string(d.communicators) + " communicator" + (d.communicators == 1 ? "" : "s") + " x " +
            fmt("%.2f", e.topology.nccl_gib_per_communicator) + " GiB (the topology's assumption)");
    row("CUDA context", static_cast<double>(d.cuda_context), "the topology's assumption");
    row("device total", static_cast<double>(d.total()), "what nvidia-smi would show");
  }
  mem("cap", static_cast<double>(e.cap_bytes));
  out << "\ncomm per rank and step\n  " << pad("phase", 11) << pad("collective", 24) << pad("dim", 5) << rpad("count", 8)
      << rpad("bytes", 13) << rpad("ring bytes", 13) << rpad("time", 12) << "\n";
  for (const CommRow& r : e.totals.comm) {
    out << "  " << pad(r.phase, 11) << pad(r.kind, 24) << pad(r.mesh_dim, 5) << rpad(std::to_string(r.count), 8)
        << rpad(format_bytes(static_cast<double>(r.bytes), 2), 13) << rpad(format_bytes(static_cast<double>(r.ring_bytes), 2), 13)
        << rpad(ms(r.time_us), 12) << "\n";
  }
  const double n = static_cast<double>(e.micro_steps);
  out << "\ncompute    " << fmt("%.3g", n * (e.totals.forward_flops + e.totals.backward_flops) + e.totals.update_flops)
      << " matmul and attention FLOP, "
      << format_bytes(n * (e.totals.forward_pointwise_bytes + e.totals.backward_pointwise_bytes) +
                      e.totals.update_pointwise_bytes, 2)
      << " memory-bound traffic -> " << ms(e.compute_us);
  if (e.topology.calibration) {
    out << " at the rates measured on " << e.topology.calibration->gpu << " (" << e.topology.calibration->source
        << ")\n";
  } else {
    out << " at " << fmt("%.0f", e.topology.peak_tflops) << " TFLOP/s, " << fmt("%.0f", e.topology.hbm_gbps)
        << " GB/s\n";
  }
  out << "comm       " << ms(e.blocking_comm_us + e.prefetched_comm_us) << " in micro-steps";
  if (e.prefetched_comm_us > 0) out << " (" << ms(e.prefetched_comm_us) << " of them FSDP's, overlapping compute)";
  out << ", " << ms(e.update_comm_us) << " in the update\n";
  if (e.prefetched_comm_us > 0 || e.update_comm_us > 0) {
    // What of the overlappable collectives is exposed, and what hiding the rest costs.
    out << "overlap    exposed:";
    if (e.prefetched_comm_us > 0) {
      out << " " << ms(e.exposed_fsdp_comm_us)
          << " of FSDP's (each micro-step's first all-gather and last reduction, and what compute is too short to hide)"
          << (e.update_comm_us > 0 ? "," : "");
    }
    if (e.update_comm_us > 0) out << " " << ms(e.exposed_update_comm_us) << " of the update's";
    out << "; compute " << ms(e.overlap_slowdown_us) << " slower for the collectives it hides (overlap_slowdown "
        << fmt("%.3g", e.topology.overlap_slowdown) << ")\n";
  }
  if (e.pipeline) {
    const PipelineEstimate& p = *e.pipeline;
    out << "pipeline   " << p.stages << " stages, "
        << (p.virtual_stages == 1 ? std::string("1F1B") : "interleaved 1F1B, " + std::to_string(p.virtual_stages) + " chunks per rank")
        << "; first rank " << format_bytes(static_cast<double>(p.first_bytes), 2) << " (" << fmt("%.3g", p.in_flight_first)
        << " micro-batches in flight), last " << format_bytes(static_cast<double>(p.last_bytes), 2) << " ("
        << fmt("%.3g", p.in_flight_last) << "); a micro-batch " << ms(p.first_micro_us) << " / " << ms(p.last_micro_us)
        << "; sends of " << format_bytes(static_cast<double>(p.send_bytes), 2) << " (" << ms(p.send_us)
        << " each); bubble " << ms(p.bubble_us) << " (" << fmt("%.1f", 100.0 * p.bubble_us / e.step_us_overlap)
        << "% of the step)\n";
  }
  out << "step time  " << ms(e.step_us_serial) << " serial, " << ms(e.step_us_overlap)
      << " with overlap (FSDP's collectives behind compute, the update's behind the last backward)\n";
  // What the step (with overlap) is made of: compute, the collectives it does
  // not hide, the compute's slowdown for those it hides, the pipeline's fill
  // and drain.
  const double bubble = e.pipeline ? e.pipeline->bubble_us : 0;
  const double slowdown = e.overlap_slowdown_us;
  const double exposed = std::max(0.0, e.step_us_overlap - bubble - slowdown - e.compute_us);
  out << "throughput " << fmt("%.0f", e.tokens_per_second_per_gpu()) << " tokens/s per GPU, MFU "
      << fmt("%.1f", 100 * e.mfu()) << "% of " << fmt("%.0f", e.topology.peak_tflops) << " TFLOP/s; the step is "
      << fmt("%.0f", 100 * e.compute_us / e.step_us_overlap) << "% compute, " << fmt("%.0f", 100 * exposed / e.step_us_overlap)
      << "% exposed comm" << (slowdown > 0 ? ", " + fmt("%.0f", 100 * slowdown / e.step_us_overlap) + "% overlap slowdown" : "")
      << (e.pipeline ? ", " + fmt("%.0f", 100 * bubble / e.step_us_overlap) + "% pipeline bubble" : "")
      << "\n";
  out << "verdict    " << e.verdict() << "\n";
  return out.str();
}

nlohmann::json plan_report_json(const PlanEstimate& e) {
  nlohmann::json j;
  j["dtensor_plan_version"] = kPlanJsonVersion;
  const ModelConfig& m = e.model;
  j["model"] = {{"spec", m.to_string()}, {"kind", m.kind == ModelKind::kLlama ? "llama" : "transformer"},
                {"layers", m.layers}, {"dim", m.dim}, {"ffn", m.ffn}, {"heads", m.heads}, {"kv_heads", m.kv_heads},
                {"vocab", m.vocab}, {"seq", m.seq}, {"batch", m.batch}, {"dtype", m.dtype},
                {"parameters", m.parameter_count()}};
  nlohmann::json mesh = nlohmann::json::object();
  for (size_t i = 0; i < e.plan.mesh.names.size(); ++i) mesh[e.plan.mesh.names[i]] = e.plan.mesh.sizes[i];
  j["plan"] = {{"spec", e.plan.to_string()}, {"mesh", mesh}, {"world_size", e.plan.mesh.world_size()},
               {"sequence_parallel", e.plan.sequence_parallel}, {"micro_batch", e.plan.micro_batch},
               {"micro_steps", e.micro_steps}, {"optimizer", optimizer_name(e.plan.optimizer)},
               {"mixed_precision", e.plan.mixed_precision.empty() ? "none" : e.plan.mixed_precision}};
  j["topology"] = {{"peak_tflops", e.topology.peak_tflops}, {"hbm_gbps", e.topology.hbm_gbps},
                   {"memory_gib", e.topology.memory_gib}, {"cuda_context_gib", e.topology.cuda_context_gib},
                   {"nccl_gib_per_communicator", e.topology.nccl_gib_per_communicator},
                   {"allocator", allocator_mode_name(e.topology.expandable_segments)},
                   {"overlap_slowdown", e.topology.overlap_slowdown}};
  if (e.topology.calibration) {
    j["topology"]["calibration"] = {{"gpu", e.topology.calibration->gpu}, {"source", e.topology.calibration->source}};
  }
  for (const auto& [name, link] : e.topology.links) {
    j["topology"]["links"][name] = {{"latency_us", link.latency_us},
                                    {"gbytes_per_s", link.bandwidth_gbytes_per_s},
                                    {"step_latency_us", link.step_latency_us}};
  }
  j["traced_layers"] = e.traced_layers;
  j["trace_seconds"] = e.trace_seconds;
  j["memory"] = {{"parameters", e.totals.parameter_bytes}, {"gradients", e.totals.gradient_bytes},
                 {"optimizer", e.totals.optimizer_bytes}, {"total", e.total_bytes}, {"cap", e.cap_bytes}};
  j["memory"]["activations"] = e.activation_bytes ? nlohmann::json(*e.activation_bytes) : nlohmann::json(nullptr);
  j["memory"]["peak"] = e.totals.peak_bytes ? nlohmann::json(*e.totals.peak_bytes) : nlohmann::json(nullptr);
  j["memory"]["peak_location"] = e.totals.peak_location;
  if (e.device) {
    const DeviceMemory& d = *e.device;
    j["memory"]["device"] = {{"allocator", allocator_mode_name(d.expandable_segments)},
                             {"allocated", d.allocated}, {"reserved", d.reserved}, {"pinned", d.pinned},
                             {"cache_flushed", d.cache_flushed}, {"communicators", d.communicators},
                             {"nccl", d.nccl}, {"cuda_context", d.cuda_context}, {"total", d.total()},
                             {"needed", d.needed()}};
  }
  j["comm"] = nlohmann::json::array();
  for (const CommRow& r : e.totals.comm) {
    j["comm"].push_back({{"phase", r.phase}, {"kind", r.kind}, {"mesh_dim", r.mesh_dim}, {"count", r.count},
                         {"bytes", r.bytes}, {"ring_bytes", r.ring_bytes}, {"time_us", r.time_us}});
  }
  j["compute"] = {{"forward_flops", e.totals.forward_flops}, {"backward_flops", e.totals.backward_flops},
                  {"update_flops", e.totals.update_flops},
                  {"forward_pointwise_bytes", e.totals.forward_pointwise_bytes},
                  {"backward_pointwise_bytes", e.totals.backward_pointwise_bytes},
                  {"update_pointwise_bytes", e.totals.update_pointwise_bytes}};
  j["time"] = {{"compute_us", e.compute_us}, {"micro_step_comm_us", e.blocking_comm_us + e.prefetched_comm_us},
               {"micro_step_fsdp_comm_us", e.prefetched_comm_us},
               {"exposed_fsdp_comm_us", e.exposed_fsdp_comm_us},
               {"exposed_update_comm_us", e.exposed_update_comm_us},
               {"overlap_slowdown_us", e.overlap_slowdown_us},
               {"update_comm_us", e.update_comm_us}, {"step_us_serial", e.step_us_serial},
               {"step_us_overlap", e.step_us_overlap}};
  if (e.pipeline) {
    const PipelineEstimate& p = *e.pipeline;
    j["pipeline"] = {{"stages", p.stages}, {"virtual_stages", p.virtual_stages},
                     {"in_flight_first", p.in_flight_first}, {"in_flight_last", p.in_flight_last},
                     {"first_bytes", p.first_bytes}, {"last_bytes", p.last_bytes},
                     {"first_micro_us", p.first_micro_us}, {"last_micro_us", p.last_micro_us},
                     {"send_bytes", p.send_bytes}, {"send_us", p.send_us}, {"bubble_us", p.bubble_us}};
  }
  j["throughput"] = {{"tokens_per_s_per_gpu", e.tokens_per_second_per_gpu()}, {"mfu", e.mfu()},
                     {"model_flops_per_token", model_flops_per_token(e.model)}};
  j["fits"] = e.fits();
  j["verdict"] = e.verdict();
  return j;
}

}  // namespace dtensor::planner
