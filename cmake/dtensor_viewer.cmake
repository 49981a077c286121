# dtensor-viewer (gui/): Dear ImGui + GLFW + OpenGL, no LibTorch; it compiles
# layout/ and trace/ (pure C++, no LibTorch: the trace model and its JSON) itself, as Bazel's
# //gui:dtensor_viewer does.
# Debian's libimgui.a carries the GLFW and OpenGL3 backends.
find_path(IMGUI_INCLUDE_DIR imgui.h PATH_SUFFIXES imgui)
find_library(IMGUI_LIBRARY imgui)
find_library(GLFW_LIBRARY glfw)
find_library(STB_LIBRARY stb)
find_package(OpenGL QUIET)
if(NOT (IMGUI_INCLUDE_DIR AND IMGUI_LIBRARY AND GLFW_LIBRARY AND STB_LIBRARY AND OpenGL_FOUND))
  message(STATUS "dtensor: Dear ImGui / GLFW / stb / OpenGL not all found: dtensor-viewer is not built")
  return()
endif()
dtensor_bazel_sources(_viewer_srcs layout trace gui/model gui/panels gui/app)
add_executable(dtensor-viewer ${_viewer_srcs} gui/main.cc)
target_include_directories(dtensor-viewer PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
target_include_directories(dtensor-viewer SYSTEM PRIVATE "${IMGUI_INCLUDE_DIR}" "${NLOHMANN_JSON_INCLUDE_DIR}")
target_compile_options(dtensor-viewer PRIVATE ${_warnings})
target_link_libraries(dtensor-viewer PRIVATE "${IMGUI_LIBRARY}" "${GLFW_LIBRARY}" "${STB_LIBRARY}" OpenGL::GL dl)
install(TARGETS dtensor-viewer EXPORT dtensorTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
message(STATUS "dtensor: dtensor-viewer")
