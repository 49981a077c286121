// _StridedShard in the layout algebra: its text form, which rows each rank
// holds (checked against PyTorch 2.15's _StridedShard._split_tensor when
// $DTENSOR_PYTHON has torch), the FSDP + TP layout, refusals, padding and
// the redistribute plans to and from it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "layout/comm_cost.h"
#include "layout/layout_error.h"
#include "layout/placement.h"
#include "layout/redistribute_plan.h"
#include "layout/shard_layout.h"
#include "layout/visualize_sharding.h"
#include "testing/error_of.h"
#include "testing/run_command.h"

namespace dtensor {
namespace {

using testing::error_of;
using ::testing::AllOf;
using ::testing::HasSubstr;

// The global indices a member holds along a strided dim, in local order.
std::vector<int64_t> indices_of(const std::vector<ChunkSpan>& spans) {
  std::vector<int64_t> out;
  for (const ChunkSpan& span : spans) {
    for (int64_t k = 0; k < span.size; ++k) out.push_back(span.offset + k);
  }
  return out;
}

TEST(StridedShardTest, PrintsAndParsesAsPyTorch) {
  EXPECT_EQ(StridedShard(0, 2).to_string(), "_S(0, 2)");
  EXPECT_EQ(to_string(Placements{StridedShard(1, 4), Shard(0)}), "[_S(1, 4), S(0)]");
  EXPECT_EQ(parse_placement("_S(0, 2)"), StridedShard(0, 2));
  EXPECT_EQ(parse_placement("_StridedShard(dim=0, sf=2)"), StridedShard(0, 2));
  EXPECT_EQ(parse_placement("_StridedShard(1, split_factor=3)"), StridedShard(1, 3));
  EXPECT_EQ(parse_placements("[_S(0, 2), S(0)]"), (Placements{StridedShard(0, 2), Shard(0)}));
  EXPECT_NE(StridedShard(0, 2), Shard(0));
  EXPECT_NE(StridedShard(0, 2), StridedShard(0, 3));
  EXPECT_NE(std::hash<Placement>{}(StridedShard(0, 2)), std::hash<Placement>{}(StridedShard(0, 3)));
  EXPECT_FALSE(StridedShard(0, 2).is_shard());
  EXPECT_TRUE(StridedShard(0, 2).splits_dim(0));
  EXPECT_EQ(StridedShard(-1, 2).normalized(3), StridedShard(2, 2));
  EXPECT_THAT(error_of<LayoutError>([] { parse_placement("_S(0)"); }),
              HasSubstr("it needs a split factor"));
  EXPECT_THAT(error_of<LayoutError>([] { parse_placement("_S(0, 0)"); }),
              HasSubstr("a split factor must be >= 1"));
  EXPECT_THAT(error_of<LayoutError>([] { StridedShard(0, 0); }), HasSubstr("must be >= 1"));
}

// PyTorch's docstring example: 9 elements, _StridedShard(0, sf=2) on 4 ranks.
TEST(StridedShardTest, SplitsLikePyTorchsDocstring) {
  const std::vector<std::vector<int64_t>> want = {{0, 1, 5}, {2, 3, 6}, {4, 7}, {8}};
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(indices_of(strided_chunk_spans(9, 2, 4, r)), want[static_cast<size_t>(r)]) << r;
  }
  EXPECT_EQ(padded_split_extent(9, 4, StridedShard(0, 2)), 3);
  EXPECT_EQ(padded_split_extent(9, 4, Shard(0)), 3);
  EXPECT_EQ(padded_split_extent(8, 2, StridedShard(0, 2)), 4);
}

// FSDP over TP: [_S(0, 2), S(0)] on (dp=2, tp=2) gives rank (i, j) the dp
// chunk i of the tp chunk j; [S(0), S(0)] gives the transposed order.
TEST(StridedShardTest, FsdpOverTpLayoutIsOneBlockPerRank) {
  const MeshShape mesh = MeshShape::create({2, 2});
  const Placements fsdp_tp = {StridedShard(0, 2), Shard(0)};
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      const ShardLayout layout = local_shape_and_offset({8, 3}, mesh, fsdp_tp, {i, j});
      EXPECT_EQ(layout.local_shape, (std::vector<int64_t>{2, 3}));
      EXPECT_EQ(layout.global_offset, (std::vector<int64_t>{4 * j + 2 * i, 0})) << i << "," << j;
      EXPECT_EQ(local_shape_and_offset({8, 3}, mesh, {Shard(0), Shard(0)}, {i, j}).global_offset[0],
                4 * i + 2 * j);
    }
  }
  EXPECT_TRUE(is_evenly_sharded({8, 3}, mesh, fsdp_tp));
  EXPECT_FALSE(is_evenly_sharded({6, 3}, mesh, fsdp_tp));  // 6 -> 3, 3 -> 2+1, 2+1
  EXPECT_EQ(global_shape_from_local({{2, 3}, {2, 3}, {1, 3}, {1, 3}}, mesh, fsdp_tp),
            (std::vector<int64_t>{6, 3}));
}

