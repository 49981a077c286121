// Sharded checkpoints: describing what each rank writes, the crash-consistent
// save protocol, and the resharding load. See checkpoint.h.
#include "core/checkpoint/checkpoint.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backends/world.h"
#include "core/checkpoint/chunks.h"
#include "core/checkpoint/durable.h"
#include "core/checkpoint/safetensors.h"
#include "core/collectives.h"
#include "core/dtensor.h"
#include "layout/shard_layout.h"

namespace dtensor::checkpoint {
namespace {

constexpr const char* kFormat = "dtensor-checkpoint";
constexpr int kVersion = 1;
constexpr const char* kIndexFile = "index.json";
// Note [PyTorch DCP's Hugging Face layout]: the __metadata__ keys that
// torch.distributed.checkpoint's HuggingFaceStorageReader reads.
constexpr const char* kDcpShardingInfoKey = "DCP_SHARDING_INFO";
constexpr const char* kDcpVersionKey = "DCP_VERSION";
constexpr const char* kDcpVersion = "1.0";

std::string shape_text(c10::IntArrayRef shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

/// A tensor as save sees it: global shape, layout, and this rank's block.
struct SavedTensor {
  std::string name;
  c10::ScalarType dtype;
  std::vector<int64_t> global_shape;
  std::vector<WriteChunk> chunks;      // mesh ranks as global ranks
  at::Tensor local;                    // this rank's data
};

SavedTensor describe_for_save(const std::string& name, const at::Tensor& tensor) {
  TORCH_CHECK(tensor.defined(), "checkpoint::save: tensor \"", name, "\" is undefined");
  TORCH_CHECK(!tensor.is_meta(), "checkpoint::save: tensor \"", name,
              "\" is a meta tensor (solo mode and meta-device modules have no data to save)");
  SavedTensor saved{name, tensor.scalar_type(), tensor.sizes().vec(), {}, {}};
  if (!is_dtensor(tensor)) {
    saved.chunks.push_back({0, Box{std::vector<int64_t>(tensor.dim(), 0), saved.global_shape}});
    saved.local = tensor;
    return saved;
  }
  DTensor dtensor(tensor);
  Placements placements = dtensor.placements();
  bool partial = false;
  for (Placement& p : placements) {
    if (p.is_partial()) {
      p = Replicate();
      partial = true;
    }
  }
  // Partial values are summed (or max'ed, ...) first: a checkpoint holds full values.
  if (partial) dtensor = dtensor.redistribute(placements);
  const DeviceMesh& mesh = dtensor.device_mesh();
  saved.chunks = write_chunks(saved.global_shape, mesh.mesh_shape(), placements);
  for (WriteChunk& chunk : saved.chunks) chunk.mesh_rank = mesh.mesh_ranks()[chunk.mesh_rank];
  saved.local = dtensor.local_tensor();
  return saved;
}

nlohmann::ordered_json index_of(const std::vector<SavedTensor>& tensors) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::object();
  for (const SavedTensor& t : tensors) {
    nlohmann::ordered_json chunks = nlohmann::ordered_json::array();
    for (const WriteChunk& c : t.chunks) {
      chunks.push_back({{"file", rank_file_name(c.mesh_rank)},
                        {"offsets", c.box.offsets},
                        {"sizes", c.box.sizes}});
    }
    entries[t.name] = {{"dtype", safetensors_dtype(t.dtype)},
                       {"shape", t.global_shape},
                       {"chunks", std::move(chunks)}};
  }
  return {{"format", kFormat}, {"version", kVersion}, {"tensors", std::move(entries)}};
}

/// Every rank must save the same tensors: compare a hash of the index (names,
/// dtypes, shapes, layouts) across the world, so that a disagreement is an
/// error on every rank instead of a checkpoint with holes.
void check_same_index(World& world, const std::string& index_text) {
  const auto hash = static_cast<int64_t>(std::hash<std::string>{}(index_text));
  at::Tensor mine = at::full({1}, hash, at::TensorOptions().dtype(at::kLong).device(world.device()));
  const at::Tensor all = collectives::all_gather_world(mine, world).cpu();
  std::vector<int64_t> differing;
  for (int64_t r = 0; r < world.size(); ++r) {
    if (all[r].item<int64_t>() != all[0].item<int64_t>()) differing.push_back(r);
  }
  TORCH_CHECK(differing.empty(), "checkpoint::save on rank ", world.rank(), ": ranks ",
              c10::IntArrayRef(differing),
              " save other tensors than rank 0 (names, dtypes, global shapes or placements "
              "differ); every rank must call save with the same state in the same order. "
              "This rank's index: ",
              index_text.substr(0, 2000));
}

// Note [Crash-consistent saves]
// A save is all or nothing. Every rank writes its file into a staging
// directory beside the target (".<name>.saving", cleared by rank 0 first),
// each file fsync'ed before it is renamed into place. A barrier then means
// every rank's file is durable; only after it does rank 0 write the index
// (durably), fsync the staging directory, and commit: one rename when the
// target does not exist, else one renameat2(RENAME_EXCHANGE) that swaps the
// new directory in, after which the old one is removed. So a rank that dies
// (or throws) before the commit leaves the target as it was (the previous
// checkpoint, or nothing) and the staging directory as garbage the next save
// clears; a death after it leaves the new checkpoint, complete. load never
// looks at staging directories, and step directories (save_step) keep
// PyTorch's readers, which read every *.safetensors file of a directory,
// from mixing saves. The barriers fail every rank when one dies: the fake
// world fails the whole world, Gloo and NCCL time out naming the collective.

// The target directory as an absolute path without a trailing slash, and its staging sibling.
struct SaveDirs {
  std::filesystem::path target;
  std::filesystem::path staging;
};

SaveDirs save_dirs(const std::string& dir) {
  namespace fs = std::filesystem;
  TORCH_CHECK(!dir.empty(), "checkpoint::save: the directory is empty; give the checkpoint's path");
  fs::path target = fs::absolute(fs::path(dir)).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();  // "ckpt/" -> "ckpt"
  TORCH_CHECK(target.has_parent_path() && target != target.root_path(), "checkpoint::save: ", dir,
              " cannot be a checkpoint directory (it needs a parent to stage the save in)");
  return {target, target.parent_path() / ("." + target.filename().string() + ".saving")};
}

// A save replaces its whole directory: only an absent or empty one, or an
// earlier checkpoint, may be replaced (never a directory of other files).
// Every rank checks (the file system is shared), so all throw alike.
void check_replaceable(const std::filesystem::path& target, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::exists(target, error)) return;
  TORCH_CHECK(fs::is_directory(target, error), "checkpoint::save: ", dir,
              " exists and is not a directory; give a directory path for the checkpoint");
  if (fs::exists(target / kIndexFile, error) || fs::is_empty(target, error)) return;
  TORCH_CHECK(false, "checkpoint::save: ", dir, " exists and holds no checkpoint (no ", kIndexFile,
              "); a save replaces its whole directory, so give a new or empty directory, or an "
              "earlier checkpoint's");
}

// The index of a directory of safetensors files without ours: PyTorch DCP's
// Hugging Face layout (each file's DCP_SHARDING_INFO gives its blocks'
// offsets) or plain Hugging Face weights (whole tensors, one file or several).
// See Note [PyTorch DCP's Hugging Face layout].
nlohmann::ordered_json index_of_safetensors_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& item : std::filesystem::directory_iterator(dir)) {
    const std::string name = item.path().filename().string();
    if (item.is_regular_file() && name.size() > 12 && name.substr(name.size() - 12) == ".safetensors") {
      files.push_back(name);
    }
  }
  std::sort(files.begin(), files.end());
  nlohmann::ordered_json entries = nlohmann::ordered_json::object();
  for (const std::string& name : files) {
    const SafetensorsFile file(dir + "/" + name);
    nlohmann::json offsets = nlohmann::json::object();
    if (auto info = file.metadata().find(kDcpShardingInfoKey); info != file.metadata().end()) {
      try {
        offsets = nlohmann::json::parse(info->second);
      } catch (const nlohmann::json::exception& e) {
        TORCH_CHECK(false, "checkpoint::load: ", dir, "/", name, "'s ", kDcpShardingInfoKey,
                    " is not valid JSON: ", e.what());
      }
    }
    for (const auto& [tensor, entry] : file.entries()) {
      std::vector<int64_t> at(entry.shape.size(), 0);
      if (offsets.contains(tensor)) at = offsets[tensor].at("saved_offsets").get<std::vector<int64_t>>();
      TORCH_CHECK(at.size() == entry.shape.size(), "checkpoint::load: ", dir, "/", name, " holds \"", tensor,
                  "\" as ", shape_text(entry.shape), " at offsets ", shape_text(at),
                  ": one offset per dim expected");
      nlohmann::ordered_json& t = entries[tensor];
      if (t.is_null()) {
        t = {{"dtype", safetensors_dtype(entry.dtype)},
             {"shape", std::vector<int64_t>(at.size(), 0)},
             {"chunks", nlohmann::ordered_json::array()}};
      }
      // The global shape is where the blocks end, as PyTorch's reader computes it.
      std::vector<int64_t> shape = t["shape"].get<std::vector<int64_t>>();
      for (size_t d = 0; d < shape.size(); ++d) shape[d] = std::max(shape[d], at[d] + entry.shape[d]);
      t["shape"] = shape;
      t["chunks"].push_back({{"file", name}, {"offsets", at}, {"sizes", entry.shape}});
    }
  }
  return {{"format", kFormat}, {"version", kVersion}, {"tensors", std::move(entries)}};
}

