#include "kforge/llm/cassette.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "base64.h"
#include "kforge/core/files.h"
#include "kforge/core/hash.h"
#include "kforge/core/log.h"
#include "kforge/llm/fingerprint.h"
#include "kforge/llm/redact.h"

namespace kforge::llm {
namespace {

using nlohmann::json;

std::string UtcNow() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
}

bool IsValidUtf8(std::string_view s) {
  try {
    (void)json(std::string(s)).dump();
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

// A byte string as a JSON field pair: text when it is valid UTF-8, else base64.
void PutBytes(json& object, const char* key, const std::string& bytes) {
  if (IsValidUtf8(bytes)) {
    object[key] = bytes;
  } else {
    object[key] = Base64Encode(bytes);
    object[std::string(key) + "_encoding"] = "base64";
  }
}

std::optional<std::string> GetBytes(const json& object, const char* key) {
  const std::string value = object.at(key).get<std::string>();
  const auto encoding = object.find(std::string(key) + "_encoding");
  if (encoding == object.end()) return value;
  if (*encoding != "base64") return std::nullopt;
  return Base64Decode(value);
}

std::string AnsweredBy(const ProviderInfo& info, const Response& response) {
  if (info.provider == "inbox") {
    return fmt::format(
        "whoever answered the inbox {} (a person, or an agent acting as the model; "
        "the cassette header's note says who)",
        info.endpoint);
  }
  return fmt::format("{} model {} at {}", info.provider,
                     response.model.empty() ? info.model : response.model, info.endpoint);
}

class FileCassetteWriter : public CassetteWriter {
 public:
  FileCassetteWriter(std::FILE* file, std::string path, int next_index = 0)
      : file_(file), path_(std::move(path)), next_index_(next_index) {}
  ~FileCassetteWriter() override { std::fclose(file_); }

  Status Append(const ProviderInfo& info, const Request& request,
                const Response& response) override {
    // Requests never hold a key (answers that echo one are redacted by the providers); should one
    // get in anyway (a key pasted into a task), it does not reach the file.
    const std::string canonical =
        RedactRegisteredSecrets(CanonicalRequestJson(request, info.model_id));
    json entry;
    entry["fingerprint"] = ContentHash(canonical);
    entry["model_id"] = info.model_id;
    entry["provider"] = info.provider;
    entry["model"] = info.model;
    entry["answered_by"] = Redact(AnsweredBy(info, response));
    entry["recorded_at"] = UtcNow();
    entry["request"] = json::parse(canonical);
    json r;
    PutBytes(r, "text", RedactRegisteredSecrets(response.text));
    r["finish_reason"] = response.finish_reason;
    r["model"] = response.model;
    r["usage"] = {{"input_tokens", response.usage.input_tokens},
                  {"output_tokens", response.usage.output_tokens},
                  {"estimated", response.usage.estimated}};
    r["cost_usd"] = response.cost_usd;
    r["latency_ms"] = response.latency.count();
    r["attempts"] = response.attempts;
    PutBytes(r, "raw_body", RedactRegisteredSecrets(response.raw_body));
    entry["response"] = std::move(r);

    std::lock_guard lock(mu_);
    entry["index"] = next_index_;
    const std::string line = entry.dump() + "\n";
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
      return IoError(fmt::format("cannot append to cassette {}", path_));
    }
    ++next_index_;
    return Ok();
  }

 private:
  std::mutex mu_;
  std::FILE* const file_;  // writes guarded by mu_
  const std::string path_;
  int next_index_ = 0;  // guarded by mu_
};

class RecordingProvider : public Provider {
 public:
  RecordingProvider(std::shared_ptr<Provider> inner, std::shared_ptr<CassetteWriter> writer)
      : inner_(std::move(inner)), writer_(std::move(writer)), info_(inner_->Info()) {}

  Result<Response> Complete(const Request& request, const CallOptions& options) override {
    auto response = inner_->Complete(request, options);
    if (!response) return response;
    KFORGE_RETURN_IF_ERROR(writer_->Append(info_, request, *response));
    return response;
  }

  ProviderInfo Info() const override { return info_; }

 private:
  const std::shared_ptr<Provider> inner_;
  const std::shared_ptr<CassetteWriter> writer_;
  const ProviderInfo info_;
};

// The request with every number replaced by '#': two requests that differ only in measured
// figures (timings, errors, token counts in a prompt) have the same shape.
std::string MaskNumbers(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) == 0) {
      out.push_back(text[i++]);
      continue;
    }
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) != 0 ||
                               text[i] == '.' || text[i] == 'e' || text[i] == 'E' ||
                               ((text[i] == '+' || text[i] == '-') && i > 0 &&
                                (text[i - 1] == 'e' || text[i - 1] == 'E')))) {
      ++i;
    }
    // A duration's unit goes with its number: 1.02 ms and 988 us are the same kind of figure.
    for (std::string_view unit : {" ns", " us", " ms", " s"}) {
      const std::size_t end = i + unit.size();
      if (text.substr(i, unit.size()) == unit &&
          (end == text.size() || std::isalpha(static_cast<unsigned char>(text[end])) == 0)) {
        i = end;
        break;
      }
    }
    out.push_back('#');
  }
  return out;
}

