// Thousands of mixed collectives on 8 fake ranks over the world group and
// sub-groups running concurrently; every result is checked against a serial
// reference, and whole runs must be bit-identical to each other.
#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <mutex>
#include <random>

#include "backends/fake/fake_world.h"
#include "tests/backends/collective_suite.h"

namespace dtensor {
namespace {

constexpr int64_t kRanks = 8;
constexpr int kSteps = 3000;

// One collective of the program every rank follows.
struct Step {
  size_t partition = 0;
  CollectiveKind kind = CollectiveKind::kBarrier;
  c10::ScalarType dtype = c10::kFloat;
  ReduceOp op = ReduceOp::kSum;
  int64_t rows = 1;
  int64_t cols = 1;
  bool async = false;
};

std::vector<std::vector<std::vector<int64_t>>> partitions() {
  std::vector<int64_t> all(kRanks);
  for (int64_t r = 0; r < kRanks; ++r) all[static_cast<size_t>(r)] = r;
  auto result = testing::suite_partitions(kRanks);
  result.insert(result.begin(), {all});
  return result;
}

// The same program on every rank, drawn from `seed`: mostly small messages,
// one in fifty large enough for the zero-copy paths.
std::vector<Step> make_program(uint64_t seed, size_t partition_count) {
  std::mt19937_64 rng(seed);
  const CollectiveKind kinds[] = {CollectiveKind::kAllReduce,
                                  CollectiveKind::kAllGatherIntoTensor,
                                  CollectiveKind::kReduceScatterTensor,
                                  CollectiveKind::kAllToAllSingle,
                                  CollectiveKind::kBroadcast,
                                  CollectiveKind::kScatter,
                                  CollectiveKind::kBarrier};
  const c10::ScalarType dtypes[] = {c10::kFloat, c10::kDouble, c10::kInt, c10::kBFloat16};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin,
                          ReduceOp::kProduct};
  std::vector<Step> program(kSteps);
  for (Step& step : program) {
    step.partition = rng() % partition_count;
    step.kind = kinds[rng() % 7];
    step.dtype = dtypes[rng() % 4];
    step.op = ops[rng() % 5];
    if (step.op == ReduceOp::kAvg && !at::isFloatingType(step.dtype)) step.op = ReduceOp::kSum;
    const bool large = rng() % 50 == 0;
    step.rows = large ? 20 : 1 + static_cast<int64_t>(rng() % 6);
    step.cols = large ? 1024 : 1 + static_cast<int64_t>(rng() % 16);
    step.async = rng() % 5 == 0;
  }
  return program;
}

uint64_t fold(uint64_t hash, const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
  const int64_t n = c.numel() * static_cast<int64_t>(c.element_size());
  for (int64_t i = 0; i < n; ++i) hash = (hash ^ bytes[i]) * 0x100000001B3ULL;
  return hash;
}

// One rank's view of a step: its group, inputs and the reference.
class StepRunner {
 public:
  StepRunner(World& world, const std::vector<int64_t>& group, const Step& step, int64_t index)
      : comm_(world.new_group(group)),
        group_(group),
        step_(step),
        salt_(static_cast<uint64_t>(index)) {}

  // Runs the collective; returns {result, expected}.
  std::pair<at::Tensor, at::Tensor> run();

 private:
  at::Tensor input(int64_t member, std::vector<int64_t> shape, uint64_t salt) const {
    return testing::suite_input(group_[static_cast<size_t>(member)], shape, step_.dtype, salt,
                                step_.op == ReduceOp::kProduct, suite_);
  }
  std::vector<at::Tensor> inputs(std::vector<int64_t> shape) const {
    std::vector<at::Tensor> all;
    for (int64_t j = 0; j < comm_->size(); ++j) all.push_back(input(j, shape, salt_));
    return all;
  }
  void finish(const WorkPtr& work) const {
    if (work) work->wait();
  }
  std::pair<at::Tensor, at::Tensor> all_to_all();
  std::pair<at::Tensor, at::Tensor> scatter();

