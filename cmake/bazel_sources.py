#!/usr/bin/env python3
"""The sources of Bazel cc_library targets, for the CMake build.

The BUILD files are the one list of sources: CMake asks this script for the
`srcs` of every cc_library in a set of Bazel packages instead of keeping a
list of its own (see Note [One list of sources] in CMakeLists.txt).

    bazel_sources.py ROOT PACKAGE...          # ';'-separated .cc paths (CMake list)
    bazel_sources.py ROOT trace:trace_json    # one target's; trace:-trace_json: all but it
    bazel_sources.py ROOT --check PACKAGE...  # exit 1 if a .cc file in a package
                                              # is in no Bazel target

BUILD files are Starlark, which Python's parser reads; only literal string
lists count (select() and list comprehensions of the NCCL targets are read
through: their literal parts are taken).
"""
import ast
import os
import sys


def _strings(node):
    """Literal strings in a srcs expression: a list, a `+` of lists, a select()."""
    if isinstance(node, ast.List):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if isinstance(node, ast.BinOp):
        return _strings(node.left) + _strings(node.right)
    return []


def targets(root, package):
    """{(rule kind, target name): [srcs .cc relative to root]} of one package."""
    path = os.path.join(root, package, "BUILD")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    found = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in ("cc_library", "cc_binary", "cc_test"):
            continue
        kw = {k.arg: k.value for k in node.keywords}
        name = kw.get("name")
        name = name.value if isinstance(name, ast.Constant) else "?"
        srcs = [s for s in _strings(kw.get("srcs", ast.List(elts=[]))) if s.endswith(".cc")]
        found[(node.func.id, name)] = [os.path.join(package, s) for s in srcs]
    return found


def library_sources(root, specs):
    """cc_library srcs of PACKAGE, PACKAGE:name (only it) or PACKAGE:-name (all but it)."""
    out = []
    for spec in specs:
        package, _, target = spec.partition(":")
        found = targets(root, package)
        names = {name for (kind, name) in found if kind == "cc_library"}
        wanted = target.lstrip("-")
        if target and wanted not in names:
            raise SystemExit(f"bazel_sources.py: no cc_library {wanted} in {package}/BUILD")
        for (kind, name), srcs in sorted(found.items()):
            if kind != "cc_library":
                continue
            if target.startswith("-") and name == wanted:
                continue
            if target and not target.startswith("-") and name != wanted:
                continue
            out.extend(srcs)
    return out


def unlisted(root, packages):
    """.cc files under each package (not in sub-packages) that no target lists."""
    missing = []
    for package in packages:
        listed = {s for srcs in targets(root, package).values() for s in srcs}
        base = os.path.join(root, package)
        for dirpath, dirnames, filenames in os.walk(base):
            rel = os.path.relpath(dirpath, root)
            if dirpath != base and os.path.exists(os.path.join(dirpath, "BUILD")):
                dirnames[:] = []  # a sub-package has its own BUILD
                continue
            for f in filenames:
                if f.endswith(".cc") and os.path.join(rel, f) not in listed:
                    missing.append(os.path.join(rel, f))
    return missing


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    root, rest = argv[1], argv[2:]
    if rest[0] == "--check":
        missing = unlisted(root, rest[1:])
        for m in missing:
            print(f"{m}: in no Bazel target of its package's BUILD, so in neither build")
        return 1 if missing else 0
    sys.stdout.write(";".join(library_sources(root, rest)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
