// Plan panel: stacked bars and the sweep table. See plan_panel.h.
#include "gui/panels/plan_panel.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "layout/text.h"

namespace dtensor::gui {
namespace {

// Slice colours, in order (memory: parameters, gradients, optimizer state,
// activations, allocator cache, NCCL buffers, CUDA context; time: compute,
// exposed comm, overlap slowdown, bubble).
const Rgb kSliceColors[] = {{78, 121, 167}, {242, 142, 43}, {89, 161, 79}, {225, 87, 89},
                            {176, 122, 161}, {118, 183, 178}, {186, 176, 172}};
const Rgb kCapColor{255, 255, 255};

// One horizontal bar of `slices` scaled so that `full` spans the width; a
// white tick at `mark` (the cap) when it is > 0; a legend below.
void stacked_bar(const char* id, const std::vector<PlanSlice>& slices, double full, double mark,
                 std::string (*format)(double)) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float width = std::max(100.0f, ImGui::GetContentRegionAvail().x - 8.0f);
  const float height = ImGui::GetTextLineHeight() * 1.6f;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  draw->AddRectFilled(origin, ImVec2(origin.x + width, origin.y + height), to_imu32(kCanvasBackground));
  const double scale = full > 0 ? width / full : 0;
  float x = origin.x;
  for (size_t i = 0; i < slices.size(); ++i) {
    const float w = static_cast<float>(slices[i].value * scale);
    if (w <= 0) continue;
    const ImVec2 min(x, origin.y), max(std::min(x + w, origin.x + width), origin.y + height);
    draw->AddRectFilled(min, max, to_imu32(kSliceColors[i % std::size(kSliceColors)]));
    draw_fitted_lines(draw, min, max, {format(slices[i].value)}, IM_COL32(255, 255, 255, 255), false);
    x += w;
  }
  if (mark > 0) {
    const float mx = origin.x + static_cast<float>(mark * scale);
    draw->AddLine(ImVec2(mx, origin.y - 3), ImVec2(mx, origin.y + height + 3), to_imu32(kCapColor), 2.0f);
  }
  ImGui::Dummy(ImVec2(width, height + 4));
  ImGui::PushID(id);
  for (size_t i = 0; i < slices.size(); ++i) {
    const std::string label = slices[i].name + " " + format(slices[i].value);
    flow_item(i == 0, ImGui::GetTextLineHeight() + ImGui::CalcTextSize(label.c_str()).x + 4.0f);
    color_swatch(kSliceColors[i % std::size(kSliceColors)], label.c_str());
  }
  ImGui::PopID();
}

std::string bytes_text(double v) { return format_bytes(v, 1); }

void draw_plan(const PlanSummary& p) {
  ImGui::TextColored(to_imvec4(p.fits ? Rgb{120, 200, 120} : kErrorColor), "%s: %s", p.spec.c_str(),
                     p.verdict.c_str());
  ImGui::Text("memory per rank: %s of %s (white line: the cap)", format_bytes(p.total_bytes, 2).c_str(),
              format_bytes(p.cap_bytes, 2).c_str());
  std::vector<PlanSlice> memory = p.memory;
  double listed = 0;
  for (const PlanSlice& s : memory) listed += s.value;
  if (p.total_bytes > listed) memory.push_back({"other", p.total_bytes - listed});
  stacked_bar("memory", memory, std::max(p.total_bytes, p.cap_bytes), p.cap_bytes, bytes_text);
  ImGui::Spacing();
  ImGui::Text("step %s with overlap (%s serial)", format_duration_us(p.step_us).c_str(), format_duration_us(p.serial_us).c_str());
  if (p.tokens_per_s_per_gpu > 0) {
    ImGui::SameLine();
    ImGui::Text(";  %.0f tokens/s per GPU, MFU %.1f%%", p.tokens_per_s_per_gpu, 100 * p.mfu);
  }
  stacked_bar("time", p.time, std::max(p.step_us, 1.0), 0, format_duration_us);
}

void draw_sweep_table(ViewerState& state) {
  const PlanReport& r = *state.plan;
  ImGui::Text("%zu plans, %lld fit; click a row to draw it", r.plans.size(), static_cast<long long>(r.fitting));
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("plans", 6, flags, ImVec2(0, 0))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("#", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("plan", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("memory/rank", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("step", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("tokens/s/GPU", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("MFU", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(r.plans.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const PlanSummary& p = r.plans[static_cast<size_t>(i)];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const std::string label = std::to_string(i + 1);
      if (ImGui::Selectable(label.c_str(), state.selected_plan == static_cast<size_t>(i),
                            ImGuiSelectableFlags_SpanAllColumns)) {
        state.selected_plan = static_cast<size_t>(i);
      }
      ImGui::TableNextColumn();
      if (p.fits) {
        ImGui::TextUnformatted(p.spec.c_str());
      } else {
        ImGui::TextColored(to_imvec4(kErrorColor), "%s", p.spec.c_str());
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_bytes(p.total_bytes, 2).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration_us(p.step_us).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%.0f", p.tokens_per_s_per_gpu);
      ImGui::TableNextColumn();
      ImGui::Text("%.1f%%", 100 * p.mfu);
    }
  }
  ImGui::EndTable();
}

}  // namespace

void draw_plan_panel(ViewerState& state, const PanelFrame& frame) {
  place_next_window(frame);
  if (!ImGui::Begin("Plan", nullptr, frame.flags)) {
    ImGui::End();
    return;
  }
  if (!state.plan || state.plan->plans.empty()) {
    ImGui::TextUnformatted("No plan loaded.");
    hint_text("Open a capacity planner report: dtensor_plan ... --json plan.json (one plan or a sweep).");
    ImGui::End();
    return;
  }
  const PlanReport& r = *state.plan;
  state.selected_plan = std::min(state.selected_plan, r.plans.size() - 1);
  ImGui::TextDisabled("%s", r.model.c_str());
  draw_plan(r.plans[state.selected_plan]);
  if (r.sweep) {
    ImGui::Separator();
    draw_sweep_table(state);
  }
  ImGui::End();
}

}  // namespace dtensor::gui
