// Serial references for each collective and the EXPECTs comparing a
// Communicator's results with them, table-driven over ops, dtypes and shapes.
#include "tests/backends/gloo/gloo_checks.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dtensor::testing::gloo_checks {
namespace {

const std::vector<c10::ScalarType> kReduceDtypes = {
    at::kFloat, at::kDouble, at::kHalf,  at::kBFloat16, at::kInt,          at::kLong,
    at::kChar,  at::kByte,   at::kShort, at::kBool,     at::kComplexFloat,
};
const std::vector<c10::ScalarType> kMoveDtypes = {
    at::kFloat, at::kLong, at::kBool, at::kBFloat16, at::kShort, at::kComplexDouble, at::kHalf,
};
const std::vector<ReduceOp> kOps = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin,
                                    ReduceOp::kProduct};

bool op_applies(ReduceOp op, c10::ScalarType dtype) {
  if (op == ReduceOp::kAvg) return at::isFloatingType(dtype) || at::isComplexType(dtype);
  if (at::isComplexType(dtype)) return op == ReduceOp::kSum;
  return true;
}

std::string label(const char* what, ReduceOp op, c10::ScalarType dtype) {
  return std::string(what) + "(" + reduce_op_name(op) + ") " + c10::toString(dtype);
}

// Reduces the stacked inputs (dim 0 = group rank) as the collective must.
at::Tensor reference_reduce(const at::Tensor& stacked, ReduceOp op, c10::ScalarType dtype) {
  if (dtype == at::kBool) {
    const bool any = op == ReduceOp::kSum || op == ReduceOp::kMax;
    return any ? stacked.any(0) : stacked.all(0);
  }
  const bool exact = at::isComplexType(dtype) || at::isFloatingType(dtype);
  at::Tensor wide =
      stacked.to(exact ? (at::isComplexType(dtype) ? at::kComplexDouble : at::kDouble) : at::kLong);
  at::Tensor result;
  switch (op) {
    case ReduceOp::kSum:
      result = wide.sum(0);
      break;
    case ReduceOp::kAvg:
      result = wide.sum(0) / stacked.size(0);
      break;
    case ReduceOp::kMax:
      result = std::get<0>(wide.max(0));
      break;
    case ReduceOp::kMin:
      result = std::get<0>(wide.min(0));
      break;
    case ReduceOp::kProduct:
      result = wide.prod(0);
      break;
  }
  return result.to(dtype);
}

at::Tensor stacked_inputs(const Communicator& comm, at::IntArrayRef shape, c10::ScalarType dtype) {
  std::vector<at::Tensor> inputs;
  for (int64_t r : comm.group_ranks()) inputs.push_back(rank_input(r, shape, dtype));
  return at::stack(inputs);
}

void expect_same(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  ASSERT_EQ(actual.scalar_type(), expected.scalar_type()) << what;
  EXPECT_TRUE(at::equal(actual, expected)) << what << "\nactual:\n"
                                           << actual << "\nexpected:\n"
                                           << expected;
}

}  // namespace

at::Tensor rank_input(int64_t rank, at::IntArrayRef shape, c10::ScalarType dtype) {
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  at::Tensor index = at::arange(numel, at::kLong).reshape(shape);
  if (dtype == at::kBool) return ((index + rank) % 2).eq(0);
  at::Tensor values = ((index + 7 * rank) % 3 + 1).to(at::kDouble);
  if (at::isComplexType(dtype)) {
    return at::complex(values, at::full_like(values, static_cast<double>(rank))).to(dtype);
  }
  return values.to(dtype);
}

void check_all_reduce(Communicator& comm) {
  for (ReduceOp op : kOps) {
    for (c10::ScalarType dtype : kReduceDtypes) {
      if (!op_applies(op, dtype)) continue;
      SCOPED_TRACE(label("all_reduce", op, dtype));
      at::Tensor t = rank_input(comm.global_rank(), {2, 3}, dtype);
      comm.all_reduce(t, {op});
      expect_same(t, reference_reduce(stacked_inputs(comm, {2, 3}, dtype), op, dtype), "");
    }
  }
  at::Tensor scalar = rank_input(comm.global_rank(), {}, at::kFloat);
  comm.all_reduce(scalar, {ReduceOp::kMax});
  expect_same(scalar,
              reference_reduce(stacked_inputs(comm, {}, at::kFloat), ReduceOp::kMax, at::kFloat),
              "0-dim max");
  at::Tensor empty = at::empty({0, 4});
  comm.all_reduce(empty);
  EXPECT_EQ(empty.numel(), 0);
}

