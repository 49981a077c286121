"""Every external repository dtensor builds with, for its own WORKSPACE and
for a user's workspace that depends on @dtensor:

    local_repository(name = "dtensor", path = "third_party/dtensor")  # or http_archive
    load("@dtensor//third_party:repositories.bzl", "dtensor_repositories")
    dtensor_repositories(dtensor_path = "third_party/dtensor")

Repositories the workspace already defines are left alone (bring your own
@gtest, say).
"""

load("//third_party:system_libs.bzl", "cuda_repository", "debian_library", "libtorch_repository")

def _maybe(rule, name, **kwargs):
    if not native.existing_rule(name):
        rule(name = name, **kwargs)

def dtensor_repositories(dtensor_path = "."):
    """Defines dtensor's repositories.

    Args:
      dtensor_path: dtensor's checkout, relative to the calling workspace (or
        absolute); the offline shims for Bazel 4.2.3's own tools live there.
    """

    # Offline shims for repositories that Bazel 4.2.3's own tools load.
    for shim in ["rules_cc", "rules_java", "remote_coverage_tools"]:
        _maybe(native.local_repository, shim, path = dtensor_path + "/third_party/" + shim)

    _maybe(libtorch_repository, "libtorch")  # see Note [Which LibTorch]
    _maybe(cuda_repository, "cuda")  # $CUDA_HOME, default /usr/local/cuda; optional

    _maybe(
        debian_library,
        "gtest",
        package = "googletest libgmock-dev",
        check_header = "/usr/include/gmock/gmock.h",
        targets = {
            "gtest": ["-lgmock", "-lgtest", "-lpthread"],
            "gtest_main": ["-lgmock", "-lgtest_main", "-lgtest", "-lpthread"],
        },
    )
    _maybe(
        debian_library,
        "benchmark",
        package = "libbenchmark-dev",
        check_header = "/usr/include/benchmark/benchmark.h",
        targets = {
            "benchmark": ["-lbenchmark", "-lpthread"],
            "benchmark_main": ["-lbenchmark_main", "-lbenchmark", "-lpthread"],
        },
    )
    _maybe(
        debian_library,
        "nlohmann_json",
        package = "nlohmann-json3-dev",
        check_header = "/usr/include/nlohmann/json.hpp",
        targets = {"json": []},
    )
    _maybe(
        debian_library,
        "imgui",
        package = "libimgui-dev libglfw3-dev libgl-dev",
        check_header = "/usr/include/imgui/imgui.h",
        include_dirs = {"/usr/include/imgui": "imgui"},
        # Debian's libimgui.a contains the GLFW and OpenGL3 backends.
        targets = {"imgui": ["-limgui", "-lglfw", "-lGL", "-ldl"]},
    )
    _maybe(
        debian_library,
        "stb",
        package = "libstb-dev",
        check_header = "/usr/include/stb/stb_image_write.h",
        targets = {"stb": ["-lstb"]},
    )
