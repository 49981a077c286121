"""rules_cc's cc_library, cc_binary and cc_test, with LibTorch precompiled.

Packages whose targets use LibTorch load these instead of rules_cc's: each
target gets //tools/pch:aten as a dependency and `-include dtensor_pch.h`, so
GCC loads <ATen/ATen.h> compiled once rather than parsing it again (Note
[Precompiled LibTorch] in pch.bzl). `pch = False` leaves a target as rules_cc
builds it (a target that must not depend on LibTorch).
"""

load("@rules_cc//cc:defs.bzl", _cc_binary = "cc_binary", _cc_library = "cc_library", _cc_test = "cc_test")

_PCH = Label("//tools/pch:aten")

def _with_pch(kwargs):
    # Only what a target compiles sees its copts: header-only targets need nothing.
    if kwargs.pop("pch", True) and kwargs.get("srcs"):
        kwargs["deps"] = kwargs.get("deps", []) + [_PCH]
        # -Winvalid-pch: say so when GCC cannot use it (a slower build, not
        # a wrong one: it parses the header instead, so it is no error).
        kwargs["copts"] = kwargs.get("copts", []) + [
            "-include",
            "dtensor_pch.h",
            "-Winvalid-pch",
            "-Wno-error=invalid-pch",
        ]
    return kwargs

def cc_library(**kwargs):
    _cc_library(**_with_pch(kwargs))

def cc_binary(**kwargs):
    _cc_binary(**_with_pch(kwargs))

def cc_test(**kwargs):
    _cc_test(**_with_pch(kwargs))
