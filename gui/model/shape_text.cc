// Implementation of the playground's text parsing. See shape_text.h.
#include "gui/model/shape_text.h"

#include <cctype>
#include <exception>

#include "layout/shard_layout.h"

namespace dtensor::gui {
namespace {

// Splits `text` into tokens at commas, 'x' between digits, and whitespace,
// after dropping one pair of enclosing [] or (). Empty tokens are dropped.
std::vector<std::string> split_tokens(std::string_view text) {
  std::string body(text);
  size_t first = body.find_first_not_of(" \t\r\n");
  size_t last = body.find_last_not_of(" \t\r\n");
  body = first == std::string::npos ? "" : body.substr(first, last - first + 1);
  if (body.size() >= 2 && ((body.front() == '[' && body.back() == ']') ||
                           (body.front() == '(' && body.back() == ')'))) {
    body = body.substr(1, body.size() - 2);
  }
  std::vector<std::string> tokens;
  std::string current;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    bool digit_x = (c == 'x' || c == 'X') && i > 0 &&
                   std::isdigit(static_cast<unsigned char>(body[i - 1])) && i + 1 < body.size() &&
                   std::isdigit(static_cast<unsigned char>(body[i + 1]));
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

// Parses a decimal extent of at most 15 digits; nullopt for anything else.
std::optional<int64_t> parse_extent(const std::string& token) {
  if (token.empty() || token.size() > 15) return std::nullopt;
  int64_t value = 0;
  for (char c : token) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// Trims ASCII whitespace from both ends.
std::string trim(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  size_t last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

// Drops whitespace next to '=' or ':' so that "dp = 2" stays one token.
std::string join_name_separators(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      size_t next = text.find_first_not_of(" \t\r\n", i);
      bool before_sep = next != std::string_view::npos && (text[next] == '=' || text[next] == ':');
      bool after_sep = !out.empty() && (out.back() == '=' || out.back() == ':');
      if (before_sep || after_sep) continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

Parsed<std::vector<int64_t>> parse_shape_text(std::string_view text) {
  Parsed<std::vector<int64_t>> result;
  std::vector<std::string> tokens = split_tokens(text);
  if (tokens.empty()) {
    result.error =
        "tensor shape: enter 1 to " + std::to_string(kMaxTensorDims) + " sizes, e.g. \"8, 6\"";
    return result;
  }
  if (tokens.size() > static_cast<size_t>(kMaxTensorDims)) {
    result.error = "tensor shape: at most " + std::to_string(kMaxTensorDims) + " dims, got " +
                   std::to_string(tokens.size());
    return result;
  }
  std::vector<int64_t> shape;
  for (const std::string& token : tokens) {
    std::optional<int64_t> extent = parse_extent(token);
    if (!extent) {
      result.error = "tensor shape: '" + token + "' is not a size (a whole number >= 0)";
      return result;
    }
    shape.push_back(*extent);
  }
  try {
    shape_numel(shape);
  } catch (const std::exception& e) {
    result.error = std::string("tensor shape: too many elements: ") + e.what();
    return result;
  }
  result.value = std::move(shape);
  return result;
}

Parsed<MeshShape> parse_mesh_text(std::string_view text) {
  Parsed<MeshShape> result;
  std::vector<std::string> tokens = split_tokens(join_name_separators(text));
  if (tokens.empty() || tokens.size() > static_cast<size_t>(kMaxMeshDims)) {
    result.error = "mesh: enter 1 to " + std::to_string(kMaxMeshDims) +
                   " dim sizes, e.g. \"2, 2\" or \"dp=2, tp=2\"";
    return result;
  }
  std::vector<int64_t> shape;
  std::vector<std::string> names;
  for (const std::string& token : tokens) {
    size_t eq = token.find_first_of("=:");
    std::string size_text = eq == std::string::npos ? token : trim(token.substr(eq + 1));
    if (eq != std::string::npos) names.push_back(trim(token.substr(0, eq)));
    std::optional<int64_t> size = parse_extent(size_text);
    if (!size || *size < 1) {
      result.error = "mesh: '" + token + "' is not a mesh dim size (a whole number >= 1)";
      return result;
    }
    shape.push_back(*size);
  }
  if (!names.empty() && names.size() != shape.size()) {
    result.error = "mesh: name every dim (\"dp=2, tp=2\") or none (\"2, 2\")";
    return result;
  }
  int64_t ranks = 1;
  for (int64_t size : shape) {
    ranks = size > kMaxPlaygroundRanks ? kMaxPlaygroundRanks + 1 : ranks * size;
    if (ranks > kMaxPlaygroundRanks) {
      result.error = "mesh: at most " + std::to_string(kMaxPlaygroundRanks) + " ranks can be drawn";
      return result;
    }
  }
  try {
    result.value = MeshShape::create(shape, names);
  } catch (const std::exception& e) {
    result.error = std::string("mesh: ") + e.what();
  }
  return result;
}

std::string normalize_placements_text(std::string_view text) {
  std::string body = trim(text);
  if (body.size() < 2 || body.front() != '(' || body.back() != ')') return body;
  body = trim(body.substr(1, body.size() - 2));
  if (!body.empty() && body.back() == ',') body.pop_back();
  return "[" + body + "]";
}

Parsed<Placements> parse_placements_text(std::string_view text, const MeshShape& mesh,
                                         int64_t tensor_ndim, std::string_view field) {
  Parsed<Placements> result;
  try {
    Placements placements = parse_placements(text);
    if (static_cast<int>(placements.size()) != mesh.ndim()) {
      result.error = std::string(field) + ": expected " + std::to_string(mesh.ndim()) +
                     " placements (one per mesh dim), got " + std::to_string(placements.size());
      return result;
    }
    result.value = validate_placements(placements, mesh, tensor_ndim);
  } catch (const std::exception& e) {
    result.error = std::string(field) + ": " + e.what();
  }
  return result;
}

}  // namespace dtensor::gui
