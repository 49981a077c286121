// Command-line parsing of dtensor-viewer. See viewer_options.h.
#include "gui/model/viewer_options.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace dtensor::gui {
namespace {

constexpr const char* kPanelNames[] = {"all",        "mesh",       "layout",
                                       "playground", "comm_table", "timeline"};

std::optional<int64_t> parse_int(const std::string& text) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  size_t start = text[0] == '-' ? 1 : 0;
  if (start == text.size()) return std::nullopt;
  for (size_t i = start; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
  }
  return std::strtoll(text.c_str(), nullptr, 10);
}

// "1000x700" -> width and height within [200, 8192] x [150, 8192].
bool parse_size(const std::string& text, int* width, int* height) {
  size_t x = text.find_first_of("xX");
  if (x == std::string::npos) return false;
  std::optional<int64_t> w = parse_int(text.substr(0, x));
  std::optional<int64_t> h = parse_int(text.substr(x + 1));
  if (!w || !h || *w < 200 || *h < 150 || *w > 8192 || *h > 8192) return false;
  *width = static_cast<int>(*w);
  *height = static_cast<int>(*h);
  return true;
}

// Applies one "--flag value" pair; returns an error message or "".
std::string apply_flag(const std::string& flag, const std::string& value, ViewerOptions* o) {
  if (flag == "--screenshot") {
    o->screenshot_path = value;
  } else if (flag == "--panel") {
    std::optional<PanelId> panel = parse_panel_name(value);
    if (!panel)
      return "--panel: unknown panel '" + value +
             "' (all, mesh, layout, playground, comm_table, timeline)";
    o->panel = *panel;
  } else if (flag == "--size") {
    if (!parse_size(value, &o->width, &o->height))
      return "--size: expected WxH such as 1000x700 (200x150 to 8192x8192)";
  } else if (flag == "--frames") {
    std::optional<int64_t> n = parse_int(value);
    if (!n || *n < 1 || *n > 100) return "--frames: expected a number from 1 to 100";
    o->frames = static_cast<int>(*n);
  } else if (flag == "--step") {
    std::optional<int64_t> n = parse_int(value);
    if (!n || *n < 0 || *n > 1000) return "--step: expected a step number >= 0";
    o->step = static_cast<int>(*n);
  } else if (flag == "--hover-rank") {
    std::optional<int64_t> n = parse_int(value);
    if (!n || *n < -1) return "--hover-rank: expected a rank number";
    o->hover_rank = *n;
  } else if (flag == "--call") {
    std::optional<int64_t> n = parse_int(value);
    if (!n || *n < 0) return "--call: expected a call's sequence number >= 0";
    o->call_seq = *n;
  } else if (flag == "--mesh") {
    o->mesh = value;
  } else if (flag == "--tensor") {
    o->tensor = value;
  } else if (flag == "--placements") {
    o->placements = value;
  } else if (flag == "--target") {
    o->target = value;
  } else if (flag == "--dtype") {
    o->dtype = value;
  } else {
    return "unknown option '" + flag + "'";
  }
  return "";
}

}  // namespace

const char* panel_name(PanelId panel) { return kPanelNames[static_cast<int>(panel)]; }

std::optional<PanelId> parse_panel_name(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "comm") return PanelId::kCommTable;
  for (int i = 0; i < 6; ++i) {
    if (lower == kPanelNames[i]) return static_cast<PanelId>(i);
  }
  return std::nullopt;
}

ParsedOptions parse_viewer_options(const std::vector<std::string>& args) {
  ParsedOptions parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      parsed.options.show_help = true;
      continue;
    }
    if (arg == "--implicit-only") {
      parsed.options.implicit_only = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      if (!parsed.options.trace_path.empty()) {
        parsed.error =
            "more than one trace file given ('" + parsed.options.trace_path + "', '" + arg + "')";
        return parsed;
      }
      parsed.options.trace_path = arg;
      continue;
    }
    size_t eq = arg.find('=');
    std::string flag = arg.substr(0, eq);
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      parsed.error = flag + ": missing value";
      return parsed;
    }
    parsed.error = apply_flag(flag, value, &parsed.options);
    if (!parsed.error.empty()) return parsed;
  }
  return parsed;
}

std::string viewer_usage() {
  return "usage: dtensor-viewer [trace.json] [options]\n"
         "\n"
         "Draws device meshes, sharding layouts, redistribute plans and the comm\n"
         "tables/timeline of a trace written by dtensor's debug tools\n"
         "(trace/comm_trace_schema.md). Traces also load from the Open box or by\n"
         "dropping a file on the window.\n"
         "\n"
         "options:\n"
         "  --screenshot out.png   render headless, write a PNG and exit (needs an X\n"
         "                         display: run under xvfb-run without one)\n"
         "  --panel NAME           all, mesh, layout, playground, comm_table, timeline\n"
         "  --size WxH             window / image size (default 1280x800)\n"
         "  --frames N             frames rendered before the screenshot (default 4)\n"
         "  --mesh TEXT            playground mesh, e.g. \"dp=2, tp=2\"\n"
         "  --tensor TEXT          playground tensor shape, e.g. \"8, 6\"\n"
         "  --placements TEXT      playground placements, e.g. \"S(0), R\"\n"
         "  --target TEXT          target placements of the redistribute plan\n"
         "  --dtype NAME           float32, bfloat16, float16, float64, int64, int8\n"
         "  --step N               plan step shown in detail (default 0)\n"
         "  --hover-rank N         highlight rank N as if hovered\n"
         "  --call SEQ             select call SEQ of the trace as if clicked (bytes\n"
         "                         between ranks on the Mesh panel, playground preset)\n"
         "  --implicit-only        show only implicit collectives (origins)\n"
         "  -h, --help             this text\n";
}

}  // namespace dtensor::gui
