#!/usr/bin/env python3
"""Fails when the Bazel and CMake builds could disagree about sources.

CMake takes its sources from the BUILD files (Note [One list of sources] in
CMakeLists.txt), so two things can still go wrong, and this checks both:
  1. a .cc file of a library folder is in no Bazel target: it is then in
     neither build (a file added to the folder but not to BUILD);
  2. a Bazel package with cc_library targets under the library folders is
     named by no dtensor_bazel_sources() call of the CMake build: its sources
     are then in the Bazel build only.
    tools/check_build_sync.py            # from the repository root; exit 1 on a finding
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "cmake"))
import bazel_sources  # noqa: E402

# Folders whose packages hold library code (tests/, examples/, benchmarks/,
# fuzz/ are Bazel-only by design: the CMake build is for users' builds).
LIBRARY_FOLDERS = ["layout", "trace", "core", "backends", "debug", "testing", "gui"]


def library_packages():
    found = []
    for folder in LIBRARY_FOLDERS:
        for dirpath, _, filenames in os.walk(os.path.join(ROOT, folder)):
            if "BUILD" not in filenames:
                continue
            package = os.path.relpath(dirpath, ROOT)
            kinds = {kind for (kind, _) in bazel_sources.targets(ROOT, package)}
            if "cc_library" in kinds:
                found.append(package)
    return sorted(found)


def cmake_packages():
    """Packages named in dtensor_bazel_sources(...) calls and DTENSOR_PACKAGES."""
    text = ""
    for path in ["CMakeLists.txt"] + [os.path.join("cmake", f) for f in os.listdir(os.path.join(ROOT, "cmake"))]:
        if path.endswith((".txt", ".cmake")):
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                text += f.read() + "\n"
    named = set()
    for call in re.findall(r"(?:dtensor_bazel_sources|set\(DTENSOR_PACKAGES)\s*\(?([^)]*)\)", text):
        for word in call.split():
            package = word.split(":")[0]
            if os.path.exists(os.path.join(ROOT, package, "BUILD")):
                named.add(package)
    return named


def main():
    problems = []
    packages = library_packages()
    for path in bazel_sources.unlisted(ROOT, packages):
        problems.append(f"{path}: in no Bazel target of its package, so in neither build; add it to BUILD")
    named = cmake_packages()
    for package in packages:
        if package not in named:
            problems.append(f"{package}: Bazel package with cc_library targets that the CMake build does "
                            "not take sources from; name it in CMakeLists.txt (DTENSOR_PACKAGES or a "
                            "dtensor_bazel_sources call)")
    for p in problems:
        print("check_build_sync:", p)
    print(f"check_build_sync: {len(packages)} library packages, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
