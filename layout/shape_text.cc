// Implementation of shape and mesh text parsing. See shape_text.h.
#include "layout/shape_text.h"

#include <cctype>
#include <optional>
#include <string>

#include "layout/layout_error.h"
#include "layout/text.h"

namespace dtensor {
namespace {

constexpr const char* kSpace = " \t\r\n";

// Splits `text` into tokens at commas, 'x' between digits, and whitespace,
// after dropping one pair of enclosing [] or (). Empty tokens are dropped.
std::vector<std::string> split_tokens(std::string_view text) {
  std::string body = trim_space(text);
  if (body.size() >= 2 && ((body.front() == '[' && body.back() == ']') ||
                           (body.front() == '(' && body.back() == ')'))) {
    body = body.substr(1, body.size() - 2);
  }
  auto is_digit = [&](size_t i) { return std::isdigit(static_cast<unsigned char>(body[i])) != 0; };
  std::vector<std::string> tokens;
  std::string current;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    const bool digit_x = (c == 'x' || c == 'X') && i > 0 && is_digit(i - 1) &&
                         i + 1 < body.size() && is_digit(i + 1);
    if (c == ',' || digit_x || std::isspace(static_cast<unsigned char>(c))) {
      if (!current.empty()) tokens.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) tokens.push_back(current);
  return tokens;
}

// A decimal of at most 15 digits (so products of a few stay in int64).
std::optional<int64_t> parse_extent(const std::string& token) {
  if (token.empty() || token.size() > 15) return std::nullopt;
  int64_t value = 0;
  for (char c : token) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// Drops whitespace next to '=' or ':' so that "dp = 2" stays one token.
std::string join_name_separators(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      const size_t next = text.find_first_not_of(kSpace, i);
      const bool before_sep =
          next != std::string_view::npos && (text[next] == '=' || text[next] == ':');
      const bool after_sep = !out.empty() && (out.back() == '=' || out.back() == ':');
      if (before_sep || after_sep) continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::vector<int64_t> parse_extents(std::string_view text) {
  const std::vector<std::string> tokens = split_tokens(text);
  if (tokens.empty()) throw LayoutError("no sizes in '" + trim_space(text) + "'; expected e.g. \"8, 6\"");
  std::vector<int64_t> extents;
  for (const std::string& token : tokens) {
    const std::optional<int64_t> extent = parse_extent(token);
    if (!extent) throw LayoutError("'" + token + "' is not a size (a whole number >= 0)");
    extents.push_back(*extent);
  }
  return extents;
}

MeshShape parse_mesh_shape(std::string_view text) {
  const std::vector<std::string> tokens = split_tokens(join_name_separators(text));
  if (tokens.empty()) {
    throw LayoutError("no mesh dims in '" + trim_space(text) +
                      "'; expected e.g. \"2, 2\" or \"dp=2, tp=2\"");
  }
  std::vector<int64_t> sizes;
  std::vector<std::string> names;
  for (const std::string& token : tokens) {
    const size_t sep = token.find_first_of("=:");
    if (sep != std::string::npos) names.push_back(trim_space(token.substr(0, sep)));
    const std::optional<int64_t> size =
        parse_extent(sep == std::string::npos ? token : trim_space(token.substr(sep + 1)));
    if (!size || *size < 1)
      throw LayoutError("'" + token + "' is not a mesh dim size (a whole number >= 1)");
    sizes.push_back(*size);
  }
  if (!names.empty() && names.size() != sizes.size()) {
    throw LayoutError("name every dim (\"dp=2, tp=2\") or none (\"2, 2\"), not some: '" +
                      trim_space(text) + "'");
  }
  return MeshShape::create(std::move(sizes), std::move(names));
}

}  // namespace dtensor