// Ordered: error messages list the tensors in the order they were saved.
nlohmann::ordered_json read_index(const std::string& dir) {
  const std::string path = dir + "/" + kIndexFile;
  std::ifstream in(path);
  if (!in && std::filesystem::is_directory(dir)) {
    nlohmann::ordered_json index = index_of_safetensors_files(dir);
    if (!index["tensors"].empty()) return index;
  }
  TORCH_CHECK(in, "checkpoint::load: no checkpoint index at ", path,
              " and no safetensors files in ", dir,
              " (save writes them; is this the directory given to save?)");
  nlohmann::ordered_json index;
  try {
    index = nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    TORCH_CHECK(false, "checkpoint::load: ", path, " is not valid JSON: ", e.what());
  }
  TORCH_CHECK(index.value("format", "") == kFormat && index.value("version", 0) == kVersion,
              "checkpoint::load: ", path, " is not a ", kFormat, " version ", kVersion, " index");
  return index;
}

/// The block of the global tensor this rank's `tensor` holds, and whether it
/// must be zero instead (a Partial(sum) mesh dim off its first rank).
struct Target {
  Box box;
  bool zero = false;
  at::Tensor local;
};

Target target_of(const at::Tensor& tensor) {
  if (!is_dtensor(tensor)) {
    return {Box{std::vector<int64_t>(tensor.dim(), 0), tensor.sizes().vec()}, false, tensor};
  }
  DTensor dtensor(tensor);
  const DeviceMesh& mesh = dtensor.device_mesh();
  const std::vector<int64_t>& coordinate = mesh.get_coordinate();
  Target target;
  ShardLayout layout = local_shape_and_offset(tensor.sizes().vec(), mesh.mesh_shape(),
                                              dtensor.placements(), coordinate);
  target.box = Box{std::move(layout.global_offset), std::move(layout.local_shape)};
  for (size_t d = 0; d < dtensor.placements().size(); ++d) {
    const Placement& p = dtensor.placements()[d];
    if (p.is_partial() && p.reduce_op() == ReduceOp::kSum && coordinate[d] != 0) target.zero = true;
  }
  target.local = dtensor.local_tensor();
  return target;
}

