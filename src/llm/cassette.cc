#include "kforge/llm/cassette.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "base64.h"
#include "kforge/core/hash.h"
#include "kforge/llm/fingerprint.h"
#include "kforge/llm/redact.h"

namespace kforge::llm {
namespace {

using nlohmann::json;

std::string UtcNow() { return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr))); }

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
  if (info.provider == "inbox") return fmt::format("a person, through the inbox {}", info.endpoint);
  return fmt::format("{} model {} at {}", info.provider,
                     response.model.empty() ? info.model : response.model, info.endpoint);
}

class FileCassetteWriter : public CassetteWriter {
 public:
  FileCassetteWriter(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  ~FileCassetteWriter() override { std::fclose(file_); }

  Status Append(const ProviderInfo& info, const Request& request,
                const Response& response) override {
    const std::string canonical = CanonicalRequestJson(request, info.model_id);
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
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
        std::fflush(file_) != 0) {
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

struct Entry {
  int index = 0;
  int line = 0;
  std::string fingerprint;
  std::string model_id;
  std::string canonical_request;
  Response response;
  bool served = false;
};

class LoadedCassette : public Cassette {
 public:
  LoadedCassette(std::string path, std::vector<Entry> entries)
      : path_(std::move(path)), entries_(std::move(entries)) {}

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
    if (first_unserved == nullptr) {
      return NotFound(fmt::format(
          "replay diverged at request {} to model '{}': the cassette {} recorded only {} "
          "requests for this model, all already served",
          call, model_id, path_, recorded_for_model));
    }
    return NotFound(fmt::format(
        "replay diverged at request {} to model '{}': no recorded request matches it; the first "
        "unserved recorded request is #{} (line {} of {}), and {}",
        call, model_id, first_unserved->index, first_unserved->line, path_,
        DescribeCanonicalDifference(first_unserved->canonical_request, canonical)));
  }

  int Unserved() const override {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& entry : entries_) n += entry.served ? 0 : 1;
    return n;
  }

 private:
  const std::string path_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;    // served flags guarded by mu_
  std::map<std::string, int> calls_;  // guarded by mu_: calls so far per model id
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

Result<std::shared_ptr<CassetteWriter>> CassetteWriter::Create(const std::filesystem::path& path) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return IoError(fmt::format("cannot create cassette {}", path.string()));
  const std::string header =
      json{{"kforge_cassette", kCassetteVersion}, {"created_at", UtcNow()}}.dump() + "\n";
  if (std::fwrite(header.data(), 1, header.size(), file) != header.size() ||
      std::fflush(file) != 0) {
    std::fclose(file);
    return IoError(fmt::format("cannot write cassette {}", path.string()));
  }
  return std::make_shared<FileCassetteWriter>(file, path.string());
}

std::unique_ptr<Provider> NewRecordingProvider(std::shared_ptr<Provider> inner,
                                               std::shared_ptr<CassetteWriter> writer) {
  return std::make_unique<RecordingProvider>(std::move(inner), std::move(writer));
}

Result<std::shared_ptr<Cassette>> Cassette::Load(const std::filesystem::path& path) {
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
        return ParseError(
            fmt::format("{}: not a KForge cassette (the first line has no kforge_cassette)", where));
      }
      if (version->get<int>() != kCassetteVersion) {
        return ParseError(fmt::format("{}: cassette version {} is not supported (this KForge "
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
  return std::make_shared<LoadedCassette>(path.string(), std::move(entries));
}

std::unique_ptr<Provider> NewReplayProvider(std::shared_ptr<Cassette> cassette,
                                            std::string model_id) {
  return std::make_unique<ReplayProvider>(std::move(cassette), std::move(model_id));
}

}  // namespace kforge::llm
