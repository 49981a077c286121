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

# Note [Which LibTorch]
# In order: $LIBTORCH (any LibTorch tree with include/ and lib/: a CUDA one on
# a GPU host, a PyTorch package's torch/ directory); DTENSOR_LIBTORCH=debian
# (Debian's libtorch-dev 1.13 under /usr); else the PyPI wheel's LibTorch that
# tools/setup.sh installs and links at ~/.cache/dtensor/libtorch (2.15).
# :torch links only libtorch_cpu and libc10 (the CPU build needs nothing
# else, even from a CUDA LibTorch); :torch_cuda adds libtorch_cuda and
# libc10_cuda for --config=cuda. defs.bzl tells BUILD files the version.
def _libtorch_root(ctx):
    env = ctx.os.environ
    if env.get("LIBTORCH", ""):
        if not ctx.path(env["LIBTORCH"]).exists:
            fail("LIBTORCH=%s does not exist (a LibTorch tree with include/ and lib/)" % env["LIBTORCH"])
        # The real path: a wheel's NCCL and torchrun are found from it by "..".
        root = str(ctx.path(env["LIBTORCH"]).realpath)
        return root, root + "/include", root + "/lib"
    choice = env.get("DTENSOR_LIBTORCH", "")
    if choice == "debian":
        return "/usr", "/usr/include", "/usr/lib/x86_64-linux-gnu"
    if choice not in ["", "wheel"]:
        fail("DTENSOR_LIBTORCH=%s: use `wheel` (default), `debian`, or set LIBTORCH=<dir>" % choice)
    link = env.get("DTENSOR_HOME", env.get("HOME", "") + "/.cache/dtensor") + "/libtorch"
    if not ctx.path(link).exists:
        fail("libtorch: %s not found; %s (or set LIBTORCH=<dir with include/ and lib/>, " % (link, _SETUP_HINT) +
             "or DTENSOR_LIBTORCH=debian for Debian's libtorch-dev)")
    root = str(ctx.path(link).realpath)
    return root, root + "/include", root + "/lib"

def _libtorch_version(ctx, include_root):
    # 2.9+ keep the numbers in torch/headeronly/version.h, older in the API's.
    header = ctx.path(include_root + "/torch/headeronly/version.h")
    if not header.exists:
        header = ctx.path(include_root + "/torch/csrc/api/include/torch/version.h")
    if not header.exists:
        return "unknown"
    parts = {}
    for line in ctx.read(header).splitlines():
        words = [w for w in line.replace("\t", " ").split(" ") if w]
        if len(words) == 3 and words[0] == "#define" and words[1].startswith("TORCH_VERSION_"):
            parts[words[1][len("TORCH_VERSION_"):]] = words[2]
    return "%s.%s.%s" % (parts.get("MAJOR", "?"), parts.get("MINOR", "?"), parts.get("PATCH", "?"))

# --no-as-needed: libtorch registers its operators from static initialisers,
# so it must be loaded even when no symbol is referenced.
def _link(rpath, libs):
    return rpath + ["-Wl,--no-as-needed"] + libs + ["-Wl,--as-needed", "-lpthread"]

# Note [One NCCL]
# A process loads one libnccl.so.2, whichever its executable finds first, and
# LibTorch's libtorch_cuda then uses that one too. PyTorch 2.15's wheel is
# built with NCCL 2.30 and ships it (site-packages/nvidia/nccl, the wheel
# tools/setup.sh installs beside torch); the CUDA toolkit here has 2.28, which
# 2.11's wheel uses. So @libtorch//:nccl is the NCCL of the LibTorch in use:
# the wheel's when there is one (its nccl.h, and its lib first in the runpath),
# else the toolkit's (@cuda//:nccl). backends/nccl links this target.
def _nccl_target(ctx, root):
    wheel = ctx.path(root + "/../nvidia/nccl")
    if not ctx.path(str(wheel) + "/lib/libnccl.so.2").exists:
        return """
alias(
    name = "nccl",
    actual = "@cuda//:nccl",
    visibility = ["//visibility:public"],
)
"""
    ctx.symlink(str(wheel.realpath) + "/include", "nccl/include")
    lib = str(wheel.realpath) + "/lib"
    return """
cc_library(
    name = "nccl",
    hdrs = glob(["nccl/include/**"]),
    includes = ["nccl/include"],
    linkopts = ["-L{lib}", "-Wl,-rpath,{lib}", "-l:libnccl.so.2"],
    deps = ["@cuda//:cudart"],
    visibility = ["//visibility:public"],
)
""".replace("{lib}", lib)

def _libtorch_repository_impl(ctx):
    root, include_root, lib_dir = _libtorch_root(ctx)
    for d in ["ATen", "c10", "caffe2", "torch"]:
        _symlink_dir(ctx, include_root + "/" + d, "include/" + d)
    # LibTorch 2.x's c10d headers include the {fmt} it bundles (12.x in 2.11),
    # which must shadow Debian's 9.x in /usr/include.
    if include_root != "/usr/include" and ctx.path(include_root + "/fmt").exists:
        ctx.symlink(include_root + "/fmt", "include/fmt")
    version = _libtorch_version(ctx, include_root)
    # Debian ships c10/cuda headers without CUDA libraries: look at the library.
    has_cuda = ctx.path(lib_dir + "/libtorch_cuda.so").exists
    rpath = [] if lib_dir.startswith("/usr/lib") else ["-L" + lib_dir, "-Wl,-rpath," + lib_dir]

    cuda_target = ""
    if has_cuda:
        cuda_target = """
cc_library(
    name = "torch_cuda",
    defines = ["DTENSOR_TORCH_HAS_CUDA"],
    linkopts = {linkopts},
    deps = [":torch", "@cuda//:cudart"],
    visibility = ["//visibility:public"],
)
""".format(linkopts = repr(_link(rpath, ["-ltorch_cuda", "-lc10_cuda"])))
    ctx.file("BUILD", """
{nccl_target}
cc_library(
    name = "torch",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp", "include/**/*.cuh"]),
    includes = ["include", "include/torch/csrc/api/include"],
    # LibTorch is built with Gloo; its c10d Gloo headers need this define.
    defines = ["USE_C10D_GLOO"],
    linkopts = {linkopts},
    visibility = ["//visibility:public"],
)
{cuda_target}
""".format(
        linkopts = repr(_link(rpath, ["-ltorch_cpu", "-lc10"])),
        cuda_target = cuda_target,
        nccl_target = _nccl_target(ctx, root),
    ))
    # A PyTorch package (site-packages/torch) has its torchrun in ../../../../bin.
    torchrun = ctx.path(root + "/../../../../bin/torchrun")
    ctx.file("defs.bzl", "\n".join([
        "TORCH_HAS_CUDA = %s" % has_cuda,
        "LIBTORCH_ROOT = %r" % root,
        "LIBTORCH_VERSION = %r" % version,
        "TORCHRUN = %r" % (str(torchrun.realpath) if torchrun.exists else ""),
        "",
    ]))

libtorch_repository = repository_rule(
    implementation = _libtorch_repository_impl,
    environ = ["LIBTORCH", "DTENSOR_LIBTORCH", "DTENSOR_HOME", "HOME"],
    local = True,
    doc = "LibTorch: see Note [Which LibTorch].",
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
