// Durable files, atomic directory commits and CRC-32. See durable.h.
#include "core/checkpoint/durable.h"

#include <c10/util/Exception.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace dtensor::checkpoint {
namespace {

namespace fs = std::filesystem;

std::string parent_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// Closes a descriptor when the scope ends (also when a check throws).
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

void write_all(int fd, const void* data, size_t size, const std::string& path) {
  const char* at = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, at, size);
    if (written < 0 && errno == EINTR) continue;
    TORCH_CHECK(written > 0, "checkpoint: writing ", path, " failed: ", std::strerror(errno));
    at += written;
    size -= static_cast<size_t>(written);
  }
}

void write_file_durably(const std::string& path, const std::function<void(int fd)>& write) {
  const std::string temporary = path + ".tmp";
  {
    Descriptor file{::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    TORCH_CHECK(file.fd >= 0, "checkpoint: cannot create ", temporary, ": ", std::strerror(errno));
    write(file.fd);
    TORCH_CHECK(::fsync(file.fd) == 0, "checkpoint: fsync of ", temporary,
                " failed: ", std::strerror(errno));
    const int closed = ::close(file.fd);
    file.fd = -1;
    TORCH_CHECK(closed == 0, "checkpoint: closing ", temporary, " failed: ", std::strerror(errno));
  }
  TORCH_CHECK(std::rename(temporary.c_str(), path.c_str()) == 0, "checkpoint: cannot rename ",
              temporary, " to ", path, ": ", std::strerror(errno));
  sync_directory(parent_of(path));
}

void write_file_durably(const std::string& path, const std::string& bytes) {
  write_file_durably(path, [&](int fd) { write_all(fd, bytes.data(), bytes.size(), path); });
}

void sync_directory(const std::string& dir) {
  Descriptor d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  TORCH_CHECK(d.fd >= 0, "checkpoint: cannot open directory ", dir, ": ", std::strerror(errno));
  TORCH_CHECK(::fsync(d.fd) == 0, "checkpoint: fsync of directory ", dir,
              " failed: ", std::strerror(errno));
}

void commit_directory(const std::string& from, const std::string& to) {
  std::error_code exists_error;
  if (!fs::exists(to, exists_error)) {
    TORCH_CHECK(std::rename(from.c_str(), to.c_str()) == 0, "checkpoint: cannot rename ", from,
                " to ", to, ": ", std::strerror(errno));
  } else {
    // One step: `to` is the old directory until the exchange, the new one after.
    TORCH_CHECK(::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0,
                "checkpoint: cannot exchange ", from, " and ", to,
                " (renameat2: ", std::strerror(errno),
                "); the file system must support RENAME_EXCHANGE (ext4, "
                "xfs, btrfs, tmpfs do)");
    sync_directory(parent_of(to));
    std::error_code removed;
    fs::remove_all(from, removed);  // the old checkpoint; a leftover is removed by the next save
  }
  sync_directory(parent_of(to));
}

uint32_t crc32(const void* data, size_t size, uint32_t crc) {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> table{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    return table;
  }();
  const auto* bytes = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = kTable[(crc ^ bytes[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

}  // namespace dtensor::checkpoint
