// Tensor-parallel styles, as PyTorch's torch.distributed.tensor.parallel:
// each says how to shard one module's parameters and how to lay out its
// inputs and outputs at its boundary. Apply them with parallelize_module.
//   parallelize_module(*mlp, mesh, {{"net1", ColwiseParallel()},
//                                   {"net2", RowwiseParallel().output_layouts(Shard(0))}});
// Options are chained setters (LibTorch's options style) in place of
// Python's keyword arguments; getters have the same names.
#pragma once

#include <torch/nn/module.h>

#include <optional>
#include <string>
#include <vector>

#include "core/device_mesh.h"
#include "layout/placement.h"
#include "core/parallel/distribute_module.h"

namespace dtensor {

// Note [Parallel styles at C++ module boundaries]
// PyTorch's styles act through forward hooks. C++ modules have none, so a
// style registers its input and output transforms with
// dtensor::nn::register_forward_pre_hook / register_forward_hook
// (core/nn/module_call.h), and they run only where the parent calls the
// child through dtensor::nn::call(child, x) (or the module opens a
// ModuleScope itself). A model whose forward calls children directly
// (child(x)) still computes the right values when its input is a DTensor:
// parameters are DTensors and sharding propagation inserts whatever
// collectives the ops need; only the boundary conversions (from_local,
// redistribute to the declared layouts, to_local) are skipped, so the
// collectives may differ from the plan's.
//
// Styles support a 1-D mesh (the tensor-parallel dim), as PyTorch's; for a
// 2-D mesh pass mesh["tp"] and parallelize the other dim separately (e.g.
// average_gradients over mesh["dp"], core/parallel/data_parallel.h).

/// Base of all styles. Apply it with parallelize_module, or directly:
/// ColwiseParallel().apply(*linear, mesh).
class ParallelStyle {
 public:
  virtual ~ParallelStyle() = default;

  /// Shards `module`'s parameters (where the style does) and registers its
  /// boundary transforms. Precondition: a 1-D `mesh`; `module` owned by a
  /// shared_ptr. Throws c10::Error for a module type the style does not
  /// support, naming the type.
  void apply(torch::nn::Module& module, const DeviceMesh& mesh,
             const DistributeModuleOptions& options = {}) const;

  /// "ColwiseParallel(input_layouts=R, output_layouts=S(-1), use_local_output=true)".
  virtual std::string to_string() const = 0;

 protected:
  virtual void apply_impl(torch::nn::Module& module, const DeviceMesh& mesh,
                          const DistributeModuleOptions& options) const = 0;
};

/// Column-wise sharding of torch::nn::Linear (weight and bias Shard(0): each
/// rank computes some output features) or torch::nn::Embedding (weight
/// Shard(1): some embedding dims). A plain input is taken as `input_layouts`
/// (from_local, no communication), a DTensor input as it is laid out; it is
/// redistributed to Replicate when `input_layouts` is not Replicate (the
/// declared layout decides, as in PyTorch: Note [Declared layouts decide] in
/// core/parallel/internal/layouts.cc). The output (sharded on its last dim)
/// is redistributed to `output_layouts` and returned as a local tensor when
/// `use_local_output`. Example: ColwiseParallel().output_layouts(Replicate()).
class ColwiseParallel : public ParallelStyle {
 public:
  /// Default R.
  ColwiseParallel& input_layouts(Placement layout);
  /// Default S(-1).
  ColwiseParallel& output_layouts(Placement layout);
  /// Default true.
  ColwiseParallel& use_local_output(bool value);
  const Placement& input_layouts() const { return input_layouts_; }
  const Placement& output_layouts() const { return output_layouts_; }
  bool use_local_output() const { return use_local_output_; }
  std::string to_string() const override;

 protected:
  void apply_impl(torch::nn::Module& module, const DeviceMesh& mesh,
                  const DistributeModuleOptions& options) const override;

 private:
  Placement input_layouts_ = Replicate();
  Placement output_layouts_ = Shard(-1);
  bool use_local_output_ = true;
};

/// Row-wise sharding of torch::nn::Linear (weight Shard(1), bias
/// Replicate: each rank contracts some input features, giving partial sums)
/// or torch::nn::Embedding (weight Shard(0): each rank owns some rows of the
/// table, giving partial sums). The input is taken as `input_layouts` as
/// ColwiseParallel's is, and redistributed to Shard(-1) (Linear) or
/// Replicate (Embedding) when `input_layouts` differs from that; the Partial
/// output is reduced to `output_layouts` (Replicate: all_reduce; Shard(d):
/// reduce_scatter). Example: RowwiseParallel().output_layouts(Shard(1)).
class RowwiseParallel : public ParallelStyle {
 public:
  /// Default S(-1).
  RowwiseParallel& input_layouts(Placement layout);
  /// Default R.
  RowwiseParallel& output_layouts(Placement layout);
  /// Default true.
  RowwiseParallel& use_local_output(bool value);
  const Placement& input_layouts() const { return input_layouts_; }
  const Placement& output_layouts() const { return output_layouts_; }
  bool use_local_output() const { return use_local_output_; }
  std::string to_string() const override;

