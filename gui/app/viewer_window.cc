// GLFW window, ImGui setup, interactive loop and headless screenshots. See
// viewer_window.h.
#include "gui/app/viewer_window.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "gui/app/screenshot.h"
#include "gui/app/viewer_frame.h"
#include "gui/model/viewer_state.h"

namespace dtensor::gui {
namespace {

constexpr const char* kFontPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
constexpr float kFontPixels = 16.0f;

std::string g_glfw_error;  // last GLFW error, for messages

void on_glfw_error(int /*code*/, const char* description) {
  g_glfw_error = description ? description : "";
}

void on_drop(GLFWwindow* window, int count, const char** paths) {
  auto* state = static_cast<ViewerState*>(glfwGetWindowUserPointer(window));
  if (state != nullptr && count > 0) state->load_trace(paths[0]);
}

// DejaVu Sans when installed (fonts-dejavu-core), else ImGui's built-in font enlarged.
void setup_style_and_fonts() {
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // deterministic layout, nothing written to the cwd
  if (access(kFontPath, R_OK) == 0) {
    io.Fonts->AddFontFromFileTTF(kFontPath, kFontPixels);
  } else {
    ImFontConfig config;
    config.SizePixels = kFontPixels;
    io.Fonts->AddFontDefault(&config);
  }
  ImGui::StyleColorsDark();
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowRounding = 4.0f;
  style.FrameRounding = 3.0f;
  style.GrabRounding = 3.0f;
  style.ItemSpacing = ImVec2(8.0f, 5.0f);
  style.CellPadding = ImVec2(6.0f, 3.0f);
  style.Colors[ImGuiCol_WindowBg] = ImVec4(0.10f, 0.105f, 0.115f, 1.0f);
}

GLFWwindow* open_window(const ViewerOptions& options, bool headless) {
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  if (headless) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  GLFWwindow* window =
      glfwCreateWindow(options.width, options.height, "dtensor-viewer", nullptr, nullptr);
  if (window == nullptr) return nullptr;
  glfwMakeContextCurrent(window);
  glfwSwapInterval(headless ? 0 : 1);
  return window;
}

void render_frame(ViewerState& state, PanelId panel, ImVec2 display, bool relayout) {
  ImGui::NewFrame();
  state.begin_frame();
  draw_viewer_frame(state, panel, display, relayout);
  ImGui::Render();
  glClearColor(0.06f, 0.06f, 0.07f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

int run_interactive(GLFWwindow* window, ViewerState& state, const ViewerOptions& options) {
  glfwSetWindowUserPointer(window, &state);
  glfwSetDropCallback(window, on_drop);
  ImVec2 last_display(0.0f, 0.0f);
  while (!glfwWindowShouldClose(window)) {
    glfwWaitEventsTimeout(0.1);
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImVec2 display = ImGui::GetIO().DisplaySize;
    bool relayout = display.x != last_display.x || display.y != last_display.y;
    last_display = display;
    int fb_w = 0, fb_h = 0;
    glfwGetFramebufferSize(window, &fb_w, &fb_h);
    glViewport(0, 0, fb_w, fb_h);
    render_frame(state, options.panel, display, relayout);
    glfwSwapBuffers(window);
  }
  return 0;
}

int run_screenshot(ViewerState& state, const ViewerOptions& options) {
  std::string error;
  OffscreenTarget target;
  if (!target.create(options.width, options.height, &error)) {
    std::fprintf(stderr, "dtensor-viewer: %s\n", error.c_str());
    return 1;
  }
  ImVec2 display(static_cast<float>(options.width), static_cast<float>(options.height));
  for (int frame = 0; frame < options.frames; ++frame) {
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = display;  // the hidden window's size does not matter
    io.DisplayFramebufferScale = ImVec2(1.0f, 1.0f);
    io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    target.bind();
    render_frame(state, options.panel, display, /*relayout=*/frame == 0);
  }
  glFinish();
  if (!write_png(options.screenshot_path, target.read_rgba(), options.width, options.height,
                 &error)) {
    std::fprintf(stderr, "dtensor-viewer: %s\n", error.c_str());
    return 1;
  }
  std::printf("dtensor-viewer: wrote %s (%dx%d, panel %s)\n", options.screenshot_path.c_str(),
              options.width, options.height, panel_name(options.panel));
  return 0;
}

void print_no_window(bool headless) {
  std::fprintf(stderr,
               "dtensor-viewer: cannot open a window: %s\n"
               "  The viewer needs an X11 display (DISPLAY is %s).\n"
               "  %s\n",
               g_glfw_error.empty() ? "GLFW failed" : g_glfw_error.c_str(),
               std::getenv("DISPLAY") ? std::getenv("DISPLAY") : "not set",
               headless ? "For --screenshot without a display run: xvfb-run -a dtensor-viewer ... "
                          "--screenshot out.png"
                        : "Run it on a desktop, or render a PNG headless: xvfb-run -a "
                          "dtensor-viewer --screenshot out.png");
}

}  // namespace

int run_viewer(const ViewerOptions& options) {
  bool headless = !options.screenshot_path.empty();
  glfwSetErrorCallback(on_glfw_error);
  if (!glfwInit()) {
    print_no_window(headless);
    return 2;
  }
  GLFWwindow* window = open_window(options, headless);
  if (window == nullptr) {
    print_no_window(headless);
    glfwTerminate();
    return 2;
  }
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  setup_style_and_fonts();
  ImGui_ImplGlfw_InitForOpenGL(window, /*install_callbacks=*/true);
  ImGui_ImplOpenGL3_Init("#version 130");
  int rc = 0;
  {
    ViewerState state;
    std::string error;
    // The trace first: --call selects one of its calls.
    if (!options.trace_path.empty() && !state.load_trace(options.trace_path)) {
      std::fprintf(stderr, "dtensor-viewer: %s\n", state.trace_error.c_str());
    }
    if (!state.apply_options(options, &error))
      std::fprintf(stderr, "dtensor-viewer: %s\n", error.c_str());
    rc = headless ? run_screenshot(state, options) : run_interactive(window, state, options);
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return rc;
}

}  // namespace dtensor::gui
