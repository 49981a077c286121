#include "core/checkpoint/safetensors.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/checkpoint/durable.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this writer copies host bytes as they are"
#endif

namespace dtensor::checkpoint {
namespace {

const std::vector<std::pair<c10::ScalarType, const char*>>& dtype_codes() {
  static const std::vector<std::pair<c10::ScalarType, const char*>> codes = {
      {c10::ScalarType::Bool, "BOOL"},   {c10::ScalarType::Byte, "U8"},
      {c10::ScalarType::Char, "I8"},     {c10::ScalarType::Short, "I16"},
      {c10::ScalarType::Int, "I32"},     {c10::ScalarType::Long, "I64"},
      {c10::ScalarType::Half, "F16"},    {c10::ScalarType::BFloat16, "BF16"},
      {c10::ScalarType::Float, "F32"},   {c10::ScalarType::Double, "F64"},
  };
  return codes;
}

}  // namespace

std::string safetensors_dtype(c10::ScalarType dtype) {
  for (const auto& [type, code] : dtype_codes()) {
    if (type == dtype) return code;
  }
  TORCH_CHECK(false, "checkpoint: safetensors has no code for dtype ", dtype,
              "; convert the tensor (e.g. complex to a real view) before saving");
}

c10::ScalarType scalar_type_of(const std::string& code) {
  for (const auto& [type, name] : dtype_codes()) {
    if (code == name) return type;
  }
  TORCH_CHECK(false, "checkpoint: unknown safetensors dtype \"", code, "\"");
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Widest elements first, as the Rust crate orders them: every tensor then
  // starts aligned to its element size (the data section starts 8-aligned).
  std::vector<std::pair<std::string, at::Tensor>> ordered = tensors;
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.second.element_size() > b.second.element_size();
  });
  nlohmann::ordered_json entries = nlohmann::ordered_json::object();
  nlohmann::ordered_json checksums = nlohmann::ordered_json::object();
  std::vector<at::Tensor> data;
  int64_t offset = 0;
  for (const auto& [name, tensor] : ordered) {
    TORCH_CHECK(!entries.contains(name) && name != "__metadata__", "checkpoint: tensor name \"",
                name, "\" given twice (or reserved) for ", path);
    at::Tensor cpu = tensor.detach().to(at::kCPU).contiguous();
    const int64_t bytes = static_cast<int64_t>(cpu.nbytes());
    entries[name] = {{"dtype", safetensors_dtype(cpu.scalar_type())},
                     {"shape", cpu.sizes().vec()},
                     {"data_offsets", {offset, offset + bytes}}};
    checksums[name] = crc32(cpu.data_ptr(), cpu.nbytes());
    offset += bytes;
    data.push_back(std::move(cpu));
  }
  // Note [Block checksums]: each tensor's CRC-32 goes in __metadata__ (as a
  // JSON text: safetensors metadata values are strings); load verifies the
  // blocks it reads (SafetensorsFile::verify).
  std::map<std::string, std::string> all_metadata = metadata;
  if (!data.empty()) all_metadata[kChecksumKey] = checksums.dump();
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!all_metadata.empty()) header["__metadata__"] = all_metadata;
  for (auto& [name, entry] : entries.items()) header[name] = std::move(entry);
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-aligned
  const uint64_t length = text.size();
  write_file_durably(path, [&](int fd) {
    write_all(fd, &length, sizeof(length), path);
    write_all(fd, text.data(), text.size(), path);
    for (const at::Tensor& t : data) write_all(fd, t.data_ptr(), t.nbytes(), path);
  });
}

