// The collective checks: deterministic per-rank inputs (a Weyl sequence offset
// by a hash of seed, rank and salt), serial references, gtest comparisons.
#include "tests/backends/collective_suite.h"

#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <tuple>

namespace dtensor {
namespace testing {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

bool is_integral(c10::ScalarType dtype) { return at::isIntegralType(dtype, /*includeBool=*/true); }

// Maps u in [0, 1) (double) to suite values; see suite_input.
at::Tensor values_from(const at::Tensor& u, bool integral, bool for_product, bool bit_exact) {
  auto level = [&](double levels) { return at::floor(at::mul(u, levels)); };  // 0 .. levels-1
  auto pick = [&](std::vector<double> table) {
    const auto n = static_cast<int64_t>(table.size());
    const at::Tensor values = at::from_blob(table.data(), {n}, at::kDouble).clone();
    return values.index_select(0, level(static_cast<double>(n)).to(at::kLong));
  };
  if (for_product) {
    if (integral) return pick({-2, -1, 1, 2});
    if (!bit_exact) return pick({-2, -1, -0.5, 0.5, 1, 2});
    const at::Tensor sign = at::rsub(at::mul(level(2), 2.0), 1.0);  // +1 or -1
    const at::Tensor fine = at::floor(at::mul(at::frac(at::mul(u, 2.0)), 1000.0));
    return at::mul(sign, at::add(at::div(fine, 2000.0), 0.75));  // |x| in [0.75, 1.25)
  }
  if (integral) return at::sub(level(13), 6.0);                  // -6 .. 6
  if (!bit_exact) return at::div(at::sub(level(13), 6.0), 2.0);  // halves: sums stay exact
  return at::div(at::sub(level(20001), 10000.0), 997.0);         // rounds in every sum
}

std::string shape_string(at::IntArrayRef shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

std::string label(const Communicator& comm, const std::string& what, c10::ScalarType dtype,
                  at::IntArrayRef shape) {
  std::ostringstream out;
  out << what << ' ' << c10::toString(dtype) << shape << " on group "
      << c10::IntArrayRef(comm.group_ranks()) << " (group rank " << comm.rank() << ", "
      << comm.backend_name() << ")";
  return out.str();
}

// Inputs of every member of `comm`, in group order.
std::vector<at::Tensor> member_inputs(const Communicator& comm, at::IntArrayRef shape,
                                      c10::ScalarType dtype, uint64_t salt, bool for_product,
                                      const CollectiveSuiteOptions& options) {
  std::vector<at::Tensor> inputs;
  for (int64_t global : comm.group_ranks()) {
    inputs.push_back(suite_input(global, shape, dtype, salt, for_product, options));
  }
  return inputs;
}

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return at::sub(a.to(at::kDouble), b.to(at::kDouble)).abs().max().item().toDouble();
}

void expect_matches(const at::Tensor& actual, const at::Tensor& expected,
                    const CollectiveSuiteOptions& options, const std::string& what) {
  const at::Tensor got = actual.cpu();
  ASSERT_EQ(got.sizes(), expected.sizes()) << what;
  ASSERT_EQ(got.scalar_type(), expected.scalar_type()) << what;
  if (got.numel() == 0) return;
  if (options.bit_exact || is_integral(got.scalar_type())) {
    EXPECT_TRUE(at::equal(got, expected))
        << what << ": not bit-identical to the serial reference; max abs diff "
        << max_abs_diff(got, expected);
    return;
  }
  const double tolerance = got.scalar_type() == at::kDouble  ? 1e-12
                           : got.scalar_type() == at::kFloat ? 1e-5
                                                             : 1e-2;
  EXPECT_TRUE(at::allclose(got.to(at::kDouble), expected.to(at::kDouble), tolerance, tolerance))
      << what << ": max abs diff " << max_abs_diff(got, expected);
}

bool op_applies(ReduceOp op, c10::ScalarType dtype) {
  return op != ReduceOp::kAvg || at::isFloatingType(dtype);
}

// cat(inputs, dim 0), treating 0-dim inputs as one-element rows.
at::Tensor gathered(const std::vector<at::Tensor>& inputs) {
  std::vector<int64_t> shape = inputs[0].sizes().vec();
  if (shape.empty()) shape.push_back(1);
  shape[0] *= static_cast<int64_t>(inputs.size());
  return at::stack(inputs).reshape(shape);
}

// Rows group rank i sends to group rank j in the uneven all_to_all.
int64_t uneven_rows(int64_t i, int64_t j) { return (i + 2 * j) % 3; }

void check_all_to_all_case(Communicator& comm, const CollectiveSuiteOptions& options,
                           c10::ScalarType dtype, std::vector<int64_t> inner, bool uneven,
                           int64_t base_rows) {
  const int64_t n = comm.size();
  auto rows = [&](int64_t i, int64_t j) { return base_rows + (uneven ? uneven_rows(i, j) : 0); };
  std::vector<at::Tensor> inputs;
  for (int64_t i = 0; i < n; ++i) {
    int64_t total = 0;
    for (int64_t j = 0; j < n; ++j) total += rows(i, j);
    std::vector<int64_t> shape = {total};
    shape.insert(shape.end(), inner.begin(), inner.end());
    inputs.push_back(suite_input(comm.group_ranks()[i], shape, dtype, 7, false, options));
  }
  const int64_t me = comm.rank();
  std::vector<at::Tensor> blocks;
  AllToAllOptions a2a;
  for (int64_t j = 0; j < n; ++j) {
    int64_t offset = 0;
    for (int64_t k = 0; k < me; ++k) offset += rows(j, k);
    blocks.push_back(inputs[j].narrow(0, offset, rows(j, me)));
    a2a.input_split_sizes.push_back(rows(me, j));
    a2a.output_split_sizes.push_back(rows(j, me));
  }
  const at::Tensor expected = at::cat(blocks);
  if (!uneven) a2a = AllToAllOptions{};
  at::Tensor input = inputs[me].to(options.device);
  at::Tensor output = at::full(expected.sizes(), 3, input.options());
  comm.all_to_all_single(output, input, a2a);
  expect_matches(output, expected, options,
                 label(comm, uneven ? "all_to_all_single(uneven)" : "all_to_all_single", dtype,
                       input.sizes()));
}

// Every member computes every member's inputs, so a process-wide cache
// (bounded, cleared when full) saves most of the generation in a fake world.
class InputCache {
 public:
  using Key =
      std::tuple<int64_t, std::vector<int64_t>, c10::ScalarType, uint64_t, bool, uint64_t, bool>;