  std::shared_ptr<Communicator> comm_;
  std::vector<int64_t> group_;
  Step step_;
  uint64_t salt_;
  testing::CollectiveSuiteOptions suite_;
};

std::pair<at::Tensor, at::Tensor> StepRunner::run() {
  const int64_t n = comm_->size();
  const int64_t me = comm_->rank();
  const std::vector<int64_t> shape = {step_.rows, step_.cols};
  switch (step_.kind) {
    case CollectiveKind::kAllReduce: {
      auto all = inputs(shape);
      at::Tensor t = all[static_cast<size_t>(me)].clone();
      finish(comm_->all_reduce(t, {step_.op, {}, step_.async}));
      return {t, testing::serial_reduce(all, step_.op)};
    }
    case CollectiveKind::kAllGatherIntoTensor: {
      auto all = inputs(shape);
      at::Tensor out = at::empty({n * step_.rows, step_.cols}, all[0].options());
      finish(comm_->all_gather_into_tensor(out, all[static_cast<size_t>(me)], {{}, step_.async}));
      return {out, at::cat(all)};
    }
    case CollectiveKind::kReduceScatterTensor: {
      auto all = inputs({n * step_.rows, step_.cols});
      at::Tensor out = at::empty(shape, all[0].options());
      finish(comm_->reduce_scatter_tensor(out, all[static_cast<size_t>(me)],
                                          {step_.op, {}, step_.async}));
      return {out, testing::serial_reduce(all, step_.op).narrow(0, me * step_.rows, step_.rows)};
    }
    case CollectiveKind::kAllToAllSingle:
      return all_to_all();
    case CollectiveKind::kBroadcast: {
      auto all = inputs(shape);
      const int64_t root = static_cast<int64_t>(salt_) % n;
      at::Tensor t = all[static_cast<size_t>(me)].clone();
      finish(comm_->broadcast(t, {root, {}, step_.async}));
      return {t, all[static_cast<size_t>(root)]};
    }
    case CollectiveKind::kScatter:
      return scatter();
    case CollectiveKind::kBarrier:
      comm_->barrier();
      return {at::zeros({1}), at::zeros({1})};
  }
  return {};
}

std::pair<at::Tensor, at::Tensor> StepRunner::all_to_all() {
  const int64_t n = comm_->size();
  const int64_t me = comm_->rank();
  auto rows = [&](int64_t i, int64_t j) {
    return (i + j + static_cast<int64_t>(salt_)) % 3 * step_.rows / 2;
  };
  std::vector<at::Tensor> blocks;
  AllToAllOptions options;
  options.async_op = step_.async;
  int64_t total = 0;
  for (int64_t j = 0; j < n; ++j) {
    options.input_split_sizes.push_back(rows(me, j));
    options.output_split_sizes.push_back(rows(j, me));
    total += rows(me, j);
    int64_t from_j_total = 0;
    int64_t offset = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (k == me) offset = from_j_total;
      from_j_total += rows(j, k);
    }
    blocks.push_back(input(j, {from_j_total, step_.cols}, salt_).narrow(0, offset, rows(j, me)));
  }
  at::Tensor mine = input(me, {total, step_.cols}, salt_);
  const at::Tensor expected = at::cat(blocks);
  at::Tensor out = at::empty(expected.sizes(), expected.options());
  finish(comm_->all_to_all_single(out, mine, options));
  return {out, expected};
}

std::pair<at::Tensor, at::Tensor> StepRunner::scatter() {
  const int64_t n = comm_->size();
  const int64_t me = comm_->rank();
  const int64_t root = static_cast<int64_t>(salt_) % n;
  const std::vector<int64_t> shape = {step_.rows, step_.cols};
  std::vector<at::Tensor> sent;
  if (me == root) {
    for (int64_t j = 0; j < n; ++j) sent.push_back(input(root, shape, salt_ * 1000 + j));
  }
  at::Tensor out = at::empty(shape, at::TensorOptions(step_.dtype));
  finish(comm_->scatter(out, sent, {root, {}, step_.async}));
  return {out, input(root, shape, salt_ * 1000 + me)};
}

// Runs the program; returns each rank's hash of all its results, and counts
// results that differ from the reference.
std::vector<uint64_t> run_program(const std::vector<Step>& program, int* mismatches) {
  const auto groups = partitions();
  std::vector<uint64_t> hashes(kRanks);
  std::mutex mutex;
  run_fake_world(
      kRanks,
      [&](World& world) {
        uint64_t hash = 0xCBF29CE484222325ULL;
        int wrong = 0;
        for (size_t i = 0; i < program.size(); ++i) {
          const Step& step = program[i];
          for (const auto& group : groups[step.partition]) {
            if (std::find(group.begin(), group.end(), world.rank()) == group.end()) continue;
            auto [result, expected] = StepRunner(world, group, step, static_cast<int64_t>(i)).run();
            hash = fold(hash, result);
            if (!at::equal(result, expected) && wrong++ == 0) {
              ADD_FAILURE() << "rank " << world.rank() << " step " << i << ": "
                            << collective_name(step.kind) << " " << c10::toString(step.dtype)
                            << " differs from the serial reference";
            }
          }
        }
        std::lock_guard<std::mutex> lock(mutex);
        hashes[static_cast<size_t>(world.rank())] = hash;
        *mismatches += wrong;
      },
      {/*timeout=*/std::chrono::milliseconds(30000)});
  return hashes;
}

TEST(FakeWorldStressTest, MixedCollectivesOnConcurrentGroupsAreCorrectAndBitIdenticalRunToRun) {
  const uint64_t seed = 20240601;
  std::cout << "stress program seed " << seed << ", " << kSteps << " steps on " << kRanks
            << " ranks\n";
  const auto program = make_program(seed, partitions().size());
  int mismatches = 0;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<uint64_t> first = run_program(program, &mismatches);
  std::cout << "one run: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s\n";
  EXPECT_EQ(mismatches, 0);
  for (int repeat = 0; repeat < 2; ++repeat) {
    EXPECT_EQ(run_program(program, &mismatches), first) << "run " << repeat + 2 << " differs";
  }
}

}  // namespace
}  // namespace dtensor