// How a timing run stopped ("stopped by noise", "... timeout", "... min") is a measurement too.
std::string MaskMeasurementWords(std::string text) {
  static constexpr std::string_view kStopped = "stopped by ";
  for (std::size_t at = text.find(kStopped); at != std::string::npos;
       at = text.find(kStopped, at + 1)) {
    const std::size_t word = at + kStopped.size();
    std::size_t end = word;
    while (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end])) != 0) ++end;
    const std::string_view w(text.data() + word, end - word);
    if (w == "noise" || w == "timeout" || w == "min") text.replace(word, end - word, "#");
  }
  return text;
}

// An absolute path names the machine as much as the file ("/work/a/task.py" here is
// "/tmp/ci/task.py" there): only its last component is kept.
std::string MaskPaths(const std::string& text) {
  auto path_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '/' || c == '.' || c == '_' ||
           c == '-' || c == '+';
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const bool token_start = i == 0 || std::isspace(static_cast<unsigned char>(text[i - 1])) != 0 ||
                             text[i - 1] == '(' || text[i - 1] == '"' || text[i - 1] == '\'' ||
                             text[i - 1] == '`';
    if (text[i] == '/' && token_start) {
      std::size_t end = i;
      int slashes = 0;
      while (end < text.size() && path_char(text[end])) slashes += text[end++] == '/' ? 1 : 0;
      if (slashes >= 2) {
        const std::string path = text.substr(i, end - i);
        out += path.substr(path.rfind('/') + 1);
        i = end;
        continue;
      }
    }
    out.push_back(text[i++]);
  }
  return out;
}

// Masks what a replay on another machine may change in the text of a canonical request's
// messages (not in its options, such as the temperature, which must still match exactly): the
// caller's measured text first (whole measured sections, words included), then paths, how a
// timing stopped, and numbers.
void MaskMessageText(json& node, const MeasuredTextMask& measured) {
  if (node.is_string()) {
    std::string text = node.get<std::string>();
    if (measured) text = measured(text);
    node = MaskNumbers(MaskMeasurementWords(MaskPaths(text)));
  } else if (node.is_structured()) {
    for (auto& child : node) MaskMessageText(child, measured);
  }
}

// The canonical request as kNumbersMayDiffer compares it.
std::string ShapeCanonical(const std::string& canonical_request, const MeasuredTextMask& measured) {
  json request = json::parse(canonical_request, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) return canonical_request;
  if (request.contains("messages")) MaskMessageText(request["messages"], measured);
  return request.dump();
}

struct Entry {
  int index = 0;
  int line = 0;
  std::string fingerprint;
  std::string shape_canonical;  // ShapeCanonical(canonical_request), with kNumbersMayDiffer
  std::string model_id;
  std::string canonical_request;
  Response response;
  bool served = false;
};

class LoadedCassette : public Cassette {
 public:
  LoadedCassette(std::string path, std::vector<Entry> entries, ReplayMatch match,
                 MeasuredTextMask measured)
      : path_(std::move(path)),
        match_(match),
        measured_(std::move(measured)),
        entries_(std::move(entries)) {
    if (match_ != ReplayMatch::kNumbersMayDiffer) return;
    for (auto& entry : entries_) {
      entry.shape_canonical = ShapeCanonical(entry.canonical_request, measured_);
    }
  }

