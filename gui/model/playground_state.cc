// Playground state: parsing, layouts and the redistribute plan. See
// playground_state.h.
#include "gui/model/playground_state.h"

#include <algorithm>
#include <exception>

#include "gui/model/shape_text.h"

namespace dtensor::gui {

const std::vector<DtypeChoice>& dtype_choices() {
  static const std::vector<DtypeChoice> choices = {{"float32", 4}, {"bfloat16", 2}, {"float16", 2},
                                                   {"float64", 8}, {"int64", 8},    {"int8", 1}};
  return choices;
}

PlaygroundState::PlaygroundState() { refresh(); }

int64_t PlaygroundState::element_size() const {
  int index = std::clamp<int>(inputs_.dtype_index, 0, static_cast<int>(dtype_choices().size()) - 1);
  return dtype_choices()[static_cast<size_t>(index)].element_size;
}

void PlaygroundState::refresh() {
  if (applied_inputs_ && *applied_inputs_ == inputs_ && applied_selection_ == selection_) return;
  recompute();
  applied_inputs_ = inputs_;
  applied_selection_ = selection_;
}

void PlaygroundState::clear_derived() {
  mesh_error_.clear();
  tensor_error_.clear();
  placements_error_.clear();
  target_error_.clear();
  plan_error_.clear();
  mesh_.reset();
  shape_.reset();
  placements_.reset();
  target_.reset();
  layout_ = LayoutResult{};
  target_layout_ = LayoutResult{};
  plan_.reset();
  step_layouts_.clear();
}

void PlaygroundState::recompute() {
  clear_derived();
  Parsed<MeshShape> mesh = parse_mesh_text(inputs_.mesh);
  Parsed<std::vector<int64_t>> shape = parse_shape_text(inputs_.tensor);
  mesh_error_ = mesh.error;
  tensor_error_ = shape.error;
  mesh_ = mesh.value;
  shape_ = shape.value;
  palette_ = RankPalette(mesh_ ? mesh_->num_ranks() : 0);
  if (!mesh_ || !shape_) {
    layout_.error = "fix the mesh and tensor shape first";
    target_layout_.error = layout_.error;
    return;
  }
  int64_t ndim = static_cast<int64_t>(shape_->size());
  Parsed<Placements> placements =
      parse_placements_text(inputs_.placements, *mesh_, ndim, "placements");
  Parsed<Placements> target = parse_placements_text(inputs_.target, *mesh_, ndim, "target");
  placements_error_ = placements.error;
  target_error_ = target.error;
  placements_ = placements.value;
  target_ = target.value;
  if (placements_) {
    // A new shape or new placements get the default dims; edits of the
    // selection alone are kept.
    bool same_subject = applied_inputs_ && applied_inputs_->tensor == inputs_.tensor &&
                        applied_inputs_->placements == inputs_.placements;
    if (!same_subject) selection_ = DrawSelection{};
    selection_ = sanitize_selection(selection_, *shape_, *placements_);
  }
  LayoutRequest request{*shape_, *mesh_, placements_.value_or(Placements{}), selection_,
                        element_size()};
  layout_ = placements_ ? compute_layout(request) : LayoutResult{std::nullopt, placements_error_};
  request.placements = target_.value_or(Placements{});
  target_layout_ = target_ ? compute_layout(request) : LayoutResult{std::nullopt, target_error_};
  recompute_plan();
}

void PlaygroundState::recompute_plan() {
  if (!placements_ || !target_) return;
  try {
    PlanOptions options;
    options.cost.latency_us = std::max(0.0, inputs_.latency_us);
    options.cost.bandwidth_gbytes_per_s = std::max(1e-6, inputs_.bandwidth_gbytes_per_s);
    options.cost.step_latency_us = std::max(0.0, inputs_.step_latency_us);
    plan_ = plan_redistribute(*shape_, element_size(), *mesh_, *placements_, *target_, options);
  } catch (const std::exception& e) {
    plan_error_ = e.what();
    return;
  }
  for (const RedistributeStep& step : plan_->steps) {
    LayoutRequest request{*shape_, *mesh_, step.before, selection_, element_size()};
    StepLayouts layouts;
    layouts.before = compute_layout(request);
    request.placements = step.after;
    layouts.after = compute_layout(request);
    step_layouts_.push_back(std::move(layouts));
  }
  int last = static_cast<int>(plan_->steps.size()) - 1;
  selected_step = std::clamp(selected_step, 0, std::max(last, 0));
}

}  // namespace dtensor::gui
