// Planner quality: for every pair of placements on meshes (4), (2, 2), (2, 4)
// and (2, 2, 2), with an evenly and an unevenly divisible 2-D shape, the
// bytes per rank of our plan (plan_redistribute, Dijkstra) against PyTorch's
// greedy planner (greedy_reference_plan) and against a lower bound.
//   bazel run -c opt //benchmarks:planner_quality_bench [-- --json out.json]
//
// Note [Redistribute lower bound]
// A rank must receive every byte of its target block that its source block
// does not hold: |T| - |T n S| bytes (blocks from local_shape_and_offset;
// Partial and Replicate hold the full extent). When a Partial on a mesh dim
// of size > 1 is reduced away, the rank holds none of its target values yet
// and must receive at least |T| bytes (one pre-reduced value per element).
// The bound is the maximum over ranks. Plans are counted in the cost model's
// bytes per rank (ring formulas on padded buffers, Note [Comm cost model]),
// which is never below what any rank receives, so plan >= bound always.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "benchmarks/bench_util.h"
#include "layout/layout_error.h"
#include "layout/redistribute_plan.h"
#include "layout/shard_layout.h"
#include "testing/placements.h"

namespace dtensor {
namespace {

int64_t volume(const std::vector<int64_t>& shape) {
  int64_t v = 1;
  for (int64_t s : shape) v *= s;
  return v;
}

// Elements of the intersection of two blocks.
int64_t overlap(const ShardLayout& a, const ShardLayout& b) {
  int64_t v = 1;
  for (size_t d = 0; d < a.local_shape.size(); ++d) {
    const int64_t lo = std::max(a.global_offset[d], b.global_offset[d]);
    const int64_t hi = std::min(a.global_offset[d] + a.local_shape[d],
                                b.global_offset[d] + b.local_shape[d]);
    v *= std::max<int64_t>(0, hi - lo);
  }
  return v;
}

// See Note [Redistribute lower bound].
int64_t lower_bound(const std::vector<int64_t>& shape, int64_t esize, const MeshShape& mesh,
                    const Placements& from, const Placements& to) {
  bool reduces = false;
  for (int i = 0; i < mesh.ndim(); ++i) {
    if (mesh.size(i) > 1 && from[static_cast<size_t>(i)].is_partial() &&
        !to[static_cast<size_t>(i)].is_partial())
      reduces = true;
  }
  int64_t bound = 0;
  for (int64_t r = 0; r < mesh.num_ranks(); ++r) {
    const ShardLayout target = local_shape_and_offset(shape, mesh, to, r);
    const ShardLayout source = local_shape_and_offset(shape, mesh, from, r);
    const int64_t t = volume(target.local_shape);
    const int64_t need = reduces ? t : t - overlap(target, source);
    bound = std::max(bound, need * esize);
  }
  return bound;
}

std::string mesh_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

struct Tally {
  int pairs = 0, refused = 0;
  int fewer_bytes = 0, equal_bytes = 0, more_bytes = 0;  // ours vs greedy, bytes
  int lex_better = 0, lex_worse = 0;                      // by (collectives, bytes)
  int at_bound = 0, greedy_at_bound = 0;
  int64_t ours_bytes = 0, greedy_bytes = 0, bound_bytes = 0;
};

void run(const bench::Args& args) {
  bench::Results results("planner_quality");
  const std::vector<std::vector<int64_t>> meshes = {{4}, {2, 2}, {2, 4}, {2, 2, 2}};
  const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"even", {16, 8}}, {"uneven", {7, 13}}};
  std::printf("Planner quality: bytes/rank summed over all placement pairs (2-D float tensor)\n");
  std::printf("%-10s %-7s %6s %8s %10s %10s %10s %7s %7s %7s %6s %6s\n", "mesh", "shape", "pairs",
              "refused", "ours B", "greedy B", "bound B", "better", "equal", "worse", "@bound",
              "g@bnd");
  Tally total;
  for (const auto& mesh_dims : meshes) {
    if (args.smoke && mesh_dims.size() > 2) continue;
    const MeshShape mesh = MeshShape::create(mesh_dims);
    const std::vector<Placements> all =
        testing::all_placement_lists(static_cast<int>(mesh.ndim()), testing::placement_alphabet(/*tensor_ndim=*/2));
    for (const auto& [shape_name, shape] : shapes) {
      Tally t;
      for (const Placements& from : all) {
        for (const Placements& to : all) {
          ++t.pairs;
          RedistributePlan ours, greedy;
          try {
            ours = plan_redistribute(shape, 4, mesh, from, to);
            greedy = greedy_reference_plan(shape, 4, mesh, from, to);
          } catch (const LayoutError&) {
            ++t.refused;
            continue;
          }
          const int64_t ob = ours.total_bytes_per_rank(), gb = greedy.total_bytes_per_rank();
          const int64_t lb = lower_bound(shape, 4, mesh, from, to);
          t.ours_bytes += ob;
          t.greedy_bytes += gb;
          t.bound_bytes += lb;
          t.fewer_bytes += ob < gb;
          t.equal_bytes += ob == gb;
          t.more_bytes += ob > gb;
          const auto ok = std::make_pair(ours.num_collectives(), ob);
          const auto gk = std::make_pair(greedy.num_collectives(), gb);
          t.lex_better += ok < gk;
          t.lex_worse += gk < ok;
          t.at_bound += ob == lb;
          t.greedy_at_bound += gb == lb;
          if (ob < lb || gb < lb) {
            std::printf("  BOUND VIOLATED: %s -> %s ours %lld greedy %lld bound %lld\n",
                        to_string(from).c_str(), to_string(to).c_str(),
                        static_cast<long long>(ob), static_cast<long long>(gb),
                        static_cast<long long>(lb));
          }
        }
      }
      const int planned = t.pairs - t.refused;
      std::printf("%-10s %-7s %6d %8d %10lld %10lld %10lld %7d %7d %7d %6d %6d\n",
                  mesh_string(mesh_dims).c_str(), shape_name.c_str(), t.pairs, t.refused,
                  static_cast<long long>(t.ours_bytes), static_cast<long long>(t.greedy_bytes),
                  static_cast<long long>(t.bound_bytes), t.fewer_bytes, t.equal_bytes,
                  t.more_bytes, t.at_bound, t.greedy_at_bound);
      results.rows().push_back({{"mesh", mesh_string(mesh_dims)},
                                {"shape", shape_name},
                                {"global_shape", shape},
                                {"pairs", t.pairs},
                                {"refused", t.refused},
                                {"planned", planned},
                                {"ours_bytes", t.ours_bytes},
                                {"greedy_bytes", t.greedy_bytes},
                                {"lower_bound_bytes", t.bound_bytes},
                                {"ours_fewer_bytes", t.fewer_bytes},
                                {"equal_bytes", t.equal_bytes},
                                {"ours_more_bytes", t.more_bytes},
                                {"ours_better_lexicographic", t.lex_better},
                                {"ours_worse_lexicographic", t.lex_worse},
                                {"ours_at_bound", t.at_bound},
                                {"greedy_at_bound", t.greedy_at_bound}});
      total.pairs += planned;
      total.fewer_bytes += t.fewer_bytes;
      total.more_bytes += t.more_bytes;
      total.lex_better += t.lex_better;
      total.lex_worse += t.lex_worse;
      total.ours_bytes += t.ours_bytes;
      total.greedy_bytes += t.greedy_bytes;
      total.bound_bytes += t.bound_bytes;
      total.at_bound += t.at_bound;
    }
  }
  std::printf(
      "better/equal/worse: our plan's bytes vs greedy's; @bound / g@bnd: plans equal to the\n"
      "lower bound (ours / greedy). Lexicographic (collectives, bytes), the planner's own\n"
      "objective: ours better in %d pairs, worse in %d.\n",
      total.lex_better, total.lex_worse);
  std::printf("SUMMARY planner: %d planned pairs, ours fewer bytes in %d, more in %d; "
              "bytes ours/greedy = %.3f, ours/bound = %.3f\n",
              total.pairs, total.fewer_bytes, total.more_bytes,
              static_cast<double>(total.ours_bytes) / static_cast<double>(total.greedy_bytes),
              static_cast<double>(total.ours_bytes) / static_cast<double>(std::max<int64_t>(1, total.bound_bytes)));
  results.summary() = {{"planned_pairs", total.pairs},
                       {"ours_fewer_bytes", total.fewer_bytes},
                       {"ours_more_bytes", total.more_bytes},
                       {"ours_better_lexicographic", total.lex_better},
                       {"ours_worse_lexicographic", total.lex_worse},
                       {"ours_at_bound", total.at_bound},
                       {"bytes_ours_over_greedy",
                        static_cast<double>(total.ours_bytes) / static_cast<double>(total.greedy_bytes)},
                       {"bytes_ours_over_bound", static_cast<double>(total.ours_bytes) /
                                                     static_cast<double>(std::max<int64_t>(1, total.bound_bytes))}};
  results.write(args.json_path);
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) {
  dtensor::run(dtensor::bench::parse_args(argc, argv));
  return 0;
}
