// Op-by-op checks of the shape family (split, chunk, narrow, unbind, cat,
// stack, repeat, flatten, unflatten, contiguous, clone, flip, index_select,
// gather): every placement of every input on a mesh of 4 and a sample on
// 2x2, outputs and gradients against the single-device run.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "tests/core/ops/op_harness.h"

namespace dtensor::testing {
namespace {

Tensors pieces(const std::vector<at::Tensor>& parts) {
  Tensors out;
  for (const auto& p : parts) out.push_back(p);
  return out;
}

TEST(ViewOpsTest, SplitKeepsShardsOfOtherDims) {
  check_all_placements({"split", {Input::floats({8, 12})},
                        [](const Tensors& x) { return pieces(torch::split(x[0], 3, 1)); }});
  check_all_placements(OpCase{"split_uneven", {Input::floats({7, 5})},
                              [](const Tensors& x) { return pieces(torch::split(x[0], 2, 0)); }});
}

TEST(ViewOpsTest, SplitWithSizesAndChunk) {
  check_all_placements({"split_with_sizes", {Input::floats({8, 12})},
                        [](const Tensors& x) { return pieces(torch::split_with_sizes(x[0], {4, 8}, 1)); }});
  check_all_placements({"chunk", {Input::floats({8, 12})},
                        [](const Tensors& x) { return pieces(torch::chunk(x[0], 2, 0)); }});
}

TEST(ViewOpsTest, NarrowIsASlice) {
  check_all_placements({"narrow", {Input::floats({8, 12})},
                        [](const Tensors& x) { return Tensors{torch::narrow(x[0], 1, 1, 3)}; }});
}

TEST(ViewOpsTest, UnbindDropsTheDim) {
  check_all_placements({"unbind", {Input::floats({4, 8, 4})},
                        [](const Tensors& x) { return pieces(torch::unbind(x[0], 0)); }});
  check_all_placements({"unbind_last", {Input::floats({8, 4})},
                        [](const Tensors& x) { return pieces(torch::unbind(x[0], 1)); }});
}

TEST(ViewOpsTest, CatAndStack) {
  OpCase cat{"cat", {Input::floats({4, 12}), Input::floats({4, 4})},
             [](const Tensors& x) { return Tensors{torch::cat({x[0], x[1]}, 1)}; }};
  check_all_placements(cat);
  OpCase cat0{"cat_dim0", {Input::floats({4, 12}), Input::floats({4, 12})},
              [](const Tensors& x) { return Tensors{torch::cat({x[0], x[1]}, 0)}; }};
  check_all_placements(cat0);
  OpCase stack{"stack", {Input::floats({4, 12}), Input::floats({4, 12})},
               [](const Tensors& x) { return Tensors{torch::stack({x[0], x[1]}, 1)}; }};
  check_all_placements(stack);
}

TEST(ViewOpsTest, Repeat) {
  check_all_placements({"repeat", {Input::floats({4, 8})},
                        [](const Tensors& x) { return Tensors{x[0].repeat({2, 1, 1})}; }});
  check_all_placements({"repeat_cols", {Input::floats({4, 8})},
                        [](const Tensors& x) { return Tensors{x[0].repeat({1, 2})}; }});
}

TEST(ViewOpsTest, FlattenUnflattenContiguousClone) {
  check_all_placements({"flatten", {Input::floats({4, 4, 8})},
                        [](const Tensors& x) { return Tensors{x[0].flatten(1)}; }});
  check_all_placements({"unflatten", {Input::floats({8, 12})},
                        [](const Tensors& x) { return Tensors{x[0].unflatten(1, {3, 4})}; }});
  check_all_placements({"contiguous", {Input::floats({8, 12})},
                        [](const Tensors& x) { return Tensors{x[0].t().contiguous()}; }});
  check_all_placements({"clone", {Input::floats({8, 4})},
                        [](const Tensors& x) { return Tensors{x[0].clone()}; }});
}

TEST(ViewOpsTest, FlipRollIndexSelectGather) {
  check_all_placements({"flip", {Input::floats({8, 12})},
                        [](const Tensors& x) { return Tensors{x[0].flip({1})}; }});
  check_all_placements({"roll", {Input::floats({8, 12})},
                        [](const Tensors& x) { return Tensors{x[0].roll({2}, {0})}; }});
  check_all_placements({"index_select", {Input::floats({8, 12}), Input::indices({4}, 12)},
                        [](const Tensors& x) { return Tensors{x[0].index_select(1, x[1])}; }});
  check_all_placements({"gather", {Input::floats({8, 12}), Input::indices({8, 3}, 12)},
                        [](const Tensors& x) { return Tensors{x[0].gather(1, x[1])}; }});
}

TEST(ViewOpsTest, SelectBackwardOfIndexing) {
  check_all_placements({"select", {Input::floats({4, 8})},
                        [](const Tensors& x) { return Tensors{x[0].select(0, 1)}; }});
}

// Uneven shards (torch.chunk sizes, some ranks empty): 6 over 4 is 2, 2, 2, 0.
// The copying views (view_copy, expand_copy) shard as their views; a complex
// view's pair dim never shards (view_as_complex of x [S(2)] gathers it).
TEST(ViewOpsTest, CopyingViewsAndComplexViews) {
  check_all_placements(OpCase("view_copy", {Input::floats({4, 6})}, [](const Tensors& t) {
    return Tensors{at::view_copy(t[0], {4, 2, 3})};
  }));
  check_all_placements(OpCase("expand_copy", {Input::floats({4, 1})}, [](const Tensors& t) {
    return Tensors{at::expand_copy(t[0], {4, 6})};
  }));
  check_all_placements(OpCase("complex_round_trip", {Input::floats({4, 6, 2})}, [](const Tensors& t) {
    return Tensors{at::view_as_real(at::view_as_complex(t[0]) * c10::complex<double>(0.5, 2.0))};
  }));
}

TEST(ViewOpsTest, UnevenShards) {
  check_all_placements(OpCase("cat_uneven", {Input::floats({6, 5}), Input::floats({6, 3})},
                              [](const Tensors& x) { return Tensors{torch::cat({x[0], x[1]}, 1)}; }));
  check_all_placements(OpCase("stack_uneven", {Input::floats({7, 5}), Input::floats({7, 5})},
                              [](const Tensors& x) { return Tensors{torch::stack({x[0], x[1]}, 0)}; }));
  check_all_placements(OpCase("unbind_uneven", {Input::floats({3, 6})},
                              [](const Tensors& x) { return pieces(torch::unbind(x[0], 0)); }));
  check_all_placements(OpCase("flip_uneven", {Input::floats({6, 5})},
                              [](const Tensors& x) { return Tensors{x[0].flip({0})}; }));
}

}  // namespace
}  // namespace dtensor::testing