  Result<Response> Serve(const std::string& model_id, const Request& request) override {
    const std::string canonical = CanonicalRequestJson(request, model_id);
    const std::string fingerprint = ContentHash(canonical);
    std::lock_guard lock(mu_);
    const int call = ++calls_[model_id];
    Entry* first_unserved = nullptr;
    int recorded_for_model = 0;
    for (auto& entry : entries_) {
      if (entry.model_id != model_id) continue;
      ++recorded_for_model;
      if (entry.served) continue;
      if (first_unserved == nullptr) first_unserved = &entry;
      if (entry.fingerprint == fingerprint) {
        entry.served = true;
        return entry.response;
      }
    }
    // No exact match: when allowed, the first unserved entry with the same shape, i.e. the same
    // request but for numbers and measured text in its messages (a replay on another machine
    // measures differently).
    const bool by_shape = match_ == ReplayMatch::kNumbersMayDiffer;
    const std::string shape_canonical = by_shape ? ShapeCanonical(canonical, measured_) : "";
    for (auto& entry : entries_) {
      if (!by_shape || entry.model_id != model_id || entry.served) continue;
      if (entry.shape_canonical == shape_canonical) {
        entry.served = true;
        ++served_by_shape_;
        spdlog::info(
            "replayed request {} to model '{}' from cassette entry #{} by its shape: only "
            "numbers and measured text differ from the recording",
            call, model_id, entry.index);
        return entry.response;
      }
    }
    if (first_unserved == nullptr) {
      return NotFound(fmt::format(
          "replay diverged at request {} to model '{}': the cassette {} recorded only {} "
          "requests for this model, all already served",
          call, model_id, path_, recorded_for_model));
    }
    // With kNumbersMayDiffer the first exact difference is usually a number, which is allowed
    // to differ: the masked texts show the difference that made the match fail.
    return NotFound(fmt::format(
        "replay diverged at request {} to model '{}': no recorded request matches it; the first "
        "unserved recorded request is #{} (line {} of {}), and {}{}",
        call, model_id, first_unserved->index, first_unserved->line, path_,
        by_shape ? DescribeCanonicalDifference(first_unserved->shape_canonical, shape_canonical)
                 : DescribeCanonicalDifference(first_unserved->canonical_request, canonical),
        by_shape ? " (compared with numbers, paths and measured text masked as '#')"
                 : "; a replay on another machine (other timings, profiles, paths) needs "
                   "--replay-match numbers"));
  }

  int ServedByShape() const override {
    std::lock_guard lock(mu_);
    return served_by_shape_;
  }

  int Unserved() const override {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& entry : entries_) n += entry.served ? 0 : 1;
    return n;
  }

 private:
  const std::string path_;
  const ReplayMatch match_;
  const MeasuredTextMask measured_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;        // served flags guarded by mu_
  std::map<std::string, int> calls_;  // guarded by mu_: calls so far per model id
  int served_by_shape_ = 0;           // guarded by mu_
};

class ReplayProvider : public Provider {
 public:
  ReplayProvider(std::shared_ptr<Cassette> cassette, std::string model_id)
      : cassette_(std::move(cassette)), model_id_(std::move(model_id)) {}

  Result<Response> Complete(const Request& request, const CallOptions& options) override {
    if (options.cancel.IsCancelled()) {
      return MakeError(ErrorCode::kCancelled, "call cancelled before it was replayed");
    }
    return cassette_->Serve(model_id_, request);
  }

  ProviderInfo Info() const override { return ProviderInfo{"replay", model_id_, "", "cassette"}; }

 private:
  const std::shared_ptr<Cassette> cassette_;
  const std::string model_id_;
};

Result<Entry> ParseEntry(const json& j, const std::string& where) {
  Entry entry;
  try {
    entry.index = j.at("index").get<int>();
    entry.fingerprint = j.at("fingerprint").get<std::string>();
    entry.model_id = j.at("model_id").get<std::string>();
    entry.canonical_request = j.at("request").dump();
    const json& r = j.at("response");
    auto text = GetBytes(r, "text");
    auto raw = GetBytes(r, "raw_body");
    if (!text || !raw) return ParseError(fmt::format("{}: bad base64 in the response", where));
    entry.response.text = std::move(*text);
    entry.response.raw_body = std::move(*raw);
    entry.response.finish_reason = r.at("finish_reason").get<std::string>();
    entry.response.model = r.at("model").get<std::string>();
    const json& usage = r.at("usage");
    entry.response.usage.input_tokens = usage.at("input_tokens").get<std::int64_t>();
    entry.response.usage.output_tokens = usage.at("output_tokens").get<std::int64_t>();
    entry.response.usage.estimated = usage.value("estimated", false);
    entry.response.cost_usd = r.value("cost_usd", 0.0);
    entry.response.latency = std::chrono::milliseconds(r.value("latency_ms", std::int64_t{0}));
    entry.response.attempts = r.value("attempts", 1);
  } catch (const json::exception& e) {
    return ParseError(fmt::format("{}: {}", where, e.what()));
  }
  if (ContentHash(entry.canonical_request) != entry.fingerprint) {
    return ParseError(fmt::format(
        "{}: the fingerprint does not match the recorded request (was the file edited?)", where));
  }
  return entry;
}

}  // namespace

