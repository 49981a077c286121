// Playground state: the texts a user edits (mesh, tensor shape, placements,
// target placements, dtype, cost model) and everything derived from them: the
// parsed values or per-field error strings, the source layout, and the
// redistribute plan with before/after layouts per step. Never throws.
//   PlaygroundState state;
//   state.inputs().placements = "S(0), R";
//   state.refresh();
//   if (!state.placements_error().empty()) show(state.placements_error());
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layout/mesh_shape.h"
#include "layout/placement.h"
#include "layout/redistribute_plan.h"
#include "gui/model/layout_model.h"
#include "gui/model/rank_colors.h"

namespace dtensor::gui {

// An element type the playground offers, with its size in bytes.
struct DtypeChoice {
  const char* name;
  int64_t element_size;
};

// float32, bfloat16, float16, float64, int64, int8 (in that order).
const std::vector<DtypeChoice>& dtype_choices();

// What the user typed. Compared as a whole to detect edits.
struct PlaygroundInputs {
  std::string mesh = "dp=2, tp=2";
  std::string tensor = "8, 6";
  std::string placements = "S(0), S(1)";
  std::string target = "R, S(0)";
  // Index into dtype_choices().
  int dtype_index = 0;
  // Alpha-beta cost model used for the estimated times.
  double latency_us = 5.0;
  double bandwidth_gbytes_per_s = 50.0;
  double step_latency_us = 0.5;  // per ring step (Note [Comm cost model])

  friend bool operator==(const PlaygroundInputs& a, const PlaygroundInputs& b) {
    return a.mesh == b.mesh && a.tensor == b.tensor && a.placements == b.placements &&
           a.target == b.target && a.dtype_index == b.dtype_index && a.latency_us == b.latency_us &&
           a.bandwidth_gbytes_per_s == b.bandwidth_gbytes_per_s && a.step_latency_us == b.step_latency_us;
  }
  friend bool operator!=(const PlaygroundInputs& a, const PlaygroundInputs& b) { return !(a == b); }
};

// The layouts around one plan step.
struct StepLayouts {
  LayoutResult before;
  LayoutResult after;
};

// Inputs plus derived state. Call refresh() after editing inputs() or the
// draw selection; it recomputes only when something changed.
class PlaygroundState {
 public:
  // Parses the default inputs.
  PlaygroundState();

  // The editable inputs; call refresh() afterwards.
  PlaygroundInputs& inputs() { return inputs_; }
  const PlaygroundInputs& inputs() const { return inputs_; }
  // The drawn dims / slices of the layouts; call refresh() after editing.
  DrawSelection& selection() { return selection_; }

  // Re-parses and re-plans when inputs or selection changed since the last
  // call. Never throws; errors land in the *_error() strings.
  void refresh();

  // Per-field errors ("" when that field is fine or could not be checked
  // because a field it depends on is invalid).
  const std::string& mesh_error() const { return mesh_error_; }
  const std::string& tensor_error() const { return tensor_error_; }
  const std::string& placements_error() const { return placements_error_; }
  const std::string& target_error() const { return target_error_; }
  // Why there is no plan although every field parsed (e.g. R -> P(product)).
  const std::string& plan_error() const { return plan_error_; }

  // The parsed mesh (unset when mesh_error() is not empty).
  const std::optional<MeshShape>& mesh() const { return mesh_; }
  // The parsed tensor shape (unset on error).
  const std::optional<std::vector<int64_t>>& tensor_shape() const { return shape_; }
  // The source layout (its error is set when the placements are invalid).
  const LayoutResult& layout() const { return layout_; }
  // The target layout (unset view when the target is invalid).
  const LayoutResult& target_layout() const { return target_layout_; }
  // The plan from placements to target, when both are valid and plannable.
  const std::optional<RedistributePlan>& plan() const { return plan_; }
  // Layouts before and after each plan step (same length as plan()->steps).
  const std::vector<StepLayouts>& step_layouts() const { return step_layouts_; }
  // Colours of the mesh's ranks (empty palette when the mesh is invalid).
  const RankPalette& palette() const { return palette_; }
  // Bytes per element of the chosen dtype.
  int64_t element_size() const;

  // The plan step shown in detail; clamped to the plan's steps by refresh().
  int selected_step = 0;

 private:
  void clear_derived();
  void recompute();
  void recompute_plan();

  PlaygroundInputs inputs_;
  DrawSelection selection_;
  std::optional<PlaygroundInputs> applied_inputs_;
  DrawSelection applied_selection_;

  std::string mesh_error_, tensor_error_, placements_error_, target_error_, plan_error_;
  std::optional<MeshShape> mesh_;
  std::optional<std::vector<int64_t>> shape_;
  std::optional<Placements> placements_, target_;
  LayoutResult layout_, target_layout_;
  std::optional<RedistributePlan> plan_;
  std::vector<StepLayouts> step_layouts_;
  RankPalette palette_;
};

}  // namespace dtensor::gui
