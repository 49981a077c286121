// Playground panel: input fields, examples, the plan table and the
// before/after layouts of one step. See playground_panel.h.
#include "gui/panels/playground_panel.h"

#include <imgui_stdlib.h>

#include <algorithm>
#include <string>

#include "layout/comm_cost.h"
#include "layout/text.h"
#include "gui/model/format.h"
#include "gui/panels/layout_canvas.h"

namespace dtensor::gui {
namespace {

struct Example {
  const char* title;
  const char* mesh;
  const char* tensor;
  const char* placements;
  const char* target;
};

constexpr Example kExamples[] = {
    {"Rows and columns sharded, gather rows", "dp=2, tp=2", "8, 6", "S(0), S(1)", "R, S(0)"},
    {"Uneven: 13 rows on 4 ranks", "tp=4", "13, 4", "S(0)", "R"},
    {"Partial sums to row shards", "dp=2, tp=2", "8, 8", "R, P(sum)", "R, S(0)"},
    {"Swap the sharded dims", "2, 2", "8, 8", "S(0), S(1)", "S(1), S(0)"},
    {"3-D mesh, 3-D tensor", "pp=2, dp=2, tp=2", "4, 8, 16", "R, S(0), S(2)", "S(1), R, S(0)"},
    {"FSDP + TP weight (_StridedShard)", "dp=2, tp=2", "8, 4", "_S(0, 2), S(0)", "R, S(0)"},
};

void examples_combo(PlaygroundInputs& inputs) {
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 18.0f);
  if (!ImGui::BeginCombo("##examples", "Examples...")) return;
  for (int i = 0; i < static_cast<int>(std::size(kExamples)); ++i) {
    ImGui::PushID(i);
    const Example& e = kExamples[i];
    if (ImGui::Selectable(e.title)) {
      inputs.mesh = e.mesh;
      inputs.tensor = e.tensor;
      inputs.placements = e.placements;
      inputs.target = e.target;
    }
    ImGui::PopID();
  }
  ImGui::EndCombo();
}

// A labelled text field framed in red with the error below when `error` is set.
void text_field(const char* label, const char* id, std::string* text, const std::string& error,
                const char* hint) {
  float label_w = ImGui::GetFontSize() * 6.5f;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(label);
  ImGui::SameLine(label_w);
  bool invalid = !error.empty();
  if (invalid) {
    ImGui::PushStyleColor(ImGuiCol_Border, to_imvec4(kErrorColor));
    ImGui::PushStyleVar(ImGuiStyleVar_FrameBorderSize, 2.0f);
  }
  ImGui::SetNextItemWidth(std::min(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 16.0f));
  ImGui::InputTextWithHint(id, hint, text);
  if (invalid) {
    ImGui::PopStyleVar();
    ImGui::PopStyleColor();
    ImGui::Indent(label_w);
    show_error_text(error);
    ImGui::Unindent(label_w);
  }
}

void draw_inputs(PlaygroundState& playground) {
  PlaygroundInputs& in = playground.inputs();
  examples_combo(in);
  text_field("Mesh", "##mesh", &in.mesh, playground.mesh_error(), "dp=2, tp=2");
  text_field("Tensor", "##tensor", &in.tensor, playground.tensor_error(), "8, 6");
  text_field("Placements", "##placements", &in.placements, playground.placements_error(),
             "S(0), R");
  text_field("Target", "##target", &in.target, playground.target_error(), "R, R");
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("dtype");
  ImGui::SameLine(ImGui::GetFontSize() * 6.5f);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.0f);
  const std::vector<DtypeChoice>& dtypes = dtype_choices();
  if (ImGui::BeginCombo("##dtype",
                        dtypes[static_cast<size_t>(std::clamp<int>(
                                   in.dtype_index, 0, static_cast<int>(dtypes.size()) - 1))]
                            .name)) {
    for (int i = 0; i < static_cast<int>(dtypes.size()); ++i) {
      ImGui::PushID(i);
      if (ImGui::Selectable(dtypes[static_cast<size_t>(i)].name, i == in.dtype_index))
        in.dtype_index = i;
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4.0f);
  ImGui::InputDouble("us latency", &in.latency_us, 0.0, 0.0, "%.1f");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4.0f);
  ImGui::InputDouble("us per ring step", &in.step_latency_us, 0.0, 0.0, "%.2f");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4.0f);
  ImGui::InputDouble("GB/s", &in.bandwidth_gbytes_per_s, 0.0, 0.0, "%.0f");
}

// "dp: S(0) -> R" (or "1: S(0) -> R" on an unnamed mesh).
std::string step_change(const MeshShape& mesh, const RedistributeStep& step) {
  std::string dim = mesh.has_dim_names() ? mesh.dim_names()[static_cast<size_t>(step.mesh_dim)]
                                         : std::to_string(step.mesh_dim);
  return dim + ": " + step.from.to_string() + " -> " + step.to.to_string();
}