struct SafetensorsFile::Mapping {
  void* data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data != nullptr) munmap(data, size);
  }
};

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  TORCH_CHECK(fd >= 0, "checkpoint: cannot open ", path, ": ", std::strerror(errno));
  struct stat info {};
  const bool stat_ok = ::fstat(fd, &info) == 0;
  mapping_ = std::make_shared<Mapping>();
  mapping_->size = stat_ok ? static_cast<size_t>(info.st_size) : 0;
  if (mapping_->size > 0) {
    void* data = ::mmap(nullptr, mapping_->size, PROT_READ, MAP_PRIVATE, fd, 0);
    mapping_->data = data == MAP_FAILED ? nullptr : data;
  }
  ::close(fd);
  TORCH_CHECK(stat_ok && mapping_->data != nullptr, "checkpoint: cannot map ", path,
              " (size ", mapping_->size, ")");

  const auto* bytes = static_cast<const char*>(mapping_->data);
  uint64_t length = 0;
  TORCH_CHECK(mapping_->size >= sizeof(length), "checkpoint: ", path,
              " is not a safetensors file (", mapping_->size, " bytes)");
  std::memcpy(&length, bytes, sizeof(length));
  TORCH_CHECK(length <= mapping_->size - sizeof(length), "checkpoint: ", path,
              ": header length ", length, " exceeds the file size ", mapping_->size);
  data_start_ = static_cast<int64_t>(sizeof(length) + length);
  const int64_t data_size = static_cast<int64_t>(mapping_->size) - data_start_;

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes + sizeof(length), bytes + data_start_);
    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") {
        metadata_ = value.get<std::map<std::string, std::string>>();
        continue;
      }
      Entry entry;
      entry.dtype = scalar_type_of(value.at("dtype").get<std::string>());
      entry.shape = value.at("shape").get<std::vector<int64_t>>();
      const auto offsets = value.at("data_offsets").get<std::vector<int64_t>>();
      TORCH_CHECK(offsets.size() == 2 && 0 <= offsets[0] && offsets[0] <= offsets[1] &&
                      offsets[1] <= data_size,
                  "checkpoint: ", path, ": tensor \"", name, "\" has byte range outside the ",
                  data_size, "-byte data section");
      entry.begin = offsets[0];
      entry.end = offsets[1];
      int64_t numel = 1;
      for (int64_t s : entry.shape) numel *= s;
      TORCH_CHECK(numel * static_cast<int64_t>(c10::elementSize(entry.dtype)) ==
                      entry.end - entry.begin,
                  "checkpoint: ", path, ": tensor \"", name, "\" has ", entry.end - entry.begin,
                  " bytes for shape ", c10::IntArrayRef(entry.shape), " of ",
                  value.at("dtype").get<std::string>());
      entries_.emplace(name, std::move(entry));
    }
  } catch (const nlohmann::json::exception& e) {
    TORCH_CHECK(false, "checkpoint: ", path, ": malformed safetensors header: ", e.what());
  }
}

at::Tensor SafetensorsFile::tensor(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::string names;
    for (const auto& [present, entry] : entries_) names += (names.empty() ? "" : ", ") + present;
    TORCH_CHECK(false, "checkpoint: ", path_, " has no tensor \"", name, "\" (it has: ", names,
                ")");
  }
  const Entry& entry = it->second;
  auto* data = static_cast<char*>(mapping_->data) + data_start_ + entry.begin;
  const auto options = at::TensorOptions().dtype(entry.dtype);
  if (reinterpret_cast<uintptr_t>(data) % c10::elementSize(entry.dtype) != 0) {
    // A file from another writer may leave a tensor unaligned: copy it out.
    return at::from_blob(data, entry.shape, options).clone();
  }
  std::shared_ptr<Mapping> keep_alive = mapping_;
  return at::from_blob(
      data, entry.shape, [keep_alive](void*) mutable { keep_alive.reset(); }, options);
}

int64_t SafetensorsFile::verify(const std::string& name) const {
  if (verified_.count(name) != 0) return 0;
  auto stored = metadata_.find(kChecksumKey);
  if (stored == metadata_.end()) return 0;  // another writer's file: nothing to check against
  std::optional<uint32_t> expected;
  try {
    const nlohmann::json sums = nlohmann::json::parse(stored->second);
    if (sums.contains(name)) expected = sums.at(name).get<uint32_t>();
  } catch (const nlohmann::json::exception& e) {
    TORCH_CHECK(false, "checkpoint: ", path_, ": its __metadata__ \"", kChecksumKey,
                "\" is not a JSON object of checksums (", e.what(), "); the file is corrupt");
  }
  TORCH_CHECK(expected.has_value(), "checkpoint: ", path_, " stores no checksum of tensor \"",
              name, "\" (its header and metadata disagree); the file is corrupt");
  const Entry& entry = entries_.at(name);
  const auto* data = static_cast<const char*>(mapping_->data) + data_start_ + entry.begin;
  const uint32_t actual = crc32(data, static_cast<size_t>(entry.end - entry.begin));
  TORCH_CHECK(actual == *expected, "checkpoint: ", path_, ": the data of tensor \"", name,
              "\" fails its checksum (CRC-32 ", actual, ", saved ", *expected,
              "): the file is corrupt; load an earlier checkpoint or save again");
  verified_.insert(name);
  return entry.end - entry.begin;
}

}  // namespace dtensor::checkpoint
