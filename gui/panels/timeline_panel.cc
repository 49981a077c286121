// Timeline panel: legend, zoom, lanes and event tooltips. See timeline_panel.h.
#include "gui/panels/timeline_panel.h"

#include <algorithm>
#include <string>

#include "gui/model/call_preset.h"
#include "gui/model/comm_table_model.h"
#include "gui/model/format.h"
#include "layout/text.h"

namespace dtensor::gui {
namespace {

const ImU32 kMismatch = IM_COL32(255, 80, 80, 255);

struct LaneGeometry {
  ImVec2 origin;  // top-left of lane 0's first cell (screen)
  float label_w;
  float cell_w;
  float lane_h;
  float axis_h;
};

// Kind swatches, wrapped to the window width.
void draw_legend(const TimelineModel& timeline) {
  for (size_t i = 0; i < timeline.kinds.size(); ++i) {
    ImGui::PushID(static_cast<int>(i));
    const std::string& kind = timeline.kinds[i];
    flow_item(i == 0, ImGui::GetTextLineHeight() + ImGui::CalcTextSize(kind.c_str()).x + 4.0f);
    color_swatch(collective_kind_color(kind), kind.c_str());
    ImGui::PopID();
  }
  ImGui::TextDisabled("solid = forward, hatched = backward, amber corner = implicit");
  if (!timeline.mismatched_seqs.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(
        to_imvec4(kErrorColor),
        "Red marks: %zu calls where the ranks disagree (kind, bytes or a missing call).",
        timeline.mismatched_seqs.size());
    ImGui::PopTextWrapPos();
  }
}

void event_tooltip(const trace::CollectiveRecord& e, bool mismatch) {
  ImGui::BeginTooltip();
  ImGui::Text("rank %lld, call #%lld: %s", static_cast<long long>(e.rank),
              static_cast<long long>(e.seq), e.kind.c_str());
  ImGui::Separator();
  ImGui::Text("bytes   %s", format_bytes(e.bytes).c_str());
  ImGui::Text("module  %s (%s)", e.module.empty() ? "-" : e.module.c_str(),
              trace::phase_name(e.phase));
  ImGui::Text("group   %s%s", format_rank_list(e.group).c_str(),
              e.mesh_dim >= 0 ? (", mesh dim " + std::to_string(e.mesh_dim)).c_str() : "");
  if (!e.input_shapes.empty())
    ImGui::Text("shape   %s %s", format_shape(e.input_shapes.front()).c_str(), e.dtype.c_str());
  if (e.origin) {
    ImGui::Separator();
    ImGui::TextColored(to_imvec4(e.origin->is_explicit ? kExplicitColor : kImplicitColor), "%s",
                       origin_summary(*e.origin).c_str());
    if (!e.origin->rejected_strategy.empty())
      ImGui::Text("chose %s over %s (cost %.0f)", e.origin->strategy.c_str(),
                  e.origin->rejected_strategy.c_str(), e.origin->rejected_cost);
  }
  if (mismatch) ImGui::TextColored(to_imvec4(kErrorColor), "ranks disagree at this call");
  ImGui::TextDisabled("click: bytes on the Mesh panel, transition in the Playground");
  ImGui::EndTooltip();
}

// The smallest of 1, 2, 5, 10, 20, 50, ... calls whose labels do not overlap.
int64_t tick_step(float cell_w, float min_gap) {
  for (int64_t base = 1;; base *= 10) {
    for (int64_t m : {1, 2, 5}) {
      if (static_cast<float>(base * m) * cell_w >= min_gap || base > (int64_t{1} << 50))
        return base * m;
    }
  }
}

void draw_axis(ImDrawList* draw, const TimelineModel& timeline, const LaneGeometry& g) {
  ImU32 color = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  int64_t step = tick_step(g.cell_w, ImGui::CalcTextSize("0000").x + 8.0f);
  for (int64_t seq = 0; seq <= timeline.max_seq; seq += step) {
    float x = g.origin.x + g.label_w + seq * g.cell_w;
    draw->AddText(ImVec2(x + 2, g.origin.y - g.axis_h), color, std::to_string(seq).c_str());
  }
  for (int64_t seq : timeline.mismatched_seqs) {
    float x = g.origin.x + g.label_w + seq * g.cell_w;
    draw->AddTriangleFilled(ImVec2(x + 1, g.origin.y - 7), ImVec2(x + g.cell_w - 1, g.origin.y - 7),
                            ImVec2(x + g.cell_w / 2, g.origin.y - 1), kMismatch);
  }
}

// Draws one lane; returns the index of the hovered event or SIZE_MAX. Events
// the implicit filter hides are drawn faint; implicit ones carry an amber
// mark on top; the selected call (same seq on every rank) is outlined white.
size_t draw_lane(ImDrawList* draw, const ViewerState& state, const trace::CommTrace& trace,
                 const TimelineLane& lane, const LaneGeometry& g, float y) {
  const TimelineModel& timeline = state.timeline;
  size_t hovered = SIZE_MAX;
  ImVec2 mouse = ImGui::GetIO().MousePos;
  bool window_hovered = ImGui::IsWindowHovered();
  const int64_t selected_seq =
      state.selected_event ? trace.collectives[*state.selected_event].seq : int64_t{-1};
  for (size_t index : lane.events) {
    const trace::CollectiveRecord& e = trace.collectives[index];
    ImVec2 min(g.origin.x + g.label_w + e.seq * g.cell_w + 1, y + 2);
    ImVec2 max(min.x + std::max(g.cell_w - 2, 1.0f), y + g.lane_h - 2);
    Rgb color = collective_kind_color(e.kind);
    bool shown = state.shows_event(e);
    draw->AddRectFilled(min, max, to_imu32(color, shown ? 1.0f : 0.25f), 2.0f);
    if (e.phase == trace::Phase::kBackward && shown) {
      draw_hatching(draw, min, max, IM_COL32(0, 0, 0, 150), 5.0f);
    }
    if (e.origin && !e.origin->is_explicit) {
      float s = std::min(std::max(g.cell_w * 0.4f, 5.0f), 11.0f);
      draw->AddTriangleFilled(ImVec2(min.x, min.y), ImVec2(min.x + s, min.y),
                              ImVec2(min.x, min.y + s), to_imu32(kImplicitColor));
    }
    if (timeline.mismatched_seqs.count(e.seq)) draw->AddRect(min, max, kMismatch, 2.0f, 0, 2.0f);
    if (e.seq == selected_seq)
      draw->AddRect(ImVec2(min.x - 1, min.y - 1), ImVec2(max.x + 1, max.y + 1),
                    IM_COL32(255, 255, 255, 255), 2.0f, 0, 2.0f);
    if (window_hovered && mouse.x >= min.x && mouse.x < max.x && mouse.y >= min.y &&
        mouse.y < max.y)
      hovered = index;
  }
  return hovered;
}

// Lane labels stay at the visible left edge while the events scroll.
void draw_lane_labels(ViewerState& state, ImDrawList* draw, const LaneGeometry& g,
                      const RankPalette& palette) {
  float left = ImGui::GetWindowPos().x;
  draw->AddRectFilled(ImVec2(left, g.origin.y - g.axis_h),
                      ImVec2(left + g.label_w, g.origin.y + state.timeline.lanes.size() * g.lane_h),
                      ImGui::GetColorU32(ImGuiCol_WindowBg));
  for (size_t i = 0; i < state.timeline.lanes.size(); ++i) {
    int64_t rank = state.timeline.lanes[i].rank;
    float y = g.origin.y + i * g.lane_h;
    float swatch = ImGui::GetTextLineHeight() * 0.7f;
    float mid = y + (g.lane_h - swatch) / 2;
    draw->AddRectFilled(ImVec2(left + 4, mid), ImVec2(left + 4 + swatch, mid + swatch),
                        to_imu32(palette.color(rank)), 2.0f);
    bool odd = state.loaded && std::binary_search(state.loaded->trace.differing_ranks.begin(),
                                                  state.loaded->trace.differing_ranks.end(), rank);
    std::string label = "rank " + std::to_string(rank);
    draw->AddText(ImVec2(left + 8 + swatch, y + (g.lane_h - ImGui::GetTextLineHeight()) / 2),
                  odd ? to_imu32(kErrorColor) : ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
  }
}

void draw_lanes(ViewerState& state, const trace::CommTrace& trace) {
  const TimelineModel& timeline = state.timeline;
  LaneGeometry g;
  g.label_w = ImGui::CalcTextSize("rank 0000").x + ImGui::GetTextLineHeight();
  g.cell_w = state.timeline_cell_width;
  g.lane_h = std::max(ImGui::GetTextLineHeight() + 8.0f, 22.0f);
  g.axis_h = ImGui::GetTextLineHeight() + 8.0f;
  ImGui::BeginChild("lanes", ImVec2(0, 0), true, ImGuiWindowFlags_HorizontalScrollbar);
  ImVec2 start = ImGui::GetCursorScreenPos();
  g.origin = ImVec2(start.x, start.y + g.axis_h);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const RankPalette& palette = state.trace_palette;
  size_t hovered = SIZE_MAX;
  for (size_t i = 0; i < timeline.lanes.size(); ++i) {
    size_t h = draw_lane(draw, state, trace, timeline.lanes[i], g, g.origin.y + i * g.lane_h);
    if (h != SIZE_MAX) hovered = h;
  }
  draw_axis(draw, timeline, g);
  draw_lane_labels(state, draw, g, palette);
  ImGui::Dummy(ImVec2(g.label_w + (timeline.max_seq + 1) * g.cell_w + 8,
                      g.axis_h + timeline.lanes.size() * g.lane_h));
  if (hovered != SIZE_MAX) {
    const trace::CollectiveRecord& e = trace.collectives[hovered];
    event_tooltip(e, timeline.mismatched_seqs.count(e.seq) > 0);
    state.set_hover({e.rank});
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) state.select_call(hovered);
  }
  ImGui::EndChild();
}

}  // namespace

void draw_timeline_panel(ViewerState& state, const PanelFrame& frame) {
  place_next_window(frame);
  if (!ImGui::Begin("Timeline", nullptr, frame.flags)) {
    ImGui::End();
    return;
  }
  if (!state.loaded || state.timeline.lanes.empty()) {
    ImGui::TextUnformatted(state.loaded ? "This trace has no events (schema key \"events\")."
                                        : "No trace loaded.");
    hint_text(
        "The timeline shows every collective per rank in issue order; it needs a trace "
        "with events, e.g. a merged fake-world trace.");
    ImGui::End();
    return;
  }
  draw_legend(state.timeline);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10.0f);
  ImGui::SliderFloat("zoom (px per call)", &state.timeline_cell_width, 6.0f, 80.0f, "%.0f");
  ImGui::SameLine();
  ImGui::Checkbox("implicit only", &state.implicit_only);
  if (state.implicit_only) {
    ImGui::SameLine();
    ImGui::TextColored(to_imvec4(kImplicitColor), "%lld implicit",
                       static_cast<long long>(state.origin_counts.implicit));
  }
  draw_lanes(state, state.loaded->trace);
  ImGui::End();
}

}  // namespace dtensor::gui