// One row per step; click a row to show its layouts. Scrolls sideways when
// the panel is narrow.
void draw_step_table(PlaygroundState& playground, const RedistributePlan& plan) {
  ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH |
                          ImGuiTableFlags_BordersOuter | ImGuiTableFlags_SizingFixedFit |
                          ImGuiTableFlags_ScrollX;
  float row_h = ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().CellPadding.y;
  float height =
      row_h * static_cast<float>(plan.steps.size() + 1) + ImGui::GetStyle().ScrollbarSize + 4;
  if (!ImGui::BeginTable("steps", 5, flags, ImVec2(0.0f, height))) return;
  for (const char* name : {"#", "mesh dim: change", "collective", "bytes / rank", "est. time"}) {
    ImGui::TableSetupColumn(name);
  }
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const RedistributeStep& step = plan.steps[i];
    ImGui::PushID(static_cast<int>(i));
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    std::string index = std::to_string(i + 1);
    if (ImGui::Selectable(index.c_str(), playground.selected_step == static_cast<int>(i),
                          ImGuiSelectableFlags_SpanAllColumns)) {
      playground.selected_step = static_cast<int>(i);
    }
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(step_change(*playground.mesh(), step).c_str());
    ImGui::TableNextColumn();
    Rgb kind_color = is_collective(step.kind) ? collective_kind_color(step_kind_name(step.kind))
                                              : Rgb{160, 160, 160};
    ImGui::TextColored(to_imvec4(kind_color), "%s", step_kind_name(step.kind));
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_bytes(step.bytes_per_rank).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_duration_us(step.estimated_us).c_str());
    ImGui::PopID();
  }
  ImGui::EndTable();
}

void draw_step_layouts(ViewerState& state, size_t index, const RedistributeStep& step,
                       const StepLayouts& layouts) {
  const PlaygroundState& playground = state.playground;
  ImGui::Text("Step %zu: mesh dim %d, %s -> %s via %s", index + 1, step.mesh_dim,
              step.from.to_string().c_str(), step.to.to_string().c_str(),
              step_kind_name(step.kind));
  float line_h = ImGui::GetTextLineHeightWithSpacing();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  ImVec2 size((avail.x - 12.0f) / 2.0f, std::max(avail.y - line_h, 120.0f));
  const LayoutResult* sides[2] = {&layouts.before, &layouts.after};
  const char* captions[2] = {"before", "after"};
  for (int i = 0; i < 2; ++i) {
    ImGui::PushID(i);
    if (i == 1) ImGui::SameLine(0.0f, 12.0f);
    ImGui::BeginGroup();
    const LayoutResult& side = *sides[i];
    if (side.view) {
      ImGui::Text("%s: %s", captions[i], to_string(side.view->placements).c_str());
      int hovered = draw_layout_canvas(captions[i], *side.view, playground.palette(), state.hover(),
                                       size, /*compact=*/true);
      if (hovered >= 0) state.set_hover(side.view->blocks[static_cast<size_t>(hovered)].ranks);
    } else {
      show_error_text(side.error);
    }
    ImGui::EndGroup();
    ImGui::PopID();
  }
}

void draw_plan(ViewerState& state) {
  PlaygroundState& playground = state.playground;
  if (!playground.plan_error().empty()) {
    ImGui::TextUnformatted("No plan:");
    show_error_text(playground.plan_error());
    return;
  }
  if (!playground.plan()) {
    hint_text("Fix the fields marked in red to see the redistribute plan.");
    return;
  }
  const RedistributePlan& plan = *playground.plan();
  if (plan.steps.empty()) {
    ImGui::Text("%s is already the target: nothing to do.", to_string(plan.from).c_str());
    return;
  }
  ImGui::PushTextWrapPos(0.0f);
  ImGui::Text(
      "Plan %s -> %s: %zu step%s, %d collective%s, %s per rank, %s", to_string(plan.from).c_str(),
      to_string(plan.to).c_str(), plan.steps.size(), plan.steps.size() == 1 ? "" : "s",
      plan.num_collectives(), plan.num_collectives() == 1 ? "" : "s",
      format_bytes(plan.total_bytes_per_rank()).c_str(), format_duration_us(plan.estimated_us()).c_str());
  ImGui::PopTextWrapPos();
  draw_step_table(playground, plan);
  size_t step = static_cast<size_t>(
      std::clamp<int>(playground.selected_step, 0, static_cast<int>(plan.steps.size()) - 1));
  if (step < playground.step_layouts().size()) {
    draw_step_layouts(state, step, plan.steps[step], playground.step_layouts()[step]);
  }
}


// "Replaying call #1: implicit aten::mm input 1, S(0) -> R" above the inputs
// after a call was selected in the comm table or the timeline.
void draw_selected_call(const ViewerState& state) {
  if (!state.loaded || !state.selected_event ||
      *state.selected_event >= state.loaded->trace.collectives.size())
    return;
  const trace::CollectiveRecord& e = state.loaded->trace.collectives[*state.selected_event];
  ImGui::PushTextWrapPos(0.0f);
  if (e.origin && state.call_message.empty()) {
    ImGui::TextColored(to_imvec4(e.origin->is_explicit ? kExplicitColor : kImplicitColor),
                       "Replaying call #%lld (%s): %s", static_cast<long long>(e.seq), e.kind.c_str(),
                       origin_summary(*e.origin).c_str());
  } else {
    ImGui::TextDisabled("Call #%lld (%s) selected: %s", static_cast<long long>(e.seq), e.kind.c_str(),
                        state.call_message.c_str());
  }
  ImGui::PopTextWrapPos();
}

}  // namespace

void draw_playground_panel(ViewerState& state, const PanelFrame& frame) {
  place_next_window(frame);
  if (!ImGui::Begin("Playground", nullptr, frame.flags)) {
    ImGui::End();
    return;
  }
  draw_selected_call(state);
  draw_inputs(state.playground);
  ImGui::Separator();
  draw_plan(state);
  ImGui::End();
}

}  // namespace dtensor::gui
