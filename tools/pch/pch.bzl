"""precompiled_header: a header compiled once per configuration (GCC's .gch).

Note [Precompiled LibTorch]
Parsing LibTorch's headers is most of the cost of compiling a file here:
<ATen/ATen.h> alone takes ~10 s of GCC 12's time, in every translation unit
that includes it, and CI compiles about 220 such units once per stage. GCC can
load a header it compiled earlier (a .gch next to the header) in ~2 s instead.
This rule compiles one with the flags of the configuration it is built in
(--copt, --cxxopt, the toolchain's features, the defines and include paths of
its deps), so the sanitizer, CUDA and opt configurations each get their own.
The cc_* macros of defs.bzl make every target that uses them `-include` it.

GCC uses a .gch only where it is valid for the file being compiled (same
language options, no conflicting macros) and otherwise reads the header
itself, so a mismatch costs time, never a wrong build. The CMake package does
not use it: its sources must compile without it, which the CMake build checks.
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "CPP_COMPILE_ACTION_NAME")
load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

def _precompiled_header_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    features = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )
    deps = cc_common.merge_cc_infos(cc_infos = [d[CcInfo] for d in ctx.attr.deps])
    deps_context = deps.compilation_context

    # The header and its .gch side by side in a directory of their own: GCC
    # looks for NAME.gch in each directory where it would find NAME.
    header = ctx.actions.declare_file(ctx.label.name + "/" + ctx.file.hdr.basename)
    ctx.actions.symlink(output = header, target_file = ctx.file.hdr)
    gch = ctx.actions.declare_file(header.basename + ".gch", sibling = header)

    variables = cc_common.create_compile_variables(
        feature_configuration = features,
        cc_toolchain = cc_toolchain,
        user_compile_flags = ctx.fragments.cpp.copts + ctx.fragments.cpp.cxxopts + ["-x", "c++-header"],
        source_file = header.path,
        output_file = gch.path,
        include_directories = deps_context.includes,
        quote_include_directories = deps_context.quote_includes,
        system_include_directories = deps_context.system_includes,
        preprocessor_defines = deps_context.defines,
        # As Bazel compiles sources on Linux outside -c opt (-fPIC); under
        # -c opt binaries' own sources are not PIC, and those read headers.
        use_pic = ctx.var["COMPILATION_MODE"] != "opt",
    )
    ctx.actions.run(
        executable = cc_common.get_tool_for_action(
            feature_configuration = features,
            action_name = CPP_COMPILE_ACTION_NAME,
        ),
        arguments = cc_common.get_memory_inefficient_command_line(
            feature_configuration = features,
            action_name = CPP_COMPILE_ACTION_NAME,
            variables = variables,
        ),
        env = cc_common.get_environment_variables(
            feature_configuration = features,
            action_name = CPP_COMPILE_ACTION_NAME,
            variables = variables,
        ),
        inputs = depset([header], transitive = [deps_context.headers, cc_toolchain.all_files]),
        outputs = [gch],
        mnemonic = "CppPrecompileHeader",
        progress_message = "Precompiling %s" % ctx.file.hdr.short_path,
    )
    own = CcInfo(compilation_context = cc_common.create_compilation_context(
        headers = depset([header, gch]),
        quote_includes = depset([header.dirname]),
    ))
    return [cc_common.merge_cc_infos(cc_infos = [own, deps])]

precompiled_header = rule(
    implementation = _precompiled_header_impl,
    attrs = {
        "hdr": attr.label(allow_single_file = [".h"], mandatory = True),
        "deps": attr.label_list(providers = [CcInfo]),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
    doc = "Compiles `hdr` as a GCC precompiled header; see Note [Precompiled LibTorch].",
)