void check_all_gather_into_tensor(Communicator& comm) {
  const std::vector<std::vector<int64_t>> shapes = {{2, 3}, {}, {0, 3}, {1}};
  for (c10::ScalarType dtype : kMoveDtypes) {
    for (const auto& shape : shapes) {
      SCOPED_TRACE(std::string("all_gather_into_tensor ") + c10::toString(dtype) + " " +
                   c10::str(c10::IntArrayRef(shape)));
      at::Tensor input = rank_input(comm.global_rank(), shape, dtype);
      std::vector<int64_t> out_shape = shape.empty() ? std::vector<int64_t>{1} : shape;
      out_shape[0] *= comm.size();
      at::Tensor output = at::zeros(out_shape, input.options());
      comm.all_gather_into_tensor(output, input);
      std::vector<at::Tensor> parts;
      for (int64_t r : comm.group_ranks()) parts.push_back(rank_input(r, shape, dtype));
      expect_same(output, shape.empty() ? at::stack(parts) : at::cat(parts), "");
    }
  }
}

void check_reduce_scatter_tensor(Communicator& comm) {
  const int64_t n = comm.size();
  for (ReduceOp op : kOps) {
    for (c10::ScalarType dtype : kReduceDtypes) {
      if (!op_applies(op, dtype)) continue;
      SCOPED_TRACE(label("reduce_scatter_tensor", op, dtype));
      at::Tensor input = rank_input(comm.global_rank(), {2 * n, 3}, dtype);
      at::Tensor output = at::zeros({2, 3}, input.options());
      comm.reduce_scatter_tensor(output, input, {op});
      at::Tensor full = reference_reduce(stacked_inputs(comm, {2 * n, 3}, dtype), op, dtype);
      expect_same(output, full.narrow(0, 2 * comm.rank(), 2), "");
    }
  }
  SCOPED_TRACE("reduce_scatter_tensor into a 0-dim output");
  at::Tensor input = rank_input(comm.global_rank(), {n}, at::kLong);
  at::Tensor output = at::zeros({}, input.options());
  comm.reduce_scatter_tensor(output, input);
  at::Tensor full =
      reference_reduce(stacked_inputs(comm, {n}, at::kLong), ReduceOp::kSum, at::kLong);
  expect_same(output, full[comm.rank()], "");
}

void check_all_to_all_single(Communicator& comm) {
  const int64_t n = comm.size();
  const int64_t me = comm.rank();
  // Rows group rank s sends to group rank d; uneven, zero for some pairs.
  auto rows = [](int64_t s, int64_t d) { return (s + 2 * d) % 3; };
  // Row k of the block s sends to d holds 100 * global(s) + 10 * d + k.
  auto block = [&](int64_t s, int64_t d, c10::ScalarType dtype) {
    const double base = 100.0 * comm.group_ranks()[s] + 10.0 * d;
    return (at::arange(rows(s, d), at::kDouble) + base)
        .unsqueeze(1)
        .expand({rows(s, d), 2})
        .contiguous()
        .to(dtype);
  };
  for (c10::ScalarType dtype : {at::kFloat, at::kLong, at::kComplexDouble, at::kBFloat16}) {
    SCOPED_TRACE(std::string("all_to_all_single uneven ") + c10::toString(dtype));
    std::vector<at::Tensor> sent, expected;
    AllToAllOptions options;
    for (int64_t j = 0; j < n; ++j) {
      sent.push_back(block(me, j, dtype));
      expected.push_back(block(j, me, dtype));
      options.input_split_sizes.push_back(rows(me, j));
      options.output_split_sizes.push_back(rows(j, me));
    }
    at::Tensor input = at::cat(sent);
    at::Tensor want = at::cat(expected);
    at::Tensor output = at::zeros_like(want);
    comm.all_to_all_single(output, input, options);
    expect_same(output, want, "");
  }
  SCOPED_TRACE("all_to_all_single even");
  at::Tensor input = rank_input(comm.global_rank(), {2 * n, 3}, at::kFloat);
  at::Tensor output = at::zeros_like(input);
  comm.all_to_all_single(output, input);
  std::vector<at::Tensor> expected;
  for (int64_t r : comm.group_ranks()) {
    expected.push_back(rank_input(r, {2 * n, 3}, at::kFloat).narrow(0, 2 * me, 2));
  }
  expect_same(output, at::cat(expected), "");
}

