#include "kforge/store/artifact_store.h"

#include <fmt/format.h>

#include <system_error>

#include "kforge/core/files.h"
#include "kforge/core/hash.h"

namespace kforge::store {

namespace fs = std::filesystem;

Result<ArtifactStore> ArtifactStore::Open(const fs::path& root) {
  KFORGE_RETURN_IF_ERROR(MakeDirs(root));
  return ArtifactStore(root);
}

bool ArtifactStore::IsValidHash(std::string_view hash) {
  if (hash.size() != 32) return false;
  for (char c : hash) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

fs::path ArtifactStore::Path(const std::string& hash) const {
  if (!IsValidHash(hash)) return {};
  return root_ / hash.substr(0, 2) / hash;
}

Result<std::string> ArtifactStore::Put(std::string_view bytes) {
  std::string hash = ContentHash(bytes);
  fs::path path = Path(hash);
  std::lock_guard<std::mutex> lock(write_mu_);
  // A blob of the right size under its own hash is the same blob (writes are atomic); anything
  // else there (a file truncated by a power loss) is replaced.
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (!ec && size == bytes.size()) return hash;
  KFORGE_RETURN_IF_ERROR(WriteFile(path, bytes));
  return hash;
}

Result<std::string> ArtifactStore::Get(const std::string& hash) const {
  if (!IsValidHash(hash)) {
    return InvalidArgument(
        fmt::format("'{}' is not an artifact hash (expected 32 lowercase hex characters)", hash));
  }
  fs::path path = Path(hash);
  auto bytes = ReadFile(path);
  if (!bytes) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      return NotFound(fmt::format("artifact {} not found at {}", hash, path.string()));
    }
    return bytes;
  }
  if (std::string actual = ContentHash(*bytes); actual != hash) {
    return IoError(fmt::format("artifact {} is damaged: its content hashes to {}", path.string(),
                               actual));
  }
  return bytes;
}

}  // namespace kforge::store
