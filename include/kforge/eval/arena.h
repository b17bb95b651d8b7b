// The arena: one shared-memory file (memfd) that the judge creates and maps, and a harness maps
// at fd 4 (runner/HARNESS.md, "Transport"). Bulk data crosses between the two processes only
// here; commands name byte regions of it. The parent carves regions with a bump allocator
// (64-byte aligned offsets) and resets it between commands that need new ones.
//
// What the child writes is never trusted as it stands: the parent copies what it judges out of
// the arena while the child is frozen (eval/freezer.h), into memory the child cannot reach.
//
// Thread-safety: one owner; not for concurrent use.
#ifndef KFORGE_EVAL_ARENA_H_
#define KFORGE_EVAL_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "kforge/core/error.h"

namespace kforge {

// A byte range of the arena, as commands name it ({"offset": N, "bytes": M}).
struct ArenaRegion {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  bool operator==(const ArenaRegion&) const = default;
};

inline constexpr std::uint64_t kArenaAlignment = 64;

class Arena {
 public:
  // A fresh memfd of `bytes` (rounded up to a page), mapped read-write here. The descriptor is
  // close-on-exec: the caller passes it to the child explicitly (ProcessSpec::inherit_fds).
  static Result<std::unique_ptr<Arena>> Create(std::uint64_t bytes);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Grows the arena to at least `bytes` (page-rounded; pages cost memory only once touched).
  // Only before a child has mapped it (`hello` carries the size the child maps).
  Status Grow(std::uint64_t bytes);

  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }

  // The next `bytes` (a 64-byte aligned offset); an error when the arena is full (the message
  // names the sizes).
  Result<ArenaRegion> Allocate(std::uint64_t bytes);
  // Forgets every region: the next Allocate starts at offset 0 again.
  void Reset() { used_ = 0; }
  // Forgets the regions allocated after `used()` returned `mark` (a stack discipline: regions
  // that live longer are allocated first).
  void ResetTo(std::uint64_t mark) { used_ = mark < used_ ? mark : used_; }
  std::uint64_t used() const { return used_; }

  // The bytes of a region (it must lie inside the arena).
  std::span<std::byte> Bytes(const ArenaRegion& region);
  std::span<const std::byte> Bytes(const ArenaRegion& region) const;

 private:
  Arena(int fd, std::byte* base, std::uint64_t size) : fd_(fd), base_(base), size_(size) {}

  int fd_;
  std::byte* base_;
  std::uint64_t size_;
  std::uint64_t used_ = 0;
};

}  // namespace kforge

#endif  // KFORGE_EVAL_ARENA_H_
