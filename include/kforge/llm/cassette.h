// Cassettes: record a provider's answers into a JSONL file, and replay them byte-exactly.
//
// The format (version 1) is documented in docs/llm.md: a header line, then one line per answered
// request with its fingerprint, canonical request, response (raw body byte-exact) and metadata.
// Failed calls are not recorded. One cassette may hold several models; entries are keyed by model
// id and fingerprint.
#ifndef KFORGE_LLM_CASSETTE_H_
#define KFORGE_LLM_CASSETTE_H_

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kforge/core/error.h"
#include "kforge/llm/provider.h"

namespace kforge::llm {

inline constexpr int kCassetteVersion = 1;

// Appends entries to a cassette file. Thread-safe; each entry is one write of one line, flushed.
class CassetteWriter {
 public:
  // Creates (truncates) `path` and writes the header line, with `note` (who answered, how, when)
  // when it is not empty.
  static Result<std::shared_ptr<CassetteWriter>> Create(const std::filesystem::path& path,
                                                        const std::string& note = "");
  // Continues the cassette at `path` (a resumed run): its entries are kept and new ones follow
  // with the next indices, so that after any number of resumes it holds the whole conversation.
  // A last line cut short by a killed process is dropped. A missing or empty file is created as
  // by Create(). Errors: a file that is not a cassette of this version (kParse), I/O (kIo).
  static Result<std::shared_ptr<CassetteWriter>> Open(const std::filesystem::path& path,
                                                      const std::string& note = "");
  virtual ~CassetteWriter() = default;
  virtual Status Append(const ProviderInfo& info, const Request& request,
                        const Response& response) = 0;
};

// Wraps `inner`: every successful answer is appended to `writer`, then returned unchanged.
// A failed append fails the call (a recording with holes would not replay).
std::unique_ptr<Provider> NewRecordingProvider(std::shared_ptr<Provider> inner,
                                               std::shared_ptr<CassetteWriter> writer);

// How a replayed request must match a recorded one.
enum class ReplayMatch {
  kExact,  // byte-identical canonical request (the default)
  // After an exact-match attempt, what differs between machines may differ inside the messages:
  // numbers (with their duration units), how a timing stopped, absolute paths (the last
  // component must match), and whatever the loader's MeasuredTextMask blanks.
  kNumbersMayDiffer,
};

// Blanks the machine-measured parts of one message text (the prompt layer knows which parts
// those are: kforge::MaskMeasuredText). Used only with ReplayMatch::kNumbersMayDiffer.
using MeasuredTextMask = std::function<std::string(std::string_view)>;

// A loaded cassette, shared by the replay providers of one run. Thread-safe.
class Cassette {
 public:
  // Errors name the file and line: unreadable file, bad JSON, missing field, unknown version.
  static Result<std::shared_ptr<Cassette>> Load(const std::filesystem::path& path,
                                                ReplayMatch match = ReplayMatch::kExact,
                                                MeasuredTextMask measured = {});
  virtual ~Cassette() = default;
  // The recorded answer to `request` for `model_id`. Identical requests are served in recorded
  // order. With kNumbersMayDiffer and no exact match, the first unserved request of that model
  // that differs only in numbers (and measured text) inside its messages is served: prompts
  // carry measured timings, profiles and errors, which differ on every machine, while the
  // conversation does not. Options
  // (temperature, max tokens, ...) always match exactly. When nothing matches:
  // kNotFound "replay diverged at request N ..." naming the first
  // unserved recorded request of that model and the first field that differs (with
  // kNumbersMayDiffer, the first difference that remains after masking: the one that matters).
  virtual Result<Response> Serve(const std::string& model_id, const Request& request) = 0;
  // Number of requests served by shape (numbers differed from the recording).
  virtual int ServedByShape() const = 0;
  // Number of recorded entries not served yet.
  virtual int Unserved() const = 0;
};

// Answers from `cassette` as model `model_id`; never calls the network.
std::unique_ptr<Provider> NewReplayProvider(std::shared_ptr<Cassette> cassette,
                                            std::string model_id);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_CASSETTE_H_
