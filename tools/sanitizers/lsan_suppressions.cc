// LeakSanitizer's built-in suppressions for dtensor's test binaries: linked
// into them (alwayslink), so that a bare `bazel test --config=asan ...` sees
// them; tools/sanitize.sh adds lsan.supp on top. Every entry says why; only
// third-party code that dtensor cannot fix belongs here. See
// tools/sanitizers/README.md.
//   deps = ["//tools/sanitizers:lsan_suppressions"]

extern "C" const char* __lsan_default_suppressions() {
  return
      // Gloo's TCP device setup (inside libtorch_cpu.so, not instrumented)
      // does not free a getifaddrs() list it allocates while it looks up
      // its address: 2,040 bytes in gloo_world_test on LibTorch 2.11.
      "leak:CreateDeviceAttr\n";
}
