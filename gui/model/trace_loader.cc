// Comm trace JSON loading for the viewer: file I/O around trace/'s reader,
// what the file lacks derived from its collectives, and every failure turned
// into one message. See trace_loader.h.
#include "gui/model/trace_loader.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <tuple>

namespace dtensor::gui {
namespace {

using trace::TraceJsonError;

constexpr std::streamoff kMaxFileBytes = std::streamoff{256} << 20;

// Sorts the collectives and fills per_rank_counts / differing_ranks from
// recorded calls when the file lacks them; "" or why the trace is inconsistent.
std::string derive_missing(trace::CommTrace* t, bool calls_recorded) {
  std::stable_sort(t->collectives.begin(), t->collectives.end(),
                   [](const trace::CollectiveRecord& a, const trace::CollectiveRecord& b) {
                     return std::tie(a.rank, a.seq) < std::tie(b.rank, b.seq);
                   });
  int64_t max_rank = -1;
  for (const trace::CollectiveRecord& e : t->collectives) max_rank = std::max(max_rank, e.rank);
  for (const auto& [rank, counts] : t->per_rank_counts) max_rank = std::max(max_rank, rank);
  if (max_rank >= t->world_size) {
    return "rank " + std::to_string(max_rank) + " appears but world_size is " +
           std::to_string(t->world_size);
  }
  if (t->per_rank_counts.empty() && calls_recorded) {
    for (const trace::CollectiveRecord& e : t->collectives) ++t->per_rank_counts[e.rank][e.kind];
  }
  if (t->differing_ranks.empty() && !t->per_rank_counts.empty()) {
    const trace::KindCounts& first = t->per_rank_counts.begin()->second;
    for (const auto& [rank, counts] : t->per_rank_counts) {
      if (counts != first) t->differing_ranks.push_back(rank);
    }
  }
  return "";
}

}  // namespace

TraceLoadResult parse_trace_json(std::string_view text, const std::string& source) {
  TraceLoadResult result;
  const std::string not_a_trace =
      "'" + source + "' is not a comm trace (trace/comm_trace_schema.md): ";
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    result.error = "'" + source + "' is empty: expected a comm trace JSON object";
    return result;
  }
  try {
    trace::TraceRead read = trace::read_comm_trace_json(text, trace::SchemaCheck::kLenient);
    if (std::string problem = derive_missing(&read.trace, read.calls_recorded); !problem.empty()) {
      result.error = not_a_trace + problem;
      return result;
    }
    LoadedTrace loaded;
    loaded.source = source;
    loaded.schema_version = read.schema_version;
    loaded.calls_recorded = read.calls_recorded;
    loaded.tree = trace::module_tree(read.trace);
    loaded.trace = std::move(read.trace);
    loaded.warnings = std::move(read.warnings);
    result.trace = std::move(loaded);
  } catch (const TraceJsonError& e) {
    switch (e.kind()) {
      case TraceJsonError::Kind::kSyntax:
        result.error = "'" + source + "' is not valid JSON: " + e.what();
        break;
      case TraceJsonError::Kind::kNewerVersion:
        result.error = not_a_trace + "dtensor_schema_version is " +
                       std::to_string(e.schema_version()) + " but this viewer reads version " +
                       std::to_string(kTraceSchemaVersion) + "; use a newer dtensor-viewer";
        break;
      default:
        result.error = not_a_trace + e.what();
    }
  } catch (const std::exception& e) {
    result.error = not_a_trace + e.what();
  }
  return result;
}

std::optional<std::string> read_viewer_file(const std::string& path, std::string* error) {
  try {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      *error = "cannot open '" + path + "': " + std::strerror(errno);
      return std::nullopt;
    }
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size < 0) {
      *error = "cannot read '" + path + "' (is it a directory?)";
      return std::nullopt;
    }
    if (size > kMaxFileBytes) {
      *error = "'" + path + "' is larger than 256 MiB; not loading it";
      return std::nullopt;
    }
    in.seekg(0, std::ios::beg);
    std::string text(static_cast<size_t>(size), '\0');
    in.read(text.data(), size);
    if (!in) {
      *error = "cannot read '" + path + "'";
      return std::nullopt;
    }
    return text;
  } catch (const std::exception& e) {
    *error = "cannot read '" + path + "': " + e.what();
  }
  return std::nullopt;
}

TraceLoadResult load_trace_file(const std::string& path) {
  TraceLoadResult result;
  const std::optional<std::string> text = read_viewer_file(path, &result.error);
  if (!text) return result;
  return parse_trace_json(*text, path);
}

}  // namespace dtensor::gui
