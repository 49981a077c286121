// Open bar: path box, Load button and status. See open_bar.h.
#include "gui/panels/open_bar.h"

#include <imgui_stdlib.h>

#include <string>

namespace dtensor::gui {
namespace {

// The file name part of a path, for the status line.
std::string base_name(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void draw_status(ViewerState& state) {
  if (!state.trace_error.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(to_imvec4(kErrorColor), "%s", state.trace_error.c_str());
    if (ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40.0f);
      ImGui::TextUnformatted(state.trace_error.c_str());
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
    return;
  }
  ImGui::SameLine();
  if (!state.loaded) {
    ImGui::TextDisabled("no trace loaded (or drop a .json file on the window)");
    return;
  }
  const LoadedTrace& loaded = *state.loaded;
  const trace::CommTrace& trace = loaded.trace;
  ImGui::TextDisabled("%s: %lld ranks, %lld modules, %zu events", base_name(loaded.source).c_str(),
                      static_cast<long long>(trace.world_size),
                      static_cast<long long>(trace::module_count(loaded.tree)),
                      loaded.calls_recorded ? trace.collectives.size() : size_t{0});
  if (trace.mesh) {
    ImGui::SameLine();
    if (ImGui::SmallButton("Use trace mesh in playground")) state.use_trace_mesh();
  }
}

}  // namespace

void draw_open_bar(ViewerState& state, const PanelFrame& frame) {
  place_next_window(frame);
  ImGuiWindowFlags flags = frame.flags | ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar;
  if (!ImGui::Begin("Open trace", nullptr, flags)) {
    ImGui::End();
    return;
  }
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Trace");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 24.0f);
  bool enter = ImGui::InputTextWithHint("##path", "path/to/comm_trace.json", &state.open_path,
                                        ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if ((ImGui::Button("Load") || enter) && !state.open_path.empty())
    state.load_trace(state.open_path);
  draw_status(state);
  ImGui::End();
}

}  // namespace dtensor::gui
