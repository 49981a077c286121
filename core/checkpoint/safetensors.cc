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
#include <fstream>
#include <nlohmann/json.hpp>

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
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  // Widest elements first, as the Rust crate orders them: every tensor then
  // starts aligned to its element size (the data section starts 8-aligned).
  std::vector<std::pair<std::string, at::Tensor>> ordered = tensors;
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.second.element_size() > b.second.element_size();
  });
  std::vector<at::Tensor> data;
  int64_t offset = 0;
  for (const auto& [name, tensor] : ordered) {
    TORCH_CHECK(!header.contains(name), "checkpoint: tensor name \"", name,
                "\" given twice for ", path);
    at::Tensor cpu = tensor.detach().to(at::kCPU).contiguous();
    const int64_t bytes = static_cast<int64_t>(cpu.nbytes());
    header[name] = {{"dtype", safetensors_dtype(cpu.scalar_type())},
                    {"shape", cpu.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(std::move(cpu));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-aligned
  const uint64_t length = text.size();

  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    TORCH_CHECK(out, "checkpoint: cannot create ", temporary, ": ", std::strerror(errno));
    out.write(reinterpret_cast<const char*>(&length), sizeof(length));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const at::Tensor& t : data) {
      out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
    }
    out.flush();
    TORCH_CHECK(out, "checkpoint: writing ", temporary, " failed: ", std::strerror(errno));
  }
  TORCH_CHECK(std::rename(temporary.c_str(), path.c_str()) == 0, "checkpoint: cannot rename ",
              temporary, " to ", path, ": ", std::strerror(errno));
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

}  // namespace dtensor::checkpoint