  at::Tensor get_or_make(Key key, const std::function<at::Tensor()>& make) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = entries_.find(key);
      if (it != entries_.end()) return it->second.clone();
    }
    at::Tensor made = make();
    std::lock_guard<std::mutex> lock(mutex_);
    bytes_ += made.numel() * static_cast<int64_t>(made.element_size());
    if (bytes_ > kBudget) {
      entries_.clear();
      bytes_ = 0;
    }
    entries_.emplace(std::move(key), made);
    return made.clone();
  }

 private:
  static constexpr int64_t kBudget = int64_t{128} << 20;
  std::mutex mutex_;
  std::map<Key, at::Tensor> entries_;
  int64_t bytes_ = 0;
};

at::Tensor make_input(int64_t global_rank, at::IntArrayRef shape, c10::ScalarType dtype,
                      uint64_t salt, bool for_product, const CollectiveSuiteOptions& options) {
  // A Weyl sequence frac(offset + k * alpha): cheap, vectorised, and the same
  // in every process; the offset is a hash of (seed, rank, salt).
  const uint64_t hash = splitmix64(
      options.seed ^ splitmix64(static_cast<uint64_t>(global_rank) ^ splitmix64(salt + 0x51ED)));
  const double offset = static_cast<double>(hash >> 11) * 0x1.0p-53;
  const at::Tensor k = at::arange(c10::multiply_integers(shape), at::kDouble);
  const at::Tensor u = at::frac(at::add(at::mul(k, 0.7548776662466927), offset));
  return values_from(u, is_integral(dtype), for_product, options.bit_exact)
      .to(dtype)
      .reshape(shape)
      .contiguous();
}

}  // namespace