at::Tensor narrow_to(at::Tensor t, const Box& whole, const Box& part) {
  for (size_t d = 0; d < part.sizes.size(); ++d) {
    t = t.narrow(static_cast<int64_t>(d), part.offsets[d] - whole.offsets[d], part.sizes[d]);
  }
  return t;
}

// Fills `tensor` (state's `name`) from the checkpoint's tensor `saved_name`.
void load_one(const std::string& name, const std::string& saved_name, const at::Tensor& tensor,
              const nlohmann::ordered_json& entry, const std::string& dir,
              std::map<std::string, std::unique_ptr<SafetensorsFile>>& files, LoadStats& stats) {
  const auto shape = entry.at("shape").get<std::vector<int64_t>>();
  TORCH_CHECK(tensor.sizes().vec() == shape, "checkpoint::load: tensor \"", name,
              "\" has global shape ", tensor.sizes(), " but the checkpoint holds ",
              shape_text(shape), "; load into a tensor of the saved shape");
  Target target = target_of(tensor);
  if (target.zero) {
    target.local.zero_();
    return;
  }
  int64_t covered = 0;
  for (const auto& chunk : entry.at("chunks")) {
    const Box saved{chunk.at("offsets").get<std::vector<int64_t>>(),
                    chunk.at("sizes").get<std::vector<int64_t>>()};
    std::optional<Box> overlap = intersect(target.box, saved);
    if (!overlap || overlap->numel() == 0) continue;
    const std::string path = dir + "/" + chunk.at("file").get<std::string>();
    auto& file = files[path];
    if (!file) {
      file = std::make_unique<SafetensorsFile>(path);
      ++stats.files_opened;
    }
    stats.bytes_read += file->verify(saved_name);
    at::Tensor block = file->tensor(saved_name);
    TORCH_CHECK(block.sizes().vec() == saved.sizes, "checkpoint::load: ", path, " holds \"",
                saved_name, "\" as ", block.sizes(), " but the index says ", shape_text(saved.sizes));
    // A view of the mapping: the copy reads only the overlapping elements' pages.
    narrow_to(target.local, target.box, *overlap).copy_(narrow_to(block, saved, *overlap));
    covered += overlap->numel();
    stats.bytes_read += overlap->numel() * static_cast<int64_t>(block.element_size());
  }
  TORCH_CHECK(covered == target.box.numel(), "checkpoint::load: the checkpoint's blocks of \"",
              name, "\" cover ", covered, " of the ", target.box.numel(),
              " elements this rank needs (offsets ", shape_text(target.box.offsets), ", sizes ",
              shape_text(target.box.sizes), "); the checkpoint is incomplete");
}

}  // namespace

