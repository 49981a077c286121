// Command-line parsing of dtensor-viewer. See viewer_options.h.
#include "gui/model/viewer_options.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <stdexcept>

#include "layout/flags.h"

namespace dtensor::gui {
namespace {

constexpr const char* kPanelNames[] = {"all",        "mesh",       "layout", "playground",
                                       "comm_table", "timeline", "plan"};

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

}  // namespace

const char* panel_name(PanelId panel) { return kPanelNames[static_cast<int>(panel)]; }

std::optional<PanelId> parse_panel_name(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "comm") return PanelId::kCommTable;
  for (size_t i = 0; i < std::size(kPanelNames); ++i) {
    if (lower == kPanelNames[i]) return static_cast<PanelId>(i);
  }
  return std::nullopt;
}

ParsedOptions parse_viewer_options(const std::vector<std::string>& args) {
  ParsedOptions parsed;
  ViewerOptions& o = parsed.options;
  // A whole number in [low, high], or `why` as the error.
  auto number = [](int64_t low, int64_t high, const char* why) {
    return [=](const std::string& text) {
      const std::optional<int64_t> n = parse_int(text);
      if (!n || *n < low || *n > high) throw std::invalid_argument(why);
      return *n;
    };
  };
  auto frames = number(1, 100, "expected a number from 1 to 100");
  auto step = number(0, 1000, "expected a step number >= 0");
  auto rank = number(-1, INT64_MAX, "expected a rank number");
  auto call = number(0, INT64_MAX, "expected a call's sequence number >= 0");
  Flags flags;
  flags.value("--screenshot", &o.screenshot_path)
      .custom("--panel", 1,
              [&](const std::vector<std::string>& v) {
                const std::optional<PanelId> panel = parse_panel_name(v[0]);
                if (!panel) {
                  throw std::invalid_argument(
                      "unknown panel '" + v[0] +
                      "' (all, mesh, layout, playground, comm_table, timeline, plan)");
                }
                o.panel = *panel;
              })
      .custom(
          "--size", 1,
          [&](const std::vector<std::string>& v) {
            if (!parse_size(v[0], &o.width, &o.height)) {
              throw std::invalid_argument("expected WxH such as 1000x700 (200x150 to 8192x8192)");
            }
          })
      .custom("--frames", 1,
              [&](const std::vector<std::string>& v) { o.frames = static_cast<int>(frames(v[0])); })
      .custom("--step", 1,
              [&](const std::vector<std::string>& v) { o.step = static_cast<int>(step(v[0])); })
      .custom("--hover-rank", 1,
              [&](const std::vector<std::string>& v) { o.hover_rank = rank(v[0]); })
      .custom("--call", 1, [&](const std::vector<std::string>& v) { o.call_seq = call(v[0]); })
      .value("--mesh", &o.mesh)
      .value("--tensor", &o.tensor)
      .value("--placements", &o.placements)
      .value("--target", &o.target)
      .value("--dtype", &o.dtype)
      .toggle("--implicit-only", &o.implicit_only)
      .positional([&](const std::vector<std::string>& v) {
        if (!o.trace_path.empty()) {
          throw std::invalid_argument("more than one trace file given ('" + o.trace_path + "', '" +
                                      v[0] + "')");
        }
        o.trace_path = v[0];
      });
  if (!flags.parse(args, parsed.error) && parsed.error.empty()) o.show_help = true;
  return parsed;
}

std::string viewer_usage() {
  return "usage: dtensor-viewer [trace.json] [options]\n"
         "\n"
         "Draws device meshes, sharding layouts, redistribute plans and the comm\n"
         "tables/timeline of a trace written by dtensor's debug tools\n"
         "(trace/comm_trace_schema.md), and capacity plans (dtensor_plan --json).\n"
         "Traces and plans also load from the Open box or by dropping a file on\n"
         "the window.\n"
         "\n"
         "options:\n"
         "  --screenshot out.png   render headless, write a PNG and exit (needs an X\n"
         "                         display: run under xvfb-run without one)\n"
         "  --panel NAME           all, mesh, layout, playground, comm_table, timeline, plan\n"
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
