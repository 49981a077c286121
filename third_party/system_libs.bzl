"""Repository rules that bring the system's libraries into the build.

Everything dtensor links comes from Debian packages (tools/setup.sh) or from a
LibTorch / CUDA tree named by an environment variable; these rules are the only
place that knows absolute paths. A missing library fails with the command that
installs it, instead of a compiler error deep in a build.
"""

_SETUP_HINT = "run tools/setup.sh (installs the Debian packages dtensor needs)"

def _symlink_dir(ctx, src, dst):
    if not ctx.path(src).exists:
        fail("%s: %s not found; %s" % (ctx.name, src, _SETUP_HINT))
    ctx.symlink(src, dst)

def _libtorch_repository_impl(ctx):
    root = ctx.os.environ.get("LIBTORCH", "")
    if root:
        include_root = root + "/include"
        lib_dir = root + "/lib"
        linkopts = ["-L" + lib_dir, "-Wl,-rpath," + lib_dir]
    else:
        include_root = "/usr/include"
        lib_dir = "/usr/lib/x86_64-linux-gnu"
        linkopts = []
    for d in ["ATen", "c10", "caffe2", "torch"]:
        _symlink_dir(ctx, include_root + "/" + d, "include/" + d)
    # Debian ships c10/cuda headers without CUDA libraries: look at the library.
    has_cuda = ctx.path(lib_dir + "/libtorch_cuda.so").exists
    libs = ["-ltorch", "-ltorch_cpu", "-lc10"]
    if has_cuda:
        libs = ["-ltorch", "-ltorch_cuda", "-ltorch_cpu", "-lc10_cuda", "-lc10"]

    # --no-as-needed: libtorch registers its operators from static
    # initialisers, so it must be loaded even when no symbol is referenced.
    linkopts += ["-Wl,--no-as-needed"] + libs + ["-Wl,--as-needed", "-lpthread"]
    ctx.file("BUILD", """
cc_library(
    name = "torch",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp", "include/**/*.cuh"]),
    includes = ["include", "include/torch/csrc/api/include"],
    # LibTorch is built with Gloo; its c10d Gloo headers need this define.
    defines = ["USE_C10D_GLOO"],
    linkopts = {linkopts},
    visibility = ["//visibility:public"],
)
""".format(linkopts = repr(linkopts)))
    ctx.file("defs.bzl", "TORCH_HAS_CUDA = %s\nLIBTORCH_ROOT = %r\n" % (has_cuda, root or "/usr"))

libtorch_repository = repository_rule(
    implementation = _libtorch_repository_impl,
    environ = ["LIBTORCH"],
    local = True,
    doc = "LibTorch: Debian's libtorch-dev under /usr, or the tree in $LIBTORCH.",
)

def _cuda_repository_impl(ctx):
    root = ctx.os.environ.get("CUDA_HOME", "") or "/usr/local/cuda"
    has_cuda = ctx.path(root + "/include/cuda_runtime.h").exists
    has_nccl = has_cuda and ctx.path(root + "/include/nccl.h").exists
    if has_cuda:
        ctx.symlink(root + "/include", "include")
        lib_dir = root + "/lib64"
        ctx.file("BUILD", """
cc_library(
    name = "cudart",
    # include/nv/** : extension-less headers (nv/target) that cuda_fp16.h,
    # and so nccl.h, include since CUDA 12.
    hdrs = glob(["include/**/*.h", "include/**/*.hpp", "include/nv/**"]),
    includes = ["include"],
    linkopts = ["-L{lib}", "-Wl,-rpath,{lib}", "-lcudart"],
    visibility = ["//visibility:public"],
)

cc_library(
    name = "nccl",
    linkopts = ["-L{lib}", "-Wl,-rpath,{lib}", "-lnccl"],
    deps = [":cudart"],
    visibility = ["//visibility:public"],
)
""".format(lib = lib_dir))
    else:
        ctx.file("BUILD", "# No CUDA toolkit under %s: GPU targets are not built.\n" % root)
    ctx.file("defs.bzl", "HAS_CUDA = %s\nHAS_NCCL = %s\nCUDA_HOME = %r\n" % (has_cuda, has_nccl, root))

cuda_repository = repository_rule(
    implementation = _cuda_repository_impl,
    environ = ["CUDA_HOME"],
    local = True,
    doc = "CUDA runtime and NCCL from $CUDA_HOME (default /usr/local/cuda), optional.",
)

def _debian_library_impl(ctx):
    if not ctx.path(ctx.attr.check_header).exists:
        fail("%s: %s not found (Debian package %s); %s" % (
            ctx.name,
            ctx.attr.check_header,
            ctx.attr.package,
            _SETUP_HINT,
        ))
    includes = []
    for src, dst in ctx.attr.include_dirs.items():
        _symlink_dir(ctx, src, dst)
        includes.append(dst)
    targets = []
    for name, linkopts in ctx.attr.targets.items():
        targets.append("""
cc_library(
    name = {name},
    hdrs = {hdrs},
    includes = {includes},
    linkopts = {linkopts},
    visibility = ["//visibility:public"],
)
""".format(
            name = repr(name),
            hdrs = "glob([%s])" % ", ".join(['"%s/**"' % d for d in includes]) if includes else "[]",
            includes = repr(includes),
            linkopts = repr(linkopts),
        ))
    ctx.file("BUILD", "".join(targets))

debian_library = repository_rule(
    implementation = _debian_library_impl,
    attrs = {
        "package": attr.string(mandatory = True, doc = "Debian package providing it"),
        "check_header": attr.string(mandatory = True, doc = "a header that must exist"),
        "include_dirs": attr.string_dict(doc = "system dir -> dir in this repo, added as -isystem"),
        "targets": attr.string_list_dict(mandatory = True, doc = "target name -> linkopts"),
    },
    local = True,
    doc = "A library from a Debian -dev package; headers in /usr/include.",
)
