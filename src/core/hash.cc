#include "kforge/core/hash.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstdint>

namespace kforge {
namespace {

std::string ToHex(XXH128_hash_t h) { return fmt::format("{:016x}{:016x}", h.high64, h.low64); }

}  // namespace

std::string ContentHash(std::string_view data) {
  return ToHex(XXH3_128bits(data.data(), data.size()));
}

Hasher::Hasher() : state_(XXH3_createState()) {
  XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_));
}

Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

Hasher& Hasher::Add(std::string_view part) {
  auto* s = static_cast<XXH3_state_t*>(state_);
  const std::uint64_t size = part.size();
  XXH3_128bits_update(s, &size, sizeof(size));
  XXH3_128bits_update(s, part.data(), part.size());
  return *this;
}

std::string Hasher::Hex() const {
  return ToHex(XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_)));
}

}  // namespace kforge
