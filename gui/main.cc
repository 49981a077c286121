// dtensor-viewer: draws meshes, sharding layouts, redistribute plans and comm
// traces. `dtensor-viewer [trace.json]` opens a window; `--screenshot out.png`
// renders headless and exits. See viewer_usage() for every option.
#include <cstdio>
#include <string>
#include <vector>

#include "gui/app/viewer_window.h"
#include "gui/model/viewer_options.h"

int main(int argc, char** argv) {
  using namespace dtensor::gui;
  std::vector<std::string> args(argv + 1, argv + argc);
  ParsedOptions parsed = parse_viewer_options(args);
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "dtensor-viewer: %s\n\n%s", parsed.error.c_str(), viewer_usage().c_str());
    return 2;
  }
  if (parsed.options.show_help) {
    std::printf("%s", viewer_usage().c_str());
    return 0;
  }
  return run_viewer(parsed.options);
}