Result<std::shared_ptr<CassetteWriter>> CassetteWriter::Create(const std::filesystem::path& path,
                                                               const std::string& note) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return IoError(fmt::format("cannot create cassette {}", path.string()));
  json header_json{{"kforge_cassette", kCassetteVersion}, {"created_at", UtcNow()}};
  if (!note.empty()) header_json["note"] = note;
  const std::string header = header_json.dump() + "\n";
  if (std::fwrite(header.data(), 1, header.size(), file) != header.size() ||
      std::fflush(file) != 0) {
    std::fclose(file);
    return IoError(fmt::format("cannot write cassette {}", path.string()));
  }
  return std::make_shared<FileCassetteWriter>(file, path.string());
}

Result<std::shared_ptr<CassetteWriter>> CassetteWriter::Open(const std::filesystem::path& path,
                                                             const std::string& note) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0) {
    return Create(path, note);
  }
  auto read = ReadFile(path);
  if (!read) return std::unexpected(read.error());
  const std::string& text = *read;
  // A process killed in the middle of a write leaves a last line without its newline: cut it.
  std::size_t keep = text.size();
  if (!text.empty() && text.back() != '\n') {
    const std::size_t last_newline = text.rfind('\n');
    keep = last_newline == std::string::npos ? 0 : last_newline + 1;
    spdlog::warn("cassette {}: its last line is incomplete (a process was killed while "
                 "writing it); it is dropped",
                 path.string());
  }
  const std::size_t header_end = text.find('\n');
  const json header = json::parse(text.substr(0, header_end), nullptr, false);
  if (keep == 0 || !header.is_object() || header.value("kforge_cassette", 0) != kCassetteVersion) {
    return ParseError(fmt::format("{}:1: not a cassette of version {}: record into another file",
                                  path.string(), kCassetteVersion));
  }
  int entries = 0;
  for (std::size_t i = header_end + 1; i < keep; i = text.find('\n', i) + 1) {
    if (text[i] != '\n') ++entries;
  }
  std::filesystem::resize_file(path, keep, ec);
  if (ec) return IoError(fmt::format("cannot repair cassette {}: {}", path.string(), ec.message()));
  std::FILE* file = std::fopen(path.c_str(), "ab");
  if (file == nullptr) return IoError(fmt::format("cannot append to cassette {}", path.string()));
  return std::make_shared<FileCassetteWriter>(file, path.string(), entries);
}

std::unique_ptr<Provider> NewRecordingProvider(std::shared_ptr<Provider> inner,
                                               std::shared_ptr<CassetteWriter> writer) {
  return std::make_unique<RecordingProvider>(std::move(inner), std::move(writer));
}

Result<std::shared_ptr<Cassette>> Cassette::Load(const std::filesystem::path& path,
                                                 ReplayMatch match, MeasuredTextMask measured) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot open cassette {}", path.string()));
  std::vector<Entry> entries;
  std::string line;
  int number = 0;
  bool header_seen = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    const std::string where = fmt::format("{}:{}", path.string(), number);
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return ParseError(fmt::format("{}: not a JSON object", where));
    if (!header_seen) {
      const auto version = j.find("kforge_cassette");
      if (version == j.end() || !version->is_number_integer()) {
        return ParseError(fmt::format(
            "{}: not a KForge cassette (the first line has no kforge_cassette)", where));
      }
      if (version->get<int>() != kCassetteVersion) {
        return ParseError(
            fmt::format("{}: cassette version {} is not supported (this KForge "
                        "reads version {})",
                        where, version->get<int>(), kCassetteVersion));
      }
      header_seen = true;
      continue;
    }
    auto entry = ParseEntry(j, where);
    if (!entry) return std::unexpected(entry.error());
    entry->line = number;
    entries.push_back(std::move(*entry));
  }
  if (!header_seen) return ParseError(fmt::format("{}: empty cassette", path.string()));
  return std::make_shared<LoadedCassette>(path.string(), std::move(entries), match,
                                          std::move(measured));
}

std::unique_ptr<Provider> NewReplayProvider(std::shared_ptr<Cassette> cassette,
                                            std::string model_id) {
  return std::make_unique<ReplayProvider>(std::move(cassette), std::move(model_id));
}

}  // namespace kforge::llm
