// Text forms of CollectiveOrigin.
#include "layout/collective_origin.h"

namespace dtensor {

std::string origin_summary(const CollectiveOrigin& o) {
  std::string out = o.is_explicit ? "explicit " + o.cause : std::string("implicit");
  if (!o.op.empty()) out += o.is_explicit ? " (" + o.op + ")" : " " + o.op;
  if (o.input_index >= 0) out += " input " + std::to_string(o.input_index);
  const std::string whole = o.from_placements + " -> " + o.to_placements;
  if (!o.step.empty()) {
    out += ", " + o.step;
    if (!o.from_placements.empty() && o.from_placements.find(',') != std::string::npos) out += " (" + whole + ")";
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
  out += " " + o.from_placements + " -> " + o.to_placements;
  if (o.mesh_dim >= 0) out += " dim " + std::to_string(o.mesh_dim);
  return out;
}

}  // namespace dtensor
