// Window arrangement of the viewer. See viewer_frame.h.
#include "gui/app/viewer_frame.h"

#include "gui/panels/comm_table_panel.h"
#include "gui/panels/layout_panel.h"
#include "gui/panels/mesh_panel.h"
#include "gui/panels/open_bar.h"
#include "gui/panels/plan_panel.h"
#include "gui/panels/playground_panel.h"
#include "gui/panels/timeline_panel.h"

namespace dtensor::gui {
namespace {

PanelFrame tile(float x0, float y0, float x1, float y1, ImGuiCond cond) {
  return PanelFrame{ImVec2(x0, y0), ImVec2(x1 - x0, y1 - y0), cond, ImGuiWindowFlags_NoCollapse};
}

void draw_overview(ViewerState& state, ImVec2 d, bool relayout) {
  ImGuiCond cond = relayout ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
  float bar_h = ImGui::GetFrameHeight() + 2.0f * ImGui::GetStyle().WindowPadding.y;
  PanelFrame bar{
      ImVec2(0, 0), ImVec2(d.x, bar_h), ImGuiCond_Always,
      ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoSavedSettings};
  draw_open_bar(state, bar);
  float left = d.x * 0.36f, mesh_right = d.x * 0.54f, comm_right = d.x * 0.76f;
  float mid = d.y * 0.5f + bar_h * 0.5f;
  draw_playground_panel(state, tile(0, bar_h, left, d.y, cond));
  draw_mesh_panel(state, tile(left, bar_h, mesh_right, mid, cond));
  draw_layout_panel(state, tile(mesh_right, bar_h, d.x, mid, cond));
  if (state.plan && !state.loaded) {  // a capacity plan and no trace: the plan takes the trace's row
    draw_plan_panel(state, tile(left, mid, d.x, d.y, cond));
    return;
  }
  draw_comm_table_panel(state, tile(left, mid, comm_right, d.y, cond));
  draw_timeline_panel(state, tile(comm_right, mid, d.x, d.y, cond));
}

}  // namespace

void draw_viewer_frame(ViewerState& state, PanelId panel, ImVec2 display, bool relayout) {
  if (panel == PanelId::kAll) {
    draw_overview(state, display, relayout);
    return;
  }
  PanelFrame full{
      ImVec2(0, 0), display, ImGuiCond_Always,
      ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse};
  switch (panel) {
    case PanelId::kMesh:
      draw_mesh_panel(state, full);
      break;
    case PanelId::kLayout:
      draw_layout_panel(state, full);
      break;
    case PanelId::kPlayground:
      draw_playground_panel(state, full);
      break;
    case PanelId::kCommTable:
      draw_comm_table_panel(state, full);
      break;
    case PanelId::kTimeline:
      draw_timeline_panel(state, full);
      break;
    case PanelId::kPlan:
      draw_plan_panel(state, full);
      break;
    case PanelId::kAll:
      break;
  }
}

}  // namespace dtensor::gui
