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
// reduction yields the saved value. Every file is written durably and the
// directory appears in one atomic step (Note [Crash-consistent saves] in
// checkpoint.cc); each block carries a CRC-32 that load checks (Note [Block
// checksums] in safetensors.cc).
//
// Note [PyTorch DCP's Hugging Face layout]
// The rank files are also what torch.distributed.checkpoint's
// HuggingFaceStorageReader reads: each file's __metadata__ holds
// "DCP_SHARDING_INFO" ({name: {"saved_offsets": [...]}}, the block's global
// offsets) and "DCP_VERSION" "1.0", so in Python
//   dcp.load(state_dict, storage_reader=HuggingFaceStorageReader(dir))
// fills DTensors of any mesh and placements (or plain tensors) from a
// dtensor checkpoint. The other way, load reads a directory without
// index.json from its *.safetensors files: what
// dcp.save(..., storage_writer=HuggingFaceStorageWriter(dir, save_distributed=True))
// writes (blocks placed by their DCP_SHARDING_INFO), or plain Hugging Face
// weights (model.safetensors, or model-0000x-of-0000y.safetensors: whole
// tensors). Files of other writers carry no CRC-32, so their blocks are not
// checksummed.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtensor::checkpoint {

/// Named tensors, DTensors or plain, in the order every rank saves them.
using StateDict = std::vector<std::pair<std::string, at::Tensor>>;

/// A module's parameters and buffers, recursively, with their dotted names
/// ("layers.0.attention.wq.weight"), as named_parameters() + named_buffers().
StateDict module_state(const torch::nn::Module& module);

/// The points a save passes on every rank, in order (SaveOptions::on_phase).
enum class SavePhase {
  kStarted,      // every rank saves the same tensors; nothing of this save is written yet
  kFileWritten,  // this rank's file is durable in the staging directory
  kCommitting,   // every rank's file is durable; rank 0 now writes the index and commits
  kCommitted,    // the new checkpoint is at `dir` (reached after rank 0's commit)
};
/// "started", "file_written", "committing", "committed".
const char* save_phase_name(SavePhase phase);

/// How save reports its progress.
struct SaveOptions {
  /// Called on each rank as it reaches each phase (progress and logging;
  /// failure tests stop a rank there). An exception it throws fails the save.
  std::function<void(SavePhase)> on_phase;
};

/// Writes `state` as the checkpoint at directory `dir`, all or nothing: the
/// files go to a staging directory beside it (".<name>.saving") and replace
/// `dir` in one atomic step once every rank's file is durable, so a crash at
/// any point leaves the previous checkpoint at `dir` (or none) intact, never
/// a mix (Note [Crash-consistent saves]). `dir` must be absent, empty or an
/// earlier checkpoint (its whole directory is replaced): a directory of other
/// files is refused. Collective over the calling
/// thread's world: every rank calls it with the same names, dtypes and global
/// shapes in the same order (checked: a rank that disagrees makes every rank
/// throw, naming the first differing tensor and rank); it returns once the
/// new checkpoint is at `dir`. Ranks must share the file system of `dir`.
/// Throws c10::Error naming the path on I/O failure and the tensor on an
/// unsupported dtype.
void save(const StateDict& state, const std::string& dir, const SaveOptions& options = {});
void save(const torch::nn::Module& module, const std::string& dir, const SaveOptions& options = {});

/// The directory of training step `step` under `root`: "<root>/step-00000100".
std::string step_dir(const std::string& root, int64_t step);
/// save into step_dir(root, step), then removes all but the newest
/// `keep_last` step directories under `root` (0 keeps all). Collective, as save.
/// Example: save_step(state, "/ckpt", 300, /*keep_last=*/2);  // keeps step 200 and 300
void save_step(const StateDict& state, const std::string& root, int64_t step, int keep_last = 0,
               const SaveOptions& options = {});
/// The committed step directories under `root`, as (step, directory), oldest
/// first; unfinished saves (staging directories) are not listed. Empty when
/// `root` does not exist.
std::vector<std::pair<int64_t, std::string>> list_steps(const std::string& root);
/// The newest committed step directory under `root`; nullopt when none.
/// Example: load(*model, *latest_step(root)) resumes from the last save.
std::optional<std::string> latest_step(const std::string& root);

/// How load finds each tensor in the checkpoint.
struct LoadOptions {
  /// The checkpoint's name of the tensor `state` calls `name`, e.g. Hugging
  /// Face's "model.layers.0.self_attn.q_proj.weight" for a module's
  /// "layers.0.attention.wq.weight"; unset: the same name.
  std::function<std::string(const std::string& name)> checkpoint_name;
};

/// What a load read, on this rank.
struct LoadStats {
  /// Bytes read from the files: the parts of saved blocks that overlap this
  /// rank's tensors (memory-mapped, so nothing else is read), plus whole
  /// blocks whose CRC-32 was checked (dtensor's own files).
  int64_t bytes_read = 0;
  int64_t files_opened = 0;
};

/// Fills every tensor of `state` in place (DTensors: their local data, by
/// their own mesh and placements; plain tensors: whole) from the checkpoint
/// in `dir` (ours, PyTorch DCP's Hugging Face layout or plain Hugging Face
/// safetensors files: Note [PyTorch DCP's Hugging Face layout]), converting
/// the dtype if it differs. No collectives. Every block
/// read is checked against its CRC-32. Throws c10::Error naming the tensor
/// when the checkpoint lacks it or its global shape differs, and naming the
/// file and the tensor when a block is missing, unreadable or corrupt.
/// Tensors are written under no_grad; autograd history is not touched.
LoadStats load(const StateDict& state, const std::string& dir, const LoadOptions& options = {});
LoadStats load(torch::nn::Module& module, const std::string& dir, const LoadOptions& options = {});

/// The global rank's data file name: "rank-00003.safetensors".
std::string rank_file_name(int64_t global_rank);

}  // namespace dtensor::checkpoint