void check_broadcast(Communicator& comm) {
  for (int64_t root = 0; root < comm.size(); ++root) {
    for (c10::ScalarType dtype : kMoveDtypes) {
      SCOPED_TRACE("broadcast root " + std::to_string(root) + " " + c10::toString(dtype));
      at::Tensor t = rank_input(comm.global_rank(), {3, 2}, dtype);
      comm.broadcast(t, {root});
      expect_same(t, rank_input(comm.group_ranks()[root], {3, 2}, dtype), "");
    }
  }
}

void check_scatter(Communicator& comm) {
  for (int64_t root = 0; root < comm.size(); ++root) {
    for (c10::ScalarType dtype : {at::kFloat, at::kBool, at::kComplexFloat}) {
      SCOPED_TRACE("scatter root " + std::to_string(root) + " " + c10::toString(dtype));
      // Root's piece for group rank i: rank_input(100 * root + i).
      std::vector<at::Tensor> inputs;
      if (comm.rank() == root) {
        for (int64_t i = 0; i < comm.size(); ++i) {
          inputs.push_back(rank_input(100 * root + i, {4}, dtype));
        }
      }
      at::Tensor output = at::zeros({4}, dtype);
      comm.scatter(output, inputs, {root});
      expect_same(output, rank_input(100 * root + comm.rank(), {4}, dtype), "");
    }
  }
}

void check_async(Communicator& comm) {
  const int64_t n = comm.size();
  at::Tensor a = rank_input(comm.global_rank(), {5}, at::kFloat);
  at::Tensor b = rank_input(comm.global_rank(), {5}, at::kBFloat16);
  at::Tensor input = rank_input(comm.global_rank(), {2 * n}, at::kDouble);
  at::Tensor c = at::zeros({2}, at::kDouble);
  std::vector<WorkPtr> works;
  works.push_back(comm.all_reduce(a, {ReduceOp::kSum, {}, /*async_op=*/true}));
  works.push_back(comm.all_reduce(b, {ReduceOp::kAvg, {}, /*async_op=*/true}));
  works.push_back(comm.reduce_scatter_tensor(c, input, {ReduceOp::kMax, {}, /*async_op=*/true}));
  for (auto it = works.rbegin(); it != works.rend(); ++it) (*it)->wait();
  for (const WorkPtr& w : works) EXPECT_TRUE(w->is_completed());
  expect_same(a,
              reference_reduce(stacked_inputs(comm, {5}, at::kFloat), ReduceOp::kSum, at::kFloat),
              "async all_reduce sum");
  expect_same(
      b, reference_reduce(stacked_inputs(comm, {5}, at::kBFloat16), ReduceOp::kAvg, at::kBFloat16),
      "async all_reduce avg bf16");
  at::Tensor full =
      reference_reduce(stacked_inputs(comm, {2 * n}, at::kDouble), ReduceOp::kMax, at::kDouble);
  expect_same(c, full.narrow(0, 2 * comm.rank(), 2), "async reduce_scatter max");
}

void check_events_reported_once(Communicator& comm, ObserverList& observers) {
  struct Recorder : CollectiveObserver {
    void on_collective(const CollectiveEvent& e) override { events.push_back(e); }
    std::vector<CollectiveEvent> events;
  } recorder;
  auto registration = observers.add(&recorder);
  const int64_t n = comm.size();
  at::Tensor input = at::ones({2 * n});
  at::Tensor output = at::zeros({2});
  comm.reduce_scatter_tensor(output, input, {ReduceOp::kAvg});
  at::Tensor gathered = at::zeros({2 * n});
  comm.all_gather_into_tensor(gathered, output);
  ASSERT_EQ(recorder.events.size(), 2u);
  EXPECT_EQ(recorder.events[0].kind, CollectiveKind::kReduceScatterTensor);
  EXPECT_EQ(recorder.events[0].reduce_op, ReduceOp::kAvg);
  EXPECT_EQ(recorder.events[1].kind, CollectiveKind::kAllGatherIntoTensor);
  EXPECT_EQ(recorder.events[0].group_ranks, comm.group_ranks());
  expect_same(gathered, at::ones({2 * n}), "avg of ones");
}

void check_all(Communicator& comm, ObserverList& observers) {
  check_all_reduce(comm);
  check_all_gather_into_tensor(comm);
  check_reduce_scatter_tensor(comm);
  check_all_to_all_single(comm);
  check_broadcast(comm);
  check_scatter(comm);
  check_async(comm);
  check_events_reported_once(comm, observers);
  comm.barrier();
}

}  // namespace dtensor::testing::gloo_checks
