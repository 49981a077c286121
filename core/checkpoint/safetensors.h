// The safetensors file format (https://github.com/huggingface/safetensors):
// an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the raw row-major data. Python's
// `safetensors.safe_open` and the Rust crate read what this writes.
//   write_safetensors("/ckpt/rank-00000.safetensors", {{"w", t}}, {{"format", "pt"}});
//   SafetensorsFile f("/ckpt/rank-00000.safetensors");
//   at::Tensor w = f.tensor("w");   // a view of the memory-mapped file
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace dtensor::checkpoint {

/// "F32" for Float, ...; throws c10::Error naming the dtype when safetensors
/// has no code for it (complex, quantized types).
std::string safetensors_dtype(c10::ScalarType dtype);
/// Inverse of safetensors_dtype; throws for an unknown code.
c10::ScalarType scalar_type_of(const std::string& code);

/// The __metadata__ key of the per-tensor CRC-32s write_safetensors stores
/// (a JSON object text, {"w": 3735928559}; Note [Block checksums]).
inline constexpr const char* kChecksumKey = "dtensor_crc32";

/// Writes `tensors` (any device or layout: copied to contiguous CPU memory)
/// with `metadata` and each tensor's CRC-32 (kChecksumKey) as the header's
/// "__metadata__", durably (durable.h: a temporary file, fsync'ed, renamed
/// over `path`), so that a reader never sees half a file. Names must be
/// distinct. Throws c10::Error naming the path on I/O failure.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

/// A safetensors file opened read-only and memory-mapped: tensors are views of
/// the mapping (which lives as long as the file object or any tensor from it),
/// so reading part of a tensor touches only those pages.
class SafetensorsFile {
 public:
  /// Throws c10::Error naming the path when it cannot be opened or its header
  /// is malformed (bad length, bad JSON, a byte range outside the file).
  explicit SafetensorsFile(const std::string& path);

  struct Entry {
    c10::ScalarType dtype;
    std::vector<int64_t> shape;
    int64_t begin = 0;  // byte range in the data section
    int64_t end = 0;
  };

  const std::string& path() const { return path_; }
  const std::map<std::string, Entry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  /// A read-only CPU view of tensor `name`; throws listing the names present
  /// when there is no such tensor. Do not write into it.
  at::Tensor tensor(const std::string& name) const;
  /// Checks tensor `name`'s bytes against the CRC-32 the writer stored
  /// (kChecksumKey); throws c10::Error naming the file and the tensor when
  /// they differ. Reads the whole tensor once (later calls are free); files
  /// without checksums (other writers') pass. Returns the bytes it read (0
  /// when it read none). Precondition: contains(name).
  int64_t verify(const std::string& name) const;

 private:
  struct Mapping;
  std::string path_;
  std::shared_ptr<Mapping> mapping_;
  int64_t data_start_ = 0;
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> metadata_;
  mutable std::set<std::string> verified_;
};

}  // namespace dtensor::checkpoint
