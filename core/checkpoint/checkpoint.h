// Sharded checkpoints that reshard on load (PyTorch's torch.distributed.checkpoint
// for DTensors, in files other tools read). Every rank calls save with the same
// names in the same order; each writes only the blocks it owns, replicas once.
// load fills tensors laid out on any mesh and placements (another world size,
// mesh shape or sharding, or plain tensors on one device): each rank reads
// only the saved blocks that overlap its own.
//   dtensor::checkpoint::save(*model, "/ckpt/step100");          // on a (2, 2) mesh
//   ...
//   dtensor::checkpoint::load(*other_model, "/ckpt/step100");    // on an 8-rank mesh
//
// Note [Checkpoint layout]
// A checkpoint is a directory:
//   index.json                 {"format": "dtensor-checkpoint", "version": 1,
//                               "tensors": {name: {"dtype": "F32", "shape": [8, 4],
//                                 "chunks": [{"file": "rank-00002.safetensors",
//                                             "offsets": [4, 0], "sizes": [4, 4]}, ...]}}}
//   rank-<global rank>.safetensors   the blocks that rank wrote, each under the
//                                     tensor's name (one block per tensor per file)
// The index is PyTorch DCP's chunk list (a block's global offsets and sizes)
// in JSON; the data files are plain safetensors, so `safe_open` in Python or
// any safetensors reader opens them. Writers: Note [Who writes a chunk] in
// chunks.h. Plain tensors are written whole by global rank 0. A Partial
// DTensor is reduced to Replicate before it is written (one collective, as
// PyTorch DCP requires a full value); loading into a Partial layout puts the
// value on the first rank of each Partial(sum) mesh dim and zeros on the
// others (avg, max and min: the value on every rank), so that the pending
// reduction yields the saved value.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <string>
#include <utility>
#include <vector>

namespace dtensor::checkpoint {

/// Named tensors, DTensors or plain, in the order every rank saves them.
using StateDict = std::vector<std::pair<std::string, at::Tensor>>;

/// A module's parameters and buffers, recursively, with their dotted names
/// ("layers.0.attention.wq.weight"), as named_parameters() + named_buffers().
StateDict module_state(const torch::nn::Module& module);

/// Writes `state` into directory `dir` (created if needed; files of an
/// earlier checkpoint there are replaced). Collective over the calling
/// thread's world: every rank calls it with the same names, dtypes and global
/// shapes in the same order (checked: a rank that disagrees makes every rank
/// throw, naming the first differing tensor and rank); it returns once every
/// rank's file and the index are complete. Throws c10::Error naming the path
/// on I/O failure and the tensor on an unsupported dtype.
void save(const StateDict& state, const std::string& dir);
void save(const torch::nn::Module& module, const std::string& dir);

/// Fills every tensor of `state` in place (DTensors: their local data, by
/// their own mesh and placements; plain tensors: whole) from the checkpoint
/// in `dir`, converting the dtype if it differs. No collectives. Throws
/// c10::Error naming the tensor when the checkpoint lacks it or its global
/// shape differs, and naming the file when a block is missing or unreadable.
/// Tensors are written under no_grad; autograd history is not touched.
void load(const StateDict& state, const std::string& dir);
void load(torch::nn::Module& module, const std::string& dir);

/// The global rank's data file name: "rank-00003.safetensors".
std::string rank_file_name(int64_t global_rank);

}  // namespace dtensor::checkpoint