 protected:
  void apply_impl(torch::nn::Module& module, const DeviceMesh& mesh,
                  const DistributeModuleOptions& options) const override;

 private:
  Placement input_layouts_ = Shard(-1);
  Placement output_layouts_ = Replicate();
  bool use_local_output_ = true;
};

/// Sequence parallelism for modules that work per position (LayerNorm,
/// Dropout, user modules): parameters and buffers become replicated DTensors
/// through from_local (no communication: they must already be equal on every
/// rank), the input is taken as sharded on `sequence_dim` (a plain tensor is
/// this rank's shard; a DTensor laid out otherwise is redistributed), and
/// the output stays a DTensor unless `use_local_output`.
/// Example: SequenceParallel().sequence_dim(0).
class SequenceParallel : public ParallelStyle {
 public:
  /// Default 1.
  SequenceParallel& sequence_dim(int64_t dim);
  /// Default false.
  SequenceParallel& use_local_output(bool value);
  int64_t sequence_dim() const { return sequence_dim_; }
  bool use_local_output() const { return use_local_output_; }
  std::string to_string() const override;

 protected:
  void apply_impl(torch::nn::Module& module, const DeviceMesh& mesh,
                  const DistributeModuleOptions& options) const override;

 private:
  int64_t sequence_dim_ = 1;
  bool use_local_output_ = false;
};

/// Lays out a module's tensor inputs (in argument order) without touching
/// its parameters: input i is taken as input_layouts[i] (a plain tensor is
/// wrapped with from_local, a DTensor is used as it is laid out) and
/// redistributed to desired_input_layouts[i] when the two layouts differ;
/// nullopt leaves input i alone. The results stay DTensors unless
/// `use_local_output`. Precondition: both lists have one entry per tensor
/// input, nullopt at the same positions. Example:
///   PrepareModuleInput().input_layouts({Shard(1)}).desired_input_layouts({Replicate()})
class PrepareModuleInput : public ParallelStyle {
 public:
  using Layouts = std::vector<std::optional<Placement>>;
  PrepareModuleInput& input_layouts(Layouts layouts);
  PrepareModuleInput& desired_input_layouts(Layouts layouts);
  /// Default false.
  PrepareModuleInput& use_local_output(bool value);
  const Layouts& input_layouts() const { return input_layouts_; }
  const Layouts& desired_input_layouts() const { return desired_input_layouts_; }
  bool use_local_output() const { return use_local_output_; }
  std::string to_string() const override;

 protected:
  void apply_impl(torch::nn::Module& module, const DeviceMesh& mesh,
                  const DistributeModuleOptions& options) const override;

 private:
  Layouts input_layouts_;
  Layouts desired_input_layouts_;
  bool use_local_output_ = false;
};

/// Lays out a module's (single tensor) output: taken as `output_layouts` (a
/// plain tensor is wrapped with from_local, a DTensor is used as it is),
/// redistributed to `desired_output_layouts` when the two layouts differ,
/// returned local when `use_local_output`.
/// Example: PrepareModuleOutput().output_layouts(Shard(0)).desired_output_layouts(Replicate())
class PrepareModuleOutput : public ParallelStyle {
 public:
  /// Default R.
  PrepareModuleOutput& output_layouts(Placement layout);
  /// Default R.
  PrepareModuleOutput& desired_output_layouts(Placement layout);
  /// Default true.
  PrepareModuleOutput& use_local_output(bool value);
  const Placement& output_layouts() const { return output_layouts_; }
  const Placement& desired_output_layouts() const { return desired_output_layouts_; }
  bool use_local_output() const { return use_local_output_; }
  std::string to_string() const override;

 protected:
  void apply_impl(torch::nn::Module& module, const DeviceMesh& mesh,
                  const DistributeModuleOptions& options) const override;

 private:
  Placement output_layouts_ = Replicate();
  Placement desired_output_layouts_ = Replicate();
  bool use_local_output_ = true;
};

}  // namespace dtensor
