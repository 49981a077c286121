// Fuzz entry for the placement parser and the redistribute planner. See
// fuzz_entries.h.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "layout/layout_error.h"
#include "layout/mesh_shape.h"
#include "layout/placement.h"
#include "layout/redistribute_plan.h"
#include "fuzz/fuzz_entries.h"

namespace dtensor::fuzz {
namespace {

[[noreturn]] void finding(const std::string& what, std::string_view input) {
  std::fprintf(stderr, "fuzz finding: %s\ninput: '%.*s'\n", what.c_str(), static_cast<int>(input.size()),
               input.data());
  std::abort();
}

// Parses or returns nullopt on LayoutError; any other exception escapes (a finding).
bool try_parse(std::string_view text, Placements& out) {
  try {
    out = parse_placements(text);
    return true;
  } catch (const LayoutError& e) {
    if (std::string(e.what()).empty()) finding("empty LayoutError message", text);
    return false;
  }
}

void check_round_trip(const Placements& parsed, std::string_view text) {
  Placements back;
  if (!try_parse(to_string(parsed), back) || back != parsed) {
    finding("to_string does not parse back: " + to_string(parsed), text);
  }
  for (const Placement& p : parsed) {
    if (parse_placement(p.to_string()) != p) finding("placement round trip: " + p.to_string(), text);
  }
}

}  // namespace

int placement_parser(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // Byte 0: mesh (up to 4 dims of size 1..4); byte 1: tensor shape (up to 3 dims of 0..3).
  std::vector<int64_t> mesh_shape;
  for (int i = 0, b = data[0]; i <= (b & 3); ++i) mesh_shape.push_back(1 + ((b >> (2 + i)) & 3) % 4);
  std::vector<int64_t> tensor_shape;
  for (int i = 0, b = data[1]; i < (b & 3); ++i) tensor_shape.push_back((b >> (2 + 2 * i)) & 3);
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  const size_t bar = text.find('|');
  const std::string_view from_text = text.substr(0, bar);
  const std::string_view to_text = bar == std::string_view::npos ? std::string_view() : text.substr(bar + 1);

  Placements from, to;
  const bool from_ok = try_parse(from_text, from);
  if (from_ok) check_round_trip(from, from_text);
  if (bar == std::string_view::npos) return 0;
  const bool to_ok = try_parse(to_text, to);
  if (to_ok) check_round_trip(to, to_text);
  if (!from_ok || !to_ok) return 0;

  const MeshShape mesh = MeshShape::create(mesh_shape);
  RedistributePlan plan;
  try {
    plan = plan_redistribute(tensor_shape, /*element_size=*/4, mesh, from, to);
  } catch (const LayoutError& e) {
    if (std::string(e.what()).find("plan_redistribute") == std::string::npos) {
      finding(std::string("refusal does not name plan_redistribute: ") + e.what(), text);
    }
    if (std::string(e.what()).find("internal error") != std::string::npos) {
      finding(std::string("planner internal error: ") + e.what(), text);
    }
    return 0;
  }
  Placements state = plan.from;
  for (const RedistributeStep& step : plan.steps) {
    if (step.before != state) finding("plan steps do not chain: " + plan.to_string(), text);
    if (step.mesh_dim < 0 || step.mesh_dim >= mesh.ndim()) finding("step mesh dim", text);
    state = step.after;
  }
  if (state != plan.to) finding("plan does not end at `to`: " + plan.to_string(), text);
  return 0;
}

}  // namespace dtensor::fuzz
