// What every LibTorch-using file of dtensor's Bazel build sees first, compiled
// once per configuration: see Note [Precompiled LibTorch] in pch.bzl.
#ifndef DTENSOR_TOOLS_PCH_DTENSOR_PCH_H_
#define DTENSOR_TOOLS_PCH_DTENSOR_PCH_H_

#include <ATen/ATen.h>

#endif  // DTENSOR_TOOLS_PCH_DTENSOR_PCH_H_