std::string rank_file_name(int64_t global_rank) {
  char name[64];
  std::snprintf(name, sizeof(name), "rank-%05lld.safetensors", static_cast<long long>(global_rank));
  return name;
}

StateDict module_state(const torch::nn::Module& module) {
  StateDict state;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    state.emplace_back(item.key(), item.value());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/true)) {
    state.emplace_back(item.key(), item.value());
  }
  return state;
}

const char* save_phase_name(SavePhase phase) {
  switch (phase) {
    case SavePhase::kStarted:
      return "started";
    case SavePhase::kFileWritten:
      return "file_written";
    case SavePhase::kCommitting:
      return "committing";
    case SavePhase::kCommitted:
      return "committed";
  }
  return "unknown";
}

void save(const StateDict& state, const std::string& dir, const SaveOptions& options) {
  World& world = require_current_world("checkpoint::save");
  const auto reached = [&](SavePhase phase) {
    if (options.on_phase) options.on_phase(phase);
  };
  torch::NoGradGuard no_grad;
  std::vector<SavedTensor> tensors;
  for (const auto& [name, tensor] : state) tensors.push_back(describe_for_save(name, tensor));
  const std::string index_text = index_of(tensors).dump(1);
  check_same_index(world, index_text);
  const SaveDirs dirs = save_dirs(dir);  // See Note [Crash-consistent saves]
  check_replaceable(dirs.target, dir);
  if (world.rank() == 0) {
    std::filesystem::remove_all(dirs.staging);  // an earlier save that did not finish
    std::filesystem::create_directories(dirs.staging);
  }
  collectives::barrier(world);
  reached(SavePhase::kStarted);

  std::vector<std::pair<std::string, at::Tensor>> mine;
  nlohmann::ordered_json sharding_info = nlohmann::ordered_json::object();  // Note [PyTorch DCP's Hugging Face layout]
  for (const SavedTensor& t : tensors) {
    for (const WriteChunk& chunk : t.chunks) {
      if (chunk.mesh_rank != world.rank()) continue;
      mine.emplace_back(t.name, t.local);
      sharding_info[t.name] = {{"saved_offsets", chunk.box.offsets}};
    }
  }
  write_safetensors((dirs.staging / rank_file_name(world.rank())).string(), mine,
                    {{"format", "pt"},
                     {"writer", kFormat},
                     {kDcpShardingInfoKey, sharding_info.dump()},
                     {kDcpVersionKey, kDcpVersion}});
  reached(SavePhase::kFileWritten);
  collectives::barrier(world);  // every rank's file is durable

  reached(SavePhase::kCommitting);
  if (world.rank() == 0) {
    write_file_durably((dirs.staging / kIndexFile).string(), index_text + "\n");
    sync_directory(dirs.staging.string());
    commit_directory(dirs.staging.string(), dirs.target.string());
  }
  collectives::barrier(world);  // nobody returns (and perhaps loads) before the commit
  reached(SavePhase::kCommitted);
}

