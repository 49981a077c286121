// LayoutError: the exception layout/ throws on bad user input (meshes,
// placements, shapes), plus the small message-building helpers it uses.
//   DTENSOR_LAYOUT_CHECK(size > 0, "MeshShape::create: mesh dim ", i, " has size ", size);
//   try { ... } catch (const dtensor::LayoutError& e) { std::cerr << e.what(); }
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtensor {

// Thrown for invalid meshes, placements, shapes or text given to layout/.
// The message names the function, the offending values and what to do instead.
// Derives from std::invalid_argument so generic handlers catch it too.
class LayoutError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {

// Concatenates the streamed form of every argument: str_cat("dim ", 3) == "dim 3".
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// Formats a shape or coordinate as "[4, 8]" (an empty vector gives "[]").
std::string shape_to_string(const std::vector<int64_t>& values);

// Product of the extents in `shape` (1 for an empty shape). Throws LayoutError,
// naming `caller`, when an extent is negative or the product overflows int64.
int64_t checked_numel(const std::vector<int64_t>& shape, const char* caller);

}  // namespace detail
}  // namespace dtensor

// Throws dtensor::LayoutError with the concatenated message when `cond` is false.
// The layout/ counterpart of TORCH_CHECK (this layer has no LibTorch).
#define DTENSOR_LAYOUT_CHECK(cond, ...)                                         \
  do {                                                                          \
    if (!(cond)) {                                                              \
      throw ::dtensor::LayoutError(::dtensor::detail::str_cat(__VA_ARGS__));    \
    }                                                                           \
  } while (false)
