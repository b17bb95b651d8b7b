// A content-addressed folder of blobs: sources, prompts, responses, logs, profiles.
//
// A blob is named by its content hash (kforge::ContentHash, 32 hex characters) and lives at
// <root>/<first two hex characters>/<hash>. Writes are atomic (temporary file, then rename), so a
// reader never sees half a blob, and a blob that is already there is not written again. Reads
// check the content against the name, so a damaged file is reported, never returned.
//
// Thread-safety: all methods may be called from any thread. Several processes may share one
// folder: the temporary file of a write is named after the writing process, and a rename over an
// identical blob is harmless. Within one process, use one ArtifactStore per folder.
#ifndef KFORGE_STORE_ARTIFACT_STORE_H_
#define KFORGE_STORE_ARTIFACT_STORE_H_

#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>

#include "kforge/core/error.h"

namespace kforge::store {

class ArtifactStore {
 public:
  // Creates `root` if needed.
  static Result<ArtifactStore> Open(const std::filesystem::path& root);

  ArtifactStore(ArtifactStore&& other) noexcept : root_(std::move(other.root_)) {}
  ArtifactStore(const ArtifactStore&) = delete;
  ArtifactStore& operator=(const ArtifactStore&) = delete;

  // Stores `bytes` unless a blob with the same content is already there; returns its hash.
  Result<std::string> Put(std::string_view bytes);

  // The content of blob `hash`: kInvalidArgument for a malformed hash, kNotFound when absent,
  // kIo when the file cannot be read or its content no longer matches its hash.
  Result<std::string> Get(const std::string& hash) const;

  // Where blob `hash` lives (whether or not it exists); empty for a malformed hash.
  std::filesystem::path Path(const std::string& hash) const;

  const std::filesystem::path& root() const { return root_; }

  // True for 32 lowercase hex characters, the form ContentHash returns.
  static bool IsValidHash(std::string_view hash);

 private:
  explicit ArtifactStore(std::filesystem::path root) : root_(std::move(root)) {}

  std::filesystem::path root_;
  // Serialises writes: WriteFile's temporary name is per process, so two threads of one process
  // writing the same blob would share it.
  std::mutex write_mu_;
};

}  // namespace kforge::store

#endif  // KFORGE_STORE_ARTIFACT_STORE_H_
