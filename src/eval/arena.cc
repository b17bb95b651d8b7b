#include "kforge/eval/arena.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <cstring>

namespace kforge {

Result<std::unique_ptr<Arena>> Arena::Create(std::uint64_t bytes) {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t size = std::max<std::uint64_t>(page, (bytes + page - 1) / page * page);
  const int fd = ::memfd_create("kforge-arena", MFD_CLOEXEC);
  if (fd < 0) return IoError(fmt::format("memfd_create failed: {}", std::strerror(errno)));
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int e = errno;
    ::close(fd);
    return IoError(fmt::format("cannot size the arena to {} bytes: {}", size, std::strerror(e)));
  }
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int e = errno;
    ::close(fd);
    return IoError(fmt::format("cannot map the arena ({} bytes): {}", size, std::strerror(e)));
  }
  return std::unique_ptr<Arena>(new Arena(fd, static_cast<std::byte*>(base), size));
}

Status Arena::Grow(std::uint64_t bytes) {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t size = (bytes + page - 1) / page * page;
  if (size <= size_) return Ok();
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    return IoError(fmt::format("cannot grow the arena to {} bytes: {}", size, std::strerror(errno)));
  }
  void* base = ::mremap(base_, size_, size, MREMAP_MAYMOVE);
  if (base == MAP_FAILED) {
    return IoError(fmt::format("cannot map the arena ({} bytes): {}", size, std::strerror(errno)));
  }
  base_ = static_cast<std::byte*>(base);
  size_ = size;
  return Ok();
}

Arena::~Arena() {
  ::munmap(base_, size_);
  ::close(fd_);
}

Result<ArenaRegion> Arena::Allocate(std::uint64_t bytes) {
  const std::uint64_t offset = (used_ + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  if (offset > size_ || bytes > size_ - offset) {
    return MakeError(ErrorCode::kResourceExhausted,
                     fmt::format("the arena of {} bytes has no room for {} more bytes ({} in use)",
                                 size_, bytes, used_));
  }
  used_ = offset + bytes;
  return ArenaRegion{offset, bytes};
}

std::span<std::byte> Arena::Bytes(const ArenaRegion& region) {
  assert(region.offset <= size_ && region.bytes <= size_ - region.offset);
  return {base_ + region.offset, static_cast<std::size_t>(region.bytes)};
}

std::span<const std::byte> Arena::Bytes(const ArenaRegion& region) const {
  assert(region.offset <= size_ && region.bytes <= size_ - region.offset);
  return {base_ + region.offset, static_cast<std::size_t>(region.bytes)};
}

}  // namespace kforge
