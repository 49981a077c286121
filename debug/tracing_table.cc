// Comm tracing table text, ANSI stripping.
#include "debug/tracing_table.h"

#include <unistd.h>

#include <iomanip>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

namespace dtensor::debug {
namespace {

constexpr const char* kYellow = "\033[1;33m";
constexpr const char* kRed = "\033[1;31m";
constexpr const char* kReset = "\033[0m";

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

template <typename T, typename F>
std::string list_text(const std::vector<T>& items, F item_text) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + item_text(items[i]);
  return out + "]";
}

struct TableWriter {
  TableWriter(const trace::CommTrace& v, int noise_level, bool c)
      : view(v), filter(noise_level), color(c), counts(comm_module_counts(v)), bytes(comm_module_bytes(v)) {}

  const trace::CommTrace& view;
  trace::NoiseFilter filter;
  bool color;
  trace::ModuleCounts counts;
  trace::ModuleCounts bytes;
  std::ostringstream out;

  void line(const std::string& indent, const std::string& text, const char* colour = nullptr) {
    if (color && colour != nullptr) {
      out << colour << indent << text << kReset << '\n';
    } else {
      out << indent << text << '\n';
    }
  }

  void phase_block(const std::string& fqn, trace::Phase phase, const std::string& indent,
                   const std::string& item_indent, const std::string& detail_indent) {
    trace::KindCounts collectives;
    trace::KindCounts byte_counts;
    if (auto it = counts.find(fqn); it != counts.end()) collectives = it->second.at(phase_name(phase));
    if (auto it = bytes.find(fqn); it != bytes.end()) byte_counts = it->second.at(phase_name(phase));
    std::vector<const trace::OpRecord*> ops;
    for (const trace::OpRecord& op : view.operations) {
      if (op.module == fqn && op.phase == phase && filter.shows(op)) ops.push_back(&op);
    }
    if (collectives.empty() && ops.empty()) return;
    line(indent, phase == trace::Phase::kForward ? "FORWARD PASS" : "BACKWARD PASS");
    for (const auto& [kind, n] : collectives) {
      line(item_indent,
           "*" + kind + ": " + std::to_string(n) + " (" + std::to_string(byte_counts[kind]) + " B)", kYellow);
    }
    if (filter.module_data) origin_lines(fqn, phase, item_indent, detail_indent);
    for (const trace::OpRecord* op : ops) {
      line(item_indent, "**" + op->name, kYellow);
      if (op->input_shapes.empty() && op->input_sharding.empty()) continue;
      line(detail_indent, "shape: " + list_text(op->input_shapes, shape_text), kRed);
      if (!op->dtensor) continue;
      line(detail_indent,
           "sharding: " + list_text(op->input_sharding, [](const std::string& s) { return s; }), kRed);
      line(detail_indent, "device mesh: " + op->device_mesh, kRed);
    }
  }

  // Noise level 1+: why this module's own collectives happened, one line per
  // (collective, origin) with its count; level 2+ adds the strategy chosen
  // and the cheapest one rejected for implicit ones.
  void origin_lines(const std::string& fqn, trace::Phase phase, const std::string& item_indent,
                    const std::string& detail_indent) {
    std::map<std::pair<std::string, std::string>, std::pair<int64_t, const trace::CollectiveRecord*>> groups;
    std::vector<std::pair<std::string, std::string>> order;
    for (const trace::CollectiveRecord& r : view.collectives) {
      if (r.module != fqn || r.phase != phase) continue;
      const std::string why = r.origin ? origin_summary(*r.origin) : std::string("origin unknown");
      auto key = std::make_pair(r.kind, why);
      auto [it, fresh] = groups.emplace(key, std::make_pair(int64_t{0}, &r));
      if (fresh) order.push_back(key);
      ++it->second.first;
    }
    for (const auto& key : order) {
      const auto& [n, first] = groups.at(key);
      line(item_indent, "*" + key.first + " x" + std::to_string(n) + " from " + key.second,
           first->origin && !first->origin->is_explicit ? kRed : kYellow);
      if (!filter.local_ops || !first->origin || first->origin->strategy.empty()) continue;
      const trace::CollectiveOriginRecord& o = *first->origin;
      std::string detail = "strategy: " + o.strategy + " (cost " + cost_text(o.strategy_cost) + ")";
      if (!o.rejected_strategy.empty())
        detail += "; rejected: " + o.rejected_strategy + " (cost " + cost_text(o.rejected_cost) + ")";
      line(detail_indent, detail, kRed);
    }
  }

  static std::string cost_text(double cost) {
    std::ostringstream out;
    out << std::fixed << std::setprecision(0) << cost;
    return out.str();
  }

  void module(const std::string& fqn, int depth) {
    const std::string indent(static_cast<size_t>(4 * depth), ' ');
    line(indent, fqn);
    const trace::ModuleRecord* m = find_module(view, fqn);
    if (filter.module_data && m != nullptr) {
      line(indent, "*module type: " + m->module_type);
      if (!m->parameters.empty()) {
        line(indent, "*Parameter List");
        for (const auto& [name, placements] : m->parameters) line(indent, " *" + name + ": " + placements);
      }
    }
    const std::string item_indent(static_cast<size_t>(4 * depth + 4), ' ');
    const std::string detail_indent(static_cast<size_t>(4 * depth + 6), ' ');
    phase_block(fqn, trace::Phase::kForward, indent + "  ", item_indent, detail_indent);
    phase_block(fqn, trace::Phase::kBackward, indent + "  ", item_indent, detail_indent);
    for (const std::string& child : module_children(view, fqn)) module(child, depth + 1);
  }
};

}  // namespace

std::string comm_debug_tracing_table(const trace::CommTrace& trace, int noise_level, bool color) {
  const bool merged = trace.rank < 0;
  const std::vector<int64_t> ranks = ranks_in(trace);
  const int64_t reference = ranks.empty() ? 0 : ranks.front();
  const trace::CommTrace view = merged ? rank_view(trace, reference) : trace;
  TableWriter writer(view, noise_level, color);
  if (merged)
    writer.out << "(fake world: " << ranks.size() << " ranks traced, showing rank " << reference << ")\n";
  writer.module(trace::kGlobalFqn, 0);
  if (merged && !trace.differing_ranks.empty()) {
    writer.out << "ranks differing from rank " << reference << ":";
    for (int64_t r : trace.differing_ranks) writer.out << ' ' << r;
    writer.out << '\n';
    for (const std::string& d : trace.rank_differences) writer.out << "  " << d << '\n';
  }
  return writer.out.str();
}

std::string strip_ansi(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\033' && i + 1 < text.size() && text[i + 1] == '[') {
      size_t j = i + 2;
      while (j < text.size() && !(text[j] >= '@' && text[j] <= '~')) ++j;  // parameters, intermediates
      i = j;                                                               // skip the final byte too
      continue;
    }
    out += text[i];
  }
  return out;
}

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) == 1; }

}  // namespace dtensor::debug