TEST(StridedShardTest, SeparateSpansHaveNoSingleOffset) {
  const MeshShape mesh = MeshShape::create({2, 2});
  const Placements strided = {StridedShard(0, 2), Replicate()};
  const auto spans = local_spans({8, 3}, mesh, strided, {1, 0});
  EXPECT_EQ(indices_of(spans[0]), (std::vector<int64_t>{2, 3, 6, 7}));
  EXPECT_EQ(local_shape({8, 3}, mesh, strided, 2), (std::vector<int64_t>{4, 3}));
  EXPECT_THAT(error_of<LayoutError>([&] { local_shape_and_offset({8, 3}, mesh, strided, 2); }),
              AllOf(HasSubstr("[_S(0, 2), R]"), HasSubstr("2 separate spans of tensor dim 0"),
                    HasSubstr("[2, 4), [6, 8)"), HasSubstr("local_spans()")));
  const std::vector<ShardLayout> blocks = local_blocks({8, 3}, mesh, strided, 2);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[1].global_offset, (std::vector<int64_t>{6, 0}));
  // The text view lists both blocks of every rank.
  EXPECT_THAT(visualize_sharding({8, 3}, mesh, strided), AllOf(HasSubstr("2-3"), HasSubstr("6-7")));
}

TEST(StridedShardTest, PlansGatherAndChunkThroughReplicate) {
  const MeshShape mesh = MeshShape::create({2, 2});
  const Placements fsdp_tp = {StridedShard(0, 2), Shard(0)};
  const RedistributePlan full = plan_redistribute({8, 3}, 4, mesh, fsdp_tp, {Replicate(), Replicate()});
  EXPECT_EQ(full.num_collectives(), 2) << full.to_string();
  ASSERT_EQ(full.steps.size(), 2u);
  // dp's strided shard splits last (the tp shard was cut first): gathered first, as PyTorch 2.15.
  EXPECT_EQ(full.steps[0].mesh_dim, 0);
  EXPECT_EQ(full.steps[1].kind, StepKind::kAllGather);
  EXPECT_EQ(full.steps[1].bytes_per_rank, 4 * 3 * 4);
  const RedistributePlan make = plan_redistribute({8, 3}, 4, mesh, {Replicate(), Replicate()}, fsdp_tp);
  EXPECT_EQ(make.num_collectives(), 0) << make.to_string();
  // _S -> S(1) has no direct step: gather, then chunk.
  const RedistributePlan other = plan_redistribute({8, 4}, 4, MeshShape::create({2}), {StridedShard(0, 2)}, {Shard(1)});
  ASSERT_EQ(other.steps.size(), 2u) << other.to_string();
  EXPECT_EQ(other.steps[0].kind, StepKind::kAllGather);
  EXPECT_EQ(other.steps[1].kind, StepKind::kLocalChunk);
}

// Every (extent, split factor, ranks) up to (12, 4, 4) against PyTorch 2.15's
// own split (with_padding=False), when a Python with torch is given.
TEST(StridedShardTest, AgreesWithPyTorchsSplitTensor) {
  const char* python = std::getenv("DTENSOR_PYTHON");
  if (python == nullptr) GTEST_SKIP() << "DTENSOR_PYTHON not set (tools/test.sh sets it)";
  const std::string script = R"(
import sys
try:
    import torch
    from torch.distributed.tensor.placement_types import _StridedShard
except ImportError:
    sys.exit(77)
for extent in range(13):
    for sf in range(1, 5):
        for n in range(1, 5):
            shards, _ = _StridedShard(0, split_factor=sf)._split_tensor(torch.arange(extent), n, with_padding=False)
            print(extent, sf, n, "|".join(",".join(str(v) for v in s.tolist()) for s in shards))
)";
  const testing::CommandRun run = testing::run_command(std::string(python) + " -c '" + script + "'");
  if (run.status == 77) GTEST_SKIP() << python << " has no torch";
  ASSERT_EQ(run.status, 0) << run.output;
  std::istringstream lines(run.output);
  int compared = 0;
  int64_t extent = 0, sf = 0, n = 0;
  std::string pieces;
  while (lines >> extent >> sf >> n) {
    std::getline(lines, pieces);
    std::string ours;
    for (int64_t r = 0; r < n; ++r) {
      std::string member;
      for (int64_t v : indices_of(strided_chunk_spans(extent, sf, n, r))) {
        member += (member.empty() ? "" : ",") + std::to_string(v);
      }
      ours += (r ? "|" : "") + member;
    }
    EXPECT_EQ(" " + ours, pieces) << "extent " << extent << ", sf " << sf << ", " << n << " ranks";
    ++compared;
  }
  EXPECT_EQ(compared, 13 * 4 * 4);
}


