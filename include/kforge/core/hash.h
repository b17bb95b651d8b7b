// Content hashing for the compile cache and the artifact store (XXH3, 128 bits, hex).
#ifndef KFORGE_CORE_HASH_H_
#define KFORGE_CORE_HASH_H_

#include <string>
#include <string_view>

namespace kforge {

// Hex string (32 characters) of the XXH3-128 hash of `data`.
std::string ContentHash(std::string_view data);

// Incremental hasher: Add() parts in a fixed order, then Hex(). Parts are length-prefixed, so
// ("ab","c") and ("a","bc") hash differently.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  Hasher& Add(std::string_view part);
  std::string Hex() const;

 private:
  void* state_;  // XXH3_state_t*, kept opaque so that xxhash.h stays out of this header
};

}  // namespace kforge

#endif  // KFORGE_CORE_HASH_H_
