// Topology defaults and the file parser. See topology.h.
#include "planner/topology.h"

#include <cmath>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace dtensor::planner {

const CommCostModel& Topology::link(const std::string& dim_name) const {
  auto it = links.find(dim_name);
  if (it != links.end()) return it->second;
  it = links.find("*");
  if (it == links.end()) throw std::invalid_argument("topology: no link for mesh dim '" + dim_name + "' and no '*' link");
  return it->second;
}

int64_t Topology::memory_cap_bytes() const { return static_cast<int64_t>(std::llround(memory_gib * 1073741824.0)); }

Topology default_topology() { return Topology{}; }

const char* allocator_mode_name(bool expandable_segments) { return expandable_segments ? "expandable" : "segments"; }

std::optional<bool> parse_allocator_mode(const std::string& name) {
  for (bool expandable : {true, false}) {
    if (name == allocator_mode_name(expandable)) return expandable;
  }
  return std::nullopt;
}

namespace {

double positive_number(const std::string& word, int line_no, const std::string& line) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(word, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != word.size() || !(v > 0) || !std::isfinite(v)) {
    throw std::invalid_argument("topology line " + std::to_string(line_no) + " '" + line + "': '" + word +
                                "' is not a positive number");
  }
  return v;
}

double non_negative_number(const std::string& word, int line_no, const std::string& line) {
  return word == "0" ? 0.0 : positive_number(word, line_no, line);
}

}  // namespace

Topology parse_topology(const std::string& text) {
  Topology t = default_topology();
  std::istringstream in(text);
  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    const std::string line = raw.substr(0, raw.find('#'));
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty()) continue;
    auto expect = [&](size_t n, const char* form) {
      if (w.size() != n) {
        throw std::invalid_argument("topology line " + std::to_string(line_no) + " '" + raw + "': expected '" +
                                    form + "'");
      }
    };
    if (w[0] == "peak_tflops") {
      expect(2, "peak_tflops X");
      t.peak_tflops = positive_number(w[1], line_no, raw);
    } else if (w[0] == "hbm_gbps") {
      expect(2, "hbm_gbps X");
      t.hbm_gbps = positive_number(w[1], line_no, raw);
    } else if (w[0] == "memory_gib") {
      expect(2, "memory_gib X");
      t.memory_gib = positive_number(w[1], line_no, raw);
    } else if (w[0] == "cuda_context_gib") {
      expect(2, "cuda_context_gib X");
      t.cuda_context_gib = non_negative_number(w[1], line_no, raw);
    } else if (w[0] == "nccl_gib_per_communicator") {
      expect(2, "nccl_gib_per_communicator X");
      t.nccl_gib_per_communicator = non_negative_number(w[1], line_no, raw);
    } else if (w[0] == "allocator") {
      expect(2, "allocator expandable|segments");
      const std::optional<bool> expandable = parse_allocator_mode(w[1]);
      if (!expandable) {
        throw std::invalid_argument("topology line " + std::to_string(line_no) + " '" + raw +
                                    "': the allocator is 'expandable' (expandable_segments:True) or 'segments'");
      }
      t.expandable_segments = *expandable;
    } else if (w[0] == "overlap_slowdown") {
      expect(2, "overlap_slowdown X");
      t.overlap_slowdown = non_negative_number(w[1], line_no, raw);
    } else if (w[0] == "link") {
      if (w.size() != 5) expect(4, "link DIM LATENCY_US GBPS [STEP_LATENCY_US]");
      CommCostModel link{positive_number(w[2], line_no, raw), positive_number(w[3], line_no, raw)};
      if (w.size() == 5) link.step_latency_us = positive_number(w[4], line_no, raw);
      t.links[w[1]] = link;
    } else {
      throw std::invalid_argument("topology line " + std::to_string(line_no) + " '" + raw + "': unknown key '" +
                                  w[0] + "' (known: peak_tflops, hbm_gbps, memory_gib, link, cuda_context_gib, nccl_gib_per_communicator, allocator, overlap_slowdown)");
    }
  }
  return t;
}

std::string topology_text(const Topology& t) {
  std::ostringstream out;
  out.precision(17);
  out << "peak_tflops " << t.peak_tflops << "\nhbm_gbps " << t.hbm_gbps << "\nmemory_gib " << t.memory_gib << "\n";
  out << "cuda_context_gib " << t.cuda_context_gib << "\nnccl_gib_per_communicator " << t.nccl_gib_per_communicator
      << "\nallocator " << allocator_mode_name(t.expandable_segments) << "\noverlap_slowdown " << t.overlap_slowdown
      << "\n";
  for (const auto& [name, link] : t.links) {
    out << "link " << name << " " << link.latency_us << " " << link.bandwidth_gbytes_per_s << " "
        << link.step_latency_us << "\n";
  }
  return out.str();
}

}  // namespace dtensor::planner
