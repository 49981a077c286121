// Text forms of CollectiveOrigin.
#include "layout/collective_origin.h"

#include "layout/layout_error.h"

namespace dtensor {

std::string OriginStep::to_string() const { return from.to_string() + " -> " + to.to_string(); }

OriginStep parse_origin_step(const std::string& text) {
  const size_t arrow = text.find(" -> ");
  DTENSOR_LAYOUT_CHECK(arrow != std::string::npos, "origin step '", text,
                       "': expected 'FROM -> TO', e.g. 'S(0) -> R'");
  return OriginStep{parse_placement(text.substr(0, arrow)), parse_placement(text.substr(arrow + 4))};
}

std::string origin_placements_text(const Placements& placements) {
  return placements.empty() ? std::string() : to_string(placements);
}

std::string origin_summary(const CollectiveOrigin& o) {
  std::string out = o.is_explicit ? "explicit " + o.cause : std::string("implicit");
  if (!o.op.empty()) out += o.is_explicit ? " (" + o.op + ")" : " " + o.op;
  if (o.input_index >= 0) out += " input " + std::to_string(o.input_index);
  const std::string whole =
      origin_placements_text(o.from_placements) + " -> " + origin_placements_text(o.to_placements);
  if (o.step) {
    out += ", " + o.step->to_string();
    if (o.from_placements.size() > 1) out += " (" + whole + ")";
  } else if (!o.from_placements.empty() || !o.to_placements.empty()) {
    out += ", " + whole;
  }
  return out;
}

std::string origin_reason(const CollectiveOrigin& o) {
  const std::string summary = origin_summary(o);
  const size_t space = summary.find(' ');
  if (space != std::string::npos) return summary.substr(space + 1);
  return o.is_explicit ? o.cause : std::string("sharding propagation");
}

std::string origin_key(const CollectiveOrigin& o) {
  std::string out = o.is_explicit ? "explicit " + o.cause : std::string("implicit");
  if (!o.op.empty()) out += " " + o.op;
  if (o.input_index >= 0) out += " input " + std::to_string(o.input_index);
  out += " " + origin_placements_text(o.from_placements) + " -> " + origin_placements_text(o.to_placements);
  if (o.mesh_dim >= 0) out += " dim " + std::to_string(o.mesh_dim);
  return out;
}

}  // namespace dtensor
