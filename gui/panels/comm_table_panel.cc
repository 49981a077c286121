// Comm table panel: trace summary, filter, module tree table, parameters and
// per-rank totals. See comm_table_panel.h.
#include "gui/panels/comm_table_panel.h"

#include <imgui_stdlib.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gui/model/call_preset.h"
#include "gui/model/comm_table_model.h"
#include "gui/model/format.h"
#include "gui/model/shape_text.h"
#include "layout/text.h"

namespace dtensor::gui {
namespace {

enum Column { kModule, kType, kForward, kBackward, kBytes, kRanks, kColumnCount };

std::string to_lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

void draw_summary(const ViewerState& state, const LoadedTrace& loaded) {
  const trace::CommTrace& trace = loaded.trace;
  std::string view = trace.rank < 0 ? "merged view" : "view of rank " + std::to_string(trace.rank);
  ImGui::Text("%s", loaded.source.c_str());
  std::string mesh;
  if (trace.mesh) {
    mesh = ", mesh " + format_shape(trace.mesh->shape);
    for (size_t i = 0; i < trace.mesh->dim_names.size(); ++i)
      mesh += (i ? "," : " ") + trace.mesh->dim_names[i];
  }
  ImGui::TextDisabled("schema %lld, %lld ranks, %s%s, %lld modules, %zu events",
                      static_cast<long long>(loaded.schema_version),
                      static_cast<long long>(trace.world_size), view.c_str(), mesh.c_str(),
                      static_cast<long long>(trace::module_count(loaded.tree)),
                      loaded.calls_recorded ? trace.collectives.size() : size_t{0});
  for (const std::string& warning : loaded.warnings) show_error_text("warning: " + warning);
  if (!trace.differing_ranks.empty()) {
    show_error_text(
        "Rank(s) " + format_rank_list(trace.differing_ranks) +
        " issued different collectives than the others: rows in red differ between ranks.");
  }
  show_error_text(state.trace_error);
}

// "AR 1  AG 2" in kind colours; "-" when empty. Tooltip-free (the row has one).
void draw_kind_counts(const trace::KindCounts& counts) {
  bool any = false;
  for (const auto& [kind, count] : counts) {
    if (count == 0) continue;
    if (any) ImGui::SameLine(0.0f, 8.0f);
    ImGui::TextColored(to_imvec4(collective_kind_color(kind)), "%s %lld",
                       collective_abbreviation(kind).c_str(), static_cast<long long>(count));
    any = true;
  }
  if (!any) ImGui::TextDisabled("-");
}

void module_tooltip(const trace::ModuleNode& m, const ModuleRankCounts* counts) {
  ImGui::BeginTooltip();
  ImGui::Text("%s  %s", m.fqn.c_str(), m.module_type.c_str());
  ImGui::Separator();
  for (const auto* phase : {&m.forward_counts, &m.backward_counts}) {
    const trace::KindCounts& bytes =
        phase == &m.forward_counts ? m.forward_bytes : m.backward_bytes;
    for (const auto& [kind, count] : *phase) {
      auto b = bytes.find(kind);
      ImGui::Text("%s %s x%lld, %s", phase == &m.forward_counts ? "forward " : "backward",
                  kind.c_str(), static_cast<long long>(count),
                  b == bytes.end() ? "-" : format_bytes(b->second).c_str());
    }
  }
  for (const trace::OpRecord& op : m.forward_operations)
    ImGui::TextDisabled("op %s", op.name.c_str());
  if (counts && !counts->differing_ranks.empty()) {
    ImGui::Separator();
    for (const auto& [rank, kinds] : counts->by_rank) {
      int64_t total = 0;
      for (const auto& [kind, n] : kinds) total += n;
      bool odd =
          std::binary_search(counts->differing_ranks.begin(), counts->differing_ranks.end(), rank);
      ImGui::TextColored(odd ? to_imvec4(kErrorColor) : ImGui::GetStyleColorVec4(ImGuiCol_Text),
                         "rank %lld: %lld collectives%s", static_cast<long long>(rank),
                         static_cast<long long>(total), odd ? "  (differs)" : "");
    }
  }
  ImGui::EndTooltip();
}

void draw_row_cells(const trace::ModuleNode& m, const ModuleRankCounts* counts) {
  if (ImGui::TableSetColumnIndex(kType)) ImGui::TextDisabled("%s", m.module_type.c_str());
  ImGui::TableSetColumnIndex(kForward);
  draw_kind_counts(m.forward_counts);
  ImGui::TableSetColumnIndex(kBackward);
  draw_kind_counts(m.backward_counts);
  ImGui::TableSetColumnIndex(kBytes);
  int64_t bytes = m.total_bytes();
  if (bytes > 0) {
    ImGui::TextUnformatted(format_bytes(bytes).c_str());
  } else {
    ImGui::TextDisabled("-");
  }
  ImGui::TableSetColumnIndex(kRanks);
  if (counts && !counts->differing_ranks.empty()) {
    ImGui::TextColored(to_imvec4(kErrorColor), "differs: %s",
                       format_rank_list(counts->differing_ranks).c_str());
  } else if (counts) {
    ImGui::TextDisabled("same");
  }
}

void draw_tree_row(ViewerState& state, const TableNode& node, int depth, bool force_open) {
  const trace::ModuleNode& m = *node.module;
  auto found = state.module_counts.find(m.fqn);
  const ModuleRankCounts* counts = found == state.module_counts.end() ? nullptr : &found->second;
  bool differs = counts && !counts->differing_ranks.empty();
  ImGui::TableNextRow();
  if (differs) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, to_imu32(kDifferenceColor, 0.7f));
  ImGui::TableSetColumnIndex(kModule);
  bool leaf = node.children.empty();
  ImGuiTreeNodeFlags flags = ImGuiTreeNodeFlags_SpanFullWidth;
  if (leaf) flags |= ImGuiTreeNodeFlags_Leaf | ImGuiTreeNodeFlags_NoTreePushOnOpen;
  if (depth < 3 || differs) flags |= ImGuiTreeNodeFlags_DefaultOpen;  // lead to the culprit
  if (force_open) ImGui::SetNextItemOpen(true);
  std::string name = depth == 0 ? m.fqn : m.short_name();
  bool open = ImGui::TreeNodeEx(m.fqn.c_str(), flags, "%s", name.c_str());
  if (ImGui::IsItemHovered()) module_tooltip(m, counts);
  draw_row_cells(m, counts);
  if (open && !leaf) {
    for (const TableNode& child : node.children) draw_tree_row(state, child, depth + 1, force_open);
    ImGui::TreePop();
  }
}

void apply_sort(ViewerState& state) {
  ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
  if (!specs || !specs->SpecsDirty) return;
  CommTableOptions& options = state.comm_options;
  options.column = CommSortColumn::kTree;
  if (specs->SpecsCount > 0) {
    const ImGuiTableColumnSortSpecs& s = specs->Specs[0];
    static const CommSortColumn kByColumn[] = {CommSortColumn::kName,    CommSortColumn::kTree,
                                               CommSortColumn::kForward, CommSortColumn::kBackward,
                                               CommSortColumn::kBytes,   CommSortColumn::kTree};
    options.column = kByColumn[std::clamp<int>(s.ColumnIndex, 0, kColumnCount - 1)];
    options.descending = s.SortDirection == ImGuiSortDirection_Descending;
  }
  specs->SpecsDirty = false;
}

void draw_module_table(ViewerState& state, const LoadedTrace& loaded, float height) {
  ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_SortTristate |
                          ImGuiTableFlags_Hideable | ImGuiTableFlags_Resizable |
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersV |
                          ImGuiTableFlags_BordersOuterH | ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable("modules", kColumnCount, flags, ImVec2(0.0f, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  // Every column stretches by weight so the module names keep their share in
  // narrow windows. Type starts hidden (right-click a header to show it).
  const ImGuiTableColumnFlags stretch = ImGuiTableColumnFlags_WidthStretch;
  ImGui::TableSetupColumn("Module", stretch | ImGuiTableColumnFlags_NoHide, 1.7f);
  ImGui::TableSetupColumn(
      "Type", stretch | ImGuiTableColumnFlags_NoSort | ImGuiTableColumnFlags_DefaultHide, 1.2f);
  ImGui::TableSetupColumn("Forward", stretch, 1.4f);
  ImGui::TableSetupColumn("Backward", stretch, 1.4f);
  ImGui::TableSetupColumn("Bytes", stretch, 0.8f);
  ImGui::TableSetupColumn("Ranks", stretch | ImGuiTableColumnFlags_NoSort, 0.9f);
  ImGui::TableHeadersRow();
  apply_sort(state);
  std::optional<TableNode> tree = build_comm_tree(loaded.tree, state.comm_options);
  if (tree) draw_tree_row(state, *tree, 0, !state.comm_options.filter.empty());
  ImGui::EndTable();
  if (!tree) ImGui::TextDisabled("No module matches \"%s\".", state.comm_options.filter.c_str());
}

void collect_parameters(const trace::ModuleNode& m,
                        std::vector<std::pair<std::string, std::string>>* out) {
  for (const auto& [name, placements] : m.parameters)
    out->emplace_back(m.fqn + "." + name, placements);
  for (const trace::ModuleNode& child : m.children) collect_parameters(child, out);
}

void draw_parameters(ViewerState& state, const LoadedTrace& loaded) {
  std::vector<std::pair<std::string, std::string>> params;
  collect_parameters(loaded.tree, &params);
  std::string header = "Parameters (" + std::to_string(params.size()) + ")###parameters";
  if (params.empty() || !ImGui::CollapsingHeader(header.c_str())) return;
  std::string needle = to_lower(state.comm_options.filter);
  if (!ImGui::BeginTable("params", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp))
    return;
  for (size_t i = 0; i < params.size(); ++i) {
    if (to_lower(params[i].first).find(needle) == std::string::npos) continue;
    ImGui::PushID(static_cast<int>(i));
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(params[i].first.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(params[i].second.c_str());
    ImGui::TableNextColumn();
    if (ImGui::SmallButton("to playground")) {
      state.playground.inputs().placements = normalize_placements_text(params[i].second);
    }
    ImGui::PopID();
  }
  ImGui::EndTable();
}

// Collective counts per rank (outliers highlighted) and, on worlds that
// count memory, each rank's peak bytes, where it was reached and the cap.
void draw_per_rank_totals(const trace::CommTrace& trace) {
  std::vector<std::string> kinds = per_rank_kinds(trace);
  const bool memory = !trace.memory.empty();
  if (kinds.empty() && !memory) return;
  ImGuiTreeNodeFlags open = trace.differing_ranks.empty() ? 0 : ImGuiTreeNodeFlags_DefaultOpen;
  if (!ImGui::CollapsingHeader("Per-rank totals", open)) return;
  std::map<std::string, std::vector<int64_t>> outliers = per_rank_outliers(trace);
  int columns = static_cast<int>(kinds.size()) + 1 + (memory ? 3 : 0);
  if (!ImGui::BeginTable(
          "per_rank", columns,
          ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInner | ImGuiTableFlags_SizingFixedFit))
    return;
  ImGui::TableSetupColumn("rank");
  for (const std::string& kind : kinds) ImGui::TableSetupColumn(kind.c_str());
  if (memory) {
    ImGui::TableSetupColumn("peak memory");
    ImGui::TableSetupColumn("cap");
    ImGui::TableSetupColumn("peak at");
  }
  ImGui::TableHeadersRow();
  std::set<int64_t> ranks;
  for (const auto& [rank, counts] : trace.per_rank_counts) ranks.insert(rank);
  for (const auto& [rank, m] : trace.memory) ranks.insert(rank);
  for (int64_t rank : ranks) {
    ImGui::PushID(static_cast<int>(rank));
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("%lld", static_cast<long long>(rank));
    auto counts = trace.per_rank_counts.find(rank);
    for (const std::string& kind : kinds) {
      ImGui::TableNextColumn();
      const std::vector<int64_t>& odd = outliers[kind];
      if (std::binary_search(odd.begin(), odd.end(), rank)) {
        ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, to_imu32(kDifferenceColor));
      }
      int64_t n = 0;
      if (counts != trace.per_rank_counts.end()) {
        auto it = counts->second.find(kind);
        if (it != counts->second.end()) n = it->second;
      }
      ImGui::Text("%lld", static_cast<long long>(n));
    }
    if (memory) {
      auto m = trace.memory.find(rank);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(m == trace.memory.end() ? "-"
                                                     : format_bytes(m->second.peak_bytes).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(m == trace.memory.end() || m->second.cap_bytes <= 0
                                 ? "none"
                                 : format_bytes(m->second.cap_bytes).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(m == trace.memory.end() ? "" : m->second.peak_location.c_str());
    }
    ImGui::PopID();
  }
  ImGui::EndTable();
}

void draw_kind_legend(const trace::CommTrace& trace) {
  std::vector<std::string> kinds = per_rank_kinds(trace);
  for (size_t i = 0; i < kinds.size(); ++i) {
    std::string text = collective_abbreviation(kinds[i]) + " = " + kinds[i];
    flow_item(i == 0, ImGui::CalcTextSize(text.c_str()).x);
    ImGui::TextColored(to_imvec4(collective_kind_color(kinds[i])), "%s", text.c_str());
  }
}

// A filled tag: `text` in dark letters on `color` (reads at a glance, and
// the screenshot tests count its pixels).
void badge(const char* text, Rgb color) {
  ImVec2 size = ImGui::CalcTextSize(text);
  ImVec2 pos = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(pos, ImVec2(pos.x + size.x + 8, pos.y + size.y), to_imu32(color), 3.0f);
  draw->AddText(ImVec2(pos.x + 4, pos.y), IM_COL32(24, 24, 24, 255), text);
  ImGui::Dummy(ImVec2(size.x + 8, size.y));
}

// "implicit" / "explicit" tag in its colour; "-" without origin.
void origin_tag(const trace::CollectiveRecord& e) {
  if (!e.origin) {
    ImGui::TextDisabled("-");
  } else if (e.origin->is_explicit) {
    badge("explicit", kExplicitColor);
  } else {
    badge("implicit", kImplicitColor);
  }
}

void call_tooltip(const trace::CollectiveRecord& e) {
  ImGui::BeginTooltip();
  ImGui::Text("rank %lld, call #%lld: %s, %s", static_cast<long long>(e.rank),
              static_cast<long long>(e.seq), e.kind.c_str(), format_bytes(e.bytes).c_str());
  ImGui::Text("module %s (%s), group %s", e.module.empty() ? "-" : e.module.c_str(),
              trace::phase_name(e.phase), format_rank_list(e.group).c_str());
  if (e.origin) {
    const CollectiveOrigin& o = *e.origin;
    ImGui::Separator();
    ImGui::TextUnformatted(origin_summary(o).c_str());
    if (o.mesh_dim >= 0) ImGui::Text("mesh dim %lld", static_cast<long long>(o.mesh_dim));
    if (!o.strategy.empty()) ImGui::Text("strategy chosen: %s", o.strategy.c_str());
    if (!o.rejected_strategy.empty())
      ImGui::Text("cheapest rejected: %s (cost %.0f)", o.rejected_strategy.c_str(),
                  o.rejected_cost);
  }
  ImGui::TextDisabled("click: draw its bytes on the Mesh panel and open it in the Playground");
  ImGui::EndTooltip();
}

void draw_call_row(ViewerState& state, const trace::CommTrace& trace, size_t index) {
  const trace::CollectiveRecord& e = trace.collectives[index];
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  std::string label = std::to_string(e.seq) + "##call" + std::to_string(index);
  bool selected = state.selected_event == index;
  if (ImGui::Selectable(label.c_str(), selected, ImGuiSelectableFlags_SpanAllColumns))
    state.select_call(index);
  if (ImGui::IsItemHovered()) {
    call_tooltip(e);
    state.set_hover(e.group);  // its process group lights up in the Mesh panel
  }
  ImGui::TableNextColumn();
  ImGui::TextColored(to_imvec4(collective_kind_color(e.kind)), "%s",
                     collective_abbreviation(e.kind).c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(format_bytes(e.bytes).c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(e.module.empty() ? "-" : e.module.c_str());
  ImGui::TableNextColumn();
  if (!e.origin) {
    ImGui::TextDisabled("-");
  } else {
    const CollectiveOrigin& o = *e.origin;
    std::string where = o.op.empty() ? "" : o.op;
    if (o.input_index >= 0) where += " #" + std::to_string(o.input_index);
    ImGui::TextUnformatted(where.empty() ? "-" : where.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%s -> %s", origin_placements_text(o.from_placements).c_str(),
                origin_placements_text(o.to_placements).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(o.step ? o.step->to_string().c_str() : "");
  }
  if (!e.origin) ImGui::TableNextColumn(), ImGui::TableNextColumn();
  ImGui::TableNextColumn();
  origin_tag(e);
  ImGui::TableNextColumn();
  ImGui::TextDisabled("%s", e.origin ? e.origin->cause.c_str() : "");
}

// Every call of one rank with its origin; the implicit filter; click a row to
// select the call (Mesh panel bytes, playground preset).
void draw_calls(ViewerState& state, const trace::CommTrace& trace, float height) {
  if (trace.collectives.empty()) return;
  const OriginCounts& counts = state.origin_counts;
  std::string header = counts.with_origin == 0
                           ? std::string("Calls (this trace records no origins)###calls")
                           : "Calls and their origins (" + std::to_string(counts.implicit) +
                                 " implicit of " + std::to_string(counts.with_origin) +
                                 " with origin)###calls";
  // Open by default when there are origins to show (schema 2 traces).
  ImGuiTreeNodeFlags open = counts.with_origin > 0 ? ImGuiTreeNodeFlags_DefaultOpen : 0;
  if (!ImGui::CollapsingHeader(header.c_str(), open)) return;
  ImGui::Checkbox("implicit only", &state.implicit_only);
  ImGui::SameLine();
  int rank = static_cast<int>(state.calls_rank);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.0f);
  if (ImGui::InputInt("rank", &rank))
    state.calls_rank = std::clamp<int64_t>(rank, 0, std::max<int64_t>(trace.world_size - 1, 0));
  if (counts.with_origin == 0) {
    ImGui::SameLine();
    ImGui::TextDisabled("(schema 2 traces record why each call happened)");
  }
  if (!state.call_message.empty() && state.selected_event) {
    ImGui::TextDisabled("selected call: %s", state.call_message.c_str());
  }
  std::vector<size_t> rows =
      calls_of_rank(trace, state.calls_rank, state.implicit_only, state.comm_options.filter);
  ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersV |
                          ImGuiTableFlags_BordersOuterH | ImGuiTableFlags_ScrollY |
                          ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("calls", 9, flags, ImVec2(0.0f, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("#", 0, 0.3f);
  ImGui::TableSetupColumn("call", 0, 0.4f);
  ImGui::TableSetupColumn("bytes", 0, 0.6f);
  ImGui::TableSetupColumn("module", 0, 1.2f);
  ImGui::TableSetupColumn("op, input", 0, 1.4f);
  ImGui::TableSetupColumn("from -> to", 0, 2.1f);
  ImGui::TableSetupColumn("step", 0, 0.9f);
  ImGui::TableSetupColumn("origin", 0, 0.7f);
  ImGui::TableSetupColumn("cause", 0, 1.0f);
  ImGui::TableHeadersRow();
  for (size_t index : rows) draw_call_row(state, trace, index);
  ImGui::EndTable();
  if (rows.empty())
    ImGui::TextDisabled(
        state.implicit_only ? "No implicit calls on rank %lld." : "No calls on rank %lld.",
        static_cast<long long>(state.calls_rank));
}

}  // namespace

void draw_comm_table_panel(ViewerState& state, const PanelFrame& frame) {
  place_next_window(frame);
  if (!ImGui::Begin("Comm table", nullptr, frame.flags)) {
    ImGui::End();
    return;
  }
  if (!state.loaded) {
    ImGui::TextUnformatted("No trace loaded.");
    hint_text(
        "Open one with the box at the top, drop a .json file on the window, or run "
        "dtensor-viewer trace.json. Traces come from CommDebugMode::generate_json_dump "
        "(format: trace/comm_trace_schema.md).");
    show_error_text(state.trace_error);
    ImGui::End();
    return;
  }
  const LoadedTrace& loaded = *state.loaded;
  draw_summary(state, loaded);
  ImGui::SetNextItemWidth(std::min(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 22.0f));
  ImGui::InputTextWithHint("##filter", "filter: module, type, collective, parameter or op",
                           &state.comm_options.filter);
  draw_kind_legend(loaded.trace);
  float avail = ImGui::GetContentRegionAvail().y;
  float share = state.origin_counts.with_origin > 0 ? 0.32f : 0.62f;
  draw_module_table(state, loaded, std::max(avail * share, ImGui::GetFontSize() * 8.0f));
  if (loaded.calls_recorded)
    draw_calls(state, loaded.trace, std::max(avail * 0.42f, ImGui::GetFontSize() * 8.0f));
  draw_parameters(state, loaded);
  draw_per_rank_totals(loaded.trace);
  ImGui::End();
}

}  // namespace dtensor::gui