at::Tensor suite_input(int64_t global_rank, at::IntArrayRef shape, c10::ScalarType dtype,
                       uint64_t salt, bool for_product, const CollectiveSuiteOptions& options) {
  static InputCache cache;
  return cache.get_or_make(
      {global_rank, shape.vec(), dtype, salt, for_product, options.seed, options.bit_exact},
      [&] { return make_input(global_rank, shape, dtype, salt, for_product, options); });
}

at::Tensor serial_reduce(const std::vector<at::Tensor>& inputs, ReduceOp op) {
  at::Tensor result = inputs[0].clone();
  for (size_t k = 1; k < inputs.size(); ++k) {
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        result = at::add(result, inputs[k]);
        break;
      case ReduceOp::kProduct:
        result = at::mul(result, inputs[k]);
        break;
      case ReduceOp::kMax:
        result = at::maximum(result, inputs[k]);
        break;
      case ReduceOp::kMin:
        result = at::minimum(result, inputs[k]);
        break;
    }
  }
  if (op == ReduceOp::kAvg && inputs.size() > 1) result.div_(static_cast<int64_t>(inputs.size()));
  return result;
}

std::vector<std::vector<std::vector<int64_t>>> suite_partitions(int64_t world_size) {
  std::vector<std::vector<std::vector<int64_t>>> partitions;
  std::vector<int64_t> reversed(static_cast<size_t>(world_size));
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  partitions.push_back({reversed});
  std::vector<std::vector<int64_t>> parity(2), halves(2), pairs, singletons;
  for (int64_t r = 0; r < world_size; ++r) {
    parity[static_cast<size_t>(r % 2)].push_back(r);
    halves[r < (world_size + 1) / 2 ? 0 : 1].push_back(r);
    if (r % 2 == 0) pairs.push_back({});
    pairs.back().push_back(r);
    singletons.push_back({r});
  }
  for (auto* partition : {&parity, &halves}) {
    if (partition->back().empty()) partition->pop_back();
    partitions.push_back(*partition);
  }
  partitions.push_back(pairs);
  partitions.push_back(singletons);
  return partitions;
}

void check_all_reduce(Communicator& comm, const CollectiveSuiteOptions& options) {
  std::vector<std::vector<int64_t>> shapes = {{}, {0}, {7}, {4, 5}, {3, 1, 2}};
  if (options.large) shapes.push_back({300, 129});
  for (c10::ScalarType dtype : options.dtypes) {
    for (const auto& shape : shapes) {
      const auto plain = member_inputs(comm, shape, dtype, 1, false, options);
      const auto near_one = member_inputs(comm, shape, dtype, 2, true, options);
      for (ReduceOp op : options.reduce_ops) {
        if (!op_applies(op, dtype)) continue;
        const auto& inputs = op == ReduceOp::kProduct ? near_one : plain;
        at::Tensor t = inputs[static_cast<size_t>(comm.rank())].clone().to(options.device);
        comm.all_reduce(t, {op});
        expect_matches(
            t, serial_reduce(inputs, op), options,
            label(comm, std::string("all_reduce(") + reduce_op_name(op) + ")", dtype, shape));
      }
    }
  }
}

void check_all_gather_into_tensor(Communicator& comm, const CollectiveSuiteOptions& options) {
  std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3}, {0, 3}};
  if (options.large) shapes.push_back({200, 100});
  for (c10::ScalarType dtype : options.dtypes) {
    for (const auto& shape : shapes) {
      const auto inputs = member_inputs(comm, shape, dtype, 3, false, options);
      const at::Tensor expected = gathered(inputs);
      at::Tensor input = inputs[static_cast<size_t>(comm.rank())].to(options.device);
      at::Tensor output = at::full(expected.sizes(), 3, input.options());
      comm.all_gather_into_tensor(output, input);
      expect_matches(output, expected, options,
                     label(comm, "all_gather_into_tensor", dtype, shape));
    }
  }
}

