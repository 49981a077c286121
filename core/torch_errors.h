// The one bridge from layout/'s LayoutError (pure C++, no LibTorch) to
// c10::Error, what LibTorch users catch. Every core/ and debug/ caller of a
// layout function that can throw goes through it, so messages always carry
// the caller's context first:
//   Placements p = rethrow_as_torch_error([&] { return validate_placements(...); },
//                                         "DTensor::from_local on rank ", rank);
#pragma once

#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include "layout/layout_error.h"

namespace dtensor {

/// Runs `fn`; a LayoutError it throws becomes a c10::Error reading
/// "<context...>: <the layout message>". Other exceptions pass through.
/// The context is evaluated before `fn` runs: keep it cheap (no to_string()
/// on a hot path; catch LayoutError yourself there).
template <typename Fn, typename... Context>
auto rethrow_as_torch_error(Fn&& fn, const Context&... context) -> decltype(fn()) {
  try {
    return fn();
  } catch (const LayoutError& e) {
    TORCH_CHECK(false, c10::str(context...), ": ", e.what());
  }
}

}  // namespace dtensor
