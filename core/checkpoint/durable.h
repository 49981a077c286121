// Files and directories that survive a crash: a file reaches the disk before
// it is renamed into place, and a whole directory is committed in one atomic
// step (Note [Crash-consistent saves] in checkpoint.cc). Plus the CRC-32 that
// checkpoints store per block.
//   write_file_durably("/ckpt/.step.saving/index.json", text);
//   commit_directory("/ckpt/.step.saving", "/ckpt/step");   // all or nothing
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace dtensor::checkpoint {

/// Writes a file durably: `write(fd)` fills `path` + ".tmp" (opened for
/// writing, truncated), which is then fsync'ed, renamed to `path`, and the
/// directory fsync'ed. A crash leaves the old `path` or the new, never a
/// part. Throws c10::Error naming the path and errno's text on failure.
void write_file_durably(const std::string& path, const std::function<void(int fd)>& write);
/// The same for bytes held in memory.
void write_file_durably(const std::string& path, const std::string& bytes);

/// Writes all of `size` bytes at `data` to `fd` (retrying short writes);
/// throws c10::Error naming `path` on failure.
void write_all(int fd, const void* data, size_t size, const std::string& path);

/// fsync of a directory: makes the names created, renamed or removed in it
/// durable. Throws c10::Error naming the directory on failure.
void sync_directory(const std::string& dir);

/// Puts the directory `from` at `to` in one atomic step and makes it durable:
/// a rename when nothing is at `to`; otherwise renameat2(RENAME_EXCHANGE)
/// swaps the two and the old directory (now at `from`) is removed, so `to`
/// always holds a complete directory, the old or the new. Precondition:
/// `from` and `to` are on one file system (siblings). Throws c10::Error
/// naming both paths on failure.
void commit_directory(const std::string& from, const std::string& to);

/// CRC-32 of `size` bytes (IEEE 802.3: the value of zlib.crc32 and Python's
/// binascii.crc32), continuing from `crc`.
/// Example: crc32("123456789", 9) == 0xCBF43926.
uint32_t crc32(const void* data, size_t size, uint32_t crc = 0);

}  // namespace dtensor::checkpoint