void check_reduce_scatter_tensor(Communicator& comm, const CollectiveSuiteOptions& options) {
  std::vector<std::vector<int64_t>> out_shapes = {{}, {3}, {2, 4}};
  if (options.large) out_shapes.push_back({64, 160});  // 40 KiB of float per block
  const int64_t n = comm.size();
  for (c10::ScalarType dtype : options.dtypes) {
    for (const auto& out_shape : out_shapes) {
      std::vector<int64_t> in_shape = out_shape;
      if (in_shape.empty()) in_shape.push_back(1);
      in_shape[0] *= n;
      std::vector<int64_t> split_shape = out_shape;
      split_shape.insert(split_shape.begin(), n);
      const auto plain = member_inputs(comm, in_shape, dtype, 4, false, options);
      const auto near_one = member_inputs(comm, in_shape, dtype, 5, true, options);
      for (ReduceOp op : options.reduce_ops) {
        if (!op_applies(op, dtype)) continue;
        const auto& inputs = op == ReduceOp::kProduct ? near_one : plain;
        const at::Tensor expected = serial_reduce(inputs, op).reshape(split_shape)[comm.rank()];
        at::Tensor input = inputs[static_cast<size_t>(comm.rank())].to(options.device);
        at::Tensor output = at::full(out_shape, 3, input.options());
        comm.reduce_scatter_tensor(output, input, {op});
        expect_matches(output, expected, options,
                       label(comm, std::string("reduce_scatter_tensor(") + reduce_op_name(op) + ")",
                             dtype, in_shape));
      }
    }
  }
}

void check_all_to_all_single(Communicator& comm, const CollectiveSuiteOptions& options) {
  for (c10::ScalarType dtype : options.dtypes) {
    check_all_to_all_case(comm, options, dtype, {3}, /*uneven=*/false, /*base_rows=*/2);
    check_all_to_all_case(comm, options, dtype, {2, 3}, /*uneven=*/true, /*base_rows=*/0);
  }
  if (options.large) {
    check_all_to_all_case(comm, options, options.dtypes[0], {4096}, /*uneven=*/true,
                          /*base_rows=*/2);
  }
}

void check_broadcast(Communicator& comm, const CollectiveSuiteOptions& options) {
  std::vector<std::vector<int64_t>> shapes = {{5, 3}};
  if (options.large) shapes.push_back({200, 100});
  for (c10::ScalarType dtype : options.dtypes) {
    for (const auto& shape : shapes) {
      const auto inputs = member_inputs(comm, shape, dtype, 6, false, options);
      for (int64_t root = 0; root < comm.size(); ++root) {
        at::Tensor t = inputs[static_cast<size_t>(comm.rank())].clone().to(options.device);
        comm.broadcast(t, {root});
        expect_matches(t, inputs[static_cast<size_t>(root)], options,
                       label(comm, "broadcast(root=" + std::to_string(root) + ")", dtype, shape));
      }
    }
  }
}

void check_scatter(Communicator& comm, const CollectiveSuiteOptions& options) {
  std::vector<std::vector<int64_t>> shapes = {{4, 2}};
  if (options.large) shapes.push_back({200, 100});
  for (c10::ScalarType dtype : options.dtypes) {
    for (const auto& shape : shapes) {
      for (int64_t root = 0; root < comm.size(); ++root) {
        const int64_t root_global = comm.group_ranks()[static_cast<size_t>(root)];
        std::vector<at::Tensor> inputs;
        if (comm.rank() == root) {
          for (int64_t j = 0; j < comm.size(); ++j) {
            inputs.push_back(
                suite_input(root_global, shape, dtype, 100 + j, false, options).to(options.device));
          }
        }
        at::Tensor output = at::zeros(shape, at::TensorOptions(dtype).device(options.device));
        comm.scatter(output, inputs, {root});
        expect_matches(
            output, suite_input(root_global, shape, dtype, 100 + comm.rank(), false, options),
            options, label(comm, "scatter(root=" + std::to_string(root) + ")", dtype, shape));
      }
    }
  }
}

void check_barrier(Communicator& comm, const CollectiveSuiteOptions&) {
  const uint64_t before = comm.sequence_number();
  EXPECT_NO_THROW(comm.barrier());
  EXPECT_NO_THROW(comm.barrier());
  EXPECT_EQ(comm.sequence_number(), before + 2);
}