// Note [Strided shards that split last]: FSDP over TP's layout is dp's chunk
// of each tp chunk for most extents; 9 rows on (dp=4, tp=2) are the exception
// the note names (rank (3, 0) holds row 8 under the strided layout).
TEST(StridedShardTest, KnowsWhenAStridedShardSplitsLast) {
  const Placements fsdp_tp = {StridedShard(0, 2), Shard(0)};
  EXPECT_TRUE(strided_shard_splits_last({8, 3}, MeshShape::create({2, 2}), fsdp_tp, 0));
  EXPECT_TRUE(strided_shard_splits_last({7, 3}, MeshShape::create({2, 2}), fsdp_tp, 0));
  EXPECT_FALSE(strided_shard_splits_last({9}, MeshShape::create({4, 2}), fsdp_tp, 0));
  EXPECT_EQ(local_spans({9}, MeshShape::create({4, 2}), fsdp_tp, {3, 0})[0], (std::vector<ChunkSpan>{{8, 1}}));
  EXPECT_TRUE(strided_shard_splits_last({1, 3}, MeshShape::create({2, 3}), {StridedShard(1, 3), Shard(1)}, 0));
  // Not FSDP over TP: the factor is not the later shards' size, no later shard, or the tp dim itself.
  EXPECT_FALSE(strided_shard_splits_last({8}, MeshShape::create({2, 2}), {StridedShard(0, 4), Shard(0)}, 0));
  EXPECT_FALSE(strided_shard_splits_last({8}, MeshShape::create({2, 2}), {StridedShard(0, 2), Replicate()}, 0));
  EXPECT_FALSE(strided_shard_splits_last({8}, MeshShape::create({2, 2}), fsdp_tp, 1));
  // 3-D: both later mesh dims cut first.
  EXPECT_TRUE(strided_shard_splits_last({16}, MeshShape::create({2, 2, 2}), {StridedShard(0, 4), Shard(0), Shard(0)}, 0));
}

// FSDP's unshard of a tensor-parallel parameter, [_S(0, 2), S(0)] -> [R, S(0)]:
// one all_gather inside each tp piece, as PyTorch 2.15 (measured: 1
// all_gather_into_tensor for 7 and 8 rows on 2x2); gathering tp first took two
// and a local chunk. The reverse, FSDP's reshard, is a local chunk.
TEST(StridedShardTest, UnshardsFsdpOverTpInOneGather) {
  const MeshShape mesh = MeshShape::create({2, 2});
  const Placements fsdp_tp = {StridedShard(0, 2), Shard(0)};
  for (int64_t rows : {7, 8}) {
    const RedistributePlan unshard = plan_redistribute({rows, 3}, 4, mesh, fsdp_tp, {Replicate(), Shard(0)});
    ASSERT_EQ(unshard.steps.size(), 1u) << unshard.to_string();
    EXPECT_EQ(unshard.steps[0].kind, StepKind::kAllGather);
    EXPECT_EQ(unshard.steps[0].bytes_per_rank, 2 * 3 * 4);  // the padded dp chunk of a 4-row tp piece
    const RedistributePlan reshard = plan_redistribute({rows, 3}, 4, mesh, {Replicate(), Shard(0)}, fsdp_tp);
    EXPECT_EQ(reshard.num_collectives(), 0) << reshard.to_string();
  }
  // Where the layouts differ the strided path stays: 9 rows on (dp=4, tp=2).
  const RedistributePlan odd =
      plan_redistribute({9}, 4, MeshShape::create({4, 2}), fsdp_tp, {Replicate(), Shard(0)});
  EXPECT_EQ(odd.num_collectives(), 2) << odd.to_string();
}

}  // namespace
}  // namespace dtensor