void save(const torch::nn::Module& module, const std::string& dir, const SaveOptions& options) {
  save(module_state(module), dir, options);
}

std::string step_dir(const std::string& root, int64_t step) {
  TORCH_CHECK(step >= 0, "checkpoint: step ", step, " is negative; steps count from 0");
  char name[32];
  std::snprintf(name, sizeof(name), "step-%08lld", static_cast<long long>(step));
  return (std::filesystem::path(root) / name).string();
}

std::vector<std::pair<int64_t, std::string>> list_steps(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<std::pair<int64_t, std::string>> steps;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) != 0 || !entry.is_directory()) continue;
    char* end = nullptr;
    const long long step = std::strtoll(name.c_str() + 5, &end, 10);
    if (end == name.c_str() + 5 || *end != '\0' || step < 0) continue;
    steps.emplace_back(step, entry.path().string());
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::optional<std::string> latest_step(const std::string& root) {
  std::vector<std::pair<int64_t, std::string>> steps = list_steps(root);
  if (steps.empty()) return std::nullopt;
  return steps.back().second;
}

void save_step(const StateDict& state, const std::string& root, int64_t step, int keep_last,
               const SaveOptions& options) {
  TORCH_CHECK(keep_last >= 0, "checkpoint::save_step: keep_last is ", keep_last,
              "; give 0 to keep every step or the number of newest steps to keep");
  save(state, step_dir(root, step), options);
  World& world = require_current_world("checkpoint::save_step");
  if (world.rank() == 0 && keep_last > 0) {
    std::vector<std::pair<int64_t, std::string>> steps = list_steps(root);
    const size_t keep = static_cast<size_t>(keep_last);
    for (size_t i = 0; i + keep < steps.size(); ++i) std::filesystem::remove_all(steps[i].second);
  }
  collectives::barrier(world);  // the old steps are gone on return
}

LoadStats load(const StateDict& state, const std::string& dir, const LoadOptions& options) {
  const nlohmann::ordered_json index = read_index(dir);
  const nlohmann::ordered_json& entries = index.at("tensors");
  torch::NoGradGuard no_grad;
  std::map<std::string, std::unique_ptr<SafetensorsFile>> files;
  LoadStats stats;
  for (const auto& [name, tensor] : state) {
    TORCH_CHECK(tensor.defined() && !tensor.is_meta(), "checkpoint::load: tensor \"", name,
                "\" is undefined or a meta tensor; load needs storage to fill");
    const std::string saved_name = options.checkpoint_name ? options.checkpoint_name(name) : name;
    auto entry = entries.find(saved_name);
    if (entry == entries.end()) {
      std::string names;
      for (const auto& item : entries.items()) names += (names.empty() ? "" : ", ") + item.key();
      TORCH_CHECK(false, "checkpoint::load: ", dir, " has no tensor \"", saved_name, "\"",
                  saved_name == name ? std::string() : " (the checkpoint name of \"" + name + "\")",
                  " (it has: ", names.substr(0, 2000), ")");
    }
    load_one(name, saved_name, tensor, *entry, dir, files, stats);
  }
  return stats;
}

LoadStats load(torch::nn::Module& module, const std::string& dir, const LoadOptions& options) {
  return load(module_state(module), dir, options);
}

}  // namespace dtensor::checkpoint