void check_async(Communicator& comm, const CollectiveSuiteOptions& options) {
  const c10::ScalarType dtype = options.dtypes[0];
  const int64_t n = comm.size();
  const size_t me = static_cast<size_t>(comm.rank());
  const auto inputs = member_inputs(comm, {6, 2}, dtype, 8, false, options);
  at::Tensor reduced = inputs[me].clone().to(options.device);
  at::Tensor gathered_out = at::empty({6 * n, 2}, reduced.options());
  at::Tensor scattered = at::empty({6, 2}, reduced.options());
  at::Tensor rs_input =
      at::cat(std::vector<at::Tensor>(static_cast<size_t>(n), inputs[me])).to(options.device);
  std::vector<WorkPtr> works;
  works.push_back(comm.all_reduce(reduced, {ReduceOp::kSum, {}, /*async_op=*/true}));
  works.push_back(comm.all_gather_into_tensor(gathered_out, inputs[me].to(options.device),
                                              {{}, /*async_op=*/true}));
  works.push_back(comm.reduce_scatter_tensor(scattered, rs_input, {ReduceOp::kSum, {}, true}));
  for (const WorkPtr& work : works) {
    ASSERT_NE(work, nullptr);
    EXPECT_NO_THROW(work->wait());
    EXPECT_TRUE(work->is_completed());
  }
  expect_matches(reduced, serial_reduce(inputs, ReduceOp::kSum), options,
                 label(comm, "async all_reduce", dtype, {6, 2}));
  expect_matches(gathered_out, gathered(inputs), options,
                 label(comm, "async all_gather_into_tensor", dtype, {6, 2}));
  expect_matches(scattered, serial_reduce(inputs, ReduceOp::kSum), options,
                 label(comm, "async reduce_scatter_tensor", dtype, {6, 2}));
}

void check_in_place(Communicator& comm, const CollectiveSuiteOptions& options) {
  const c10::ScalarType dtype = options.dtypes[0];
  const int64_t n = comm.size();
  const int64_t me = comm.rank();
  std::vector<std::vector<int64_t>> shapes = {{4, 3}};
  if (options.large) shapes.push_back({100, 300});
  for (const auto& shape : shapes) {
    const int64_t rows = shape[0];
    const auto inputs = member_inputs(comm, shape, dtype, 9, false, options);
    at::Tensor output =
        at::zeros({n * rows, shape[1]}, at::TensorOptions(dtype).device(options.device));
    at::Tensor own_block = output.narrow(0, me * rows, rows);
    own_block.copy_(inputs[static_cast<size_t>(me)]);
    comm.all_gather_into_tensor(output, own_block);
    expect_matches(output, gathered(inputs), options,
                   label(comm, "in-place all_gather_into_tensor", dtype, shape));

    const auto big = member_inputs(comm, {n * rows, shape[1]}, dtype, 10, false, options);
    at::Tensor input = big[static_cast<size_t>(me)].clone().to(options.device);
    at::Tensor out_block = input.narrow(0, me * rows, rows);
    comm.reduce_scatter_tensor(out_block, input, {ReduceOp::kSum});
    expect_matches(out_block, serial_reduce(big, ReduceOp::kSum).narrow(0, me * rows, rows),
                   options, label(comm, "in-place reduce_scatter_tensor", dtype, shape));
  }
}

void check_collectives(Communicator& comm, const CollectiveSuiteOptions& options) {
  SCOPED_TRACE("group " + shape_string(comm.group_ranks()) + ", group rank " +
               std::to_string(comm.rank()));
  check_all_reduce(comm, options);
  check_all_gather_into_tensor(comm, options);
  check_reduce_scatter_tensor(comm, options);
  check_all_to_all_single(comm, options);
  check_broadcast(comm, options);
  check_scatter(comm, options);
  check_barrier(comm, options);
  check_async(comm, options);
  check_in_place(comm, options);
}

void check_all_collectives(World& world, CollectiveSuiteOptions options) {
  options.device = world.device();
  check_collectives(*world.world_group(), options);
  if (!options.sub_groups) return;
  options.large = false;  // the large paths are covered above; keeps the suite quick
  for (const auto& partition : suite_partitions(world.size())) {
    for (const auto& group : partition) {
      if (std::find(group.begin(), group.end(), world.rank()) == group.end()) continue;
      check_collectives(*world.new_group(group), options);
    }
  }
}

}  // namespace testing
}  // namespace dtensor
