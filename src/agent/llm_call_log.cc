#include "kforge/agent/llm_call_log.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

#include "kforge/core/hash.h"
#include "kforge/llm/fingerprint.h"

namespace kforge::agent {
namespace {

store::LlmCallStatus StatusOf(const Error& error) {
  switch (error.code) {
    case ErrorCode::kTimeout:
      return store::LlmCallStatus::kTimeout;
    case ErrorCode::kCancelled:
      return store::LlmCallStatus::kCancelled;
    default:
      return store::LlmCallStatus::kError;
  }
}

}  // namespace

LlmCallLog::LlmCallLog(store::RunStore& store, std::string run_id,
                       std::shared_ptr<llm::Budget> budget)
    : store_(store), run_id_(std::move(run_id)), budget_(std::move(budget)) {}

std::string LlmCallLog::NextKey(const std::string& fingerprint, std::string_view stream) {
  std::string counter_key = fingerprint;
  counter_key += '/';
  counter_key += stream;
  int repeat = 0;
  {
    std::lock_guard lock(mu_);
    repeat = repeats_[counter_key]++;
  }
  Hasher hasher;
  hasher.Add(fingerprint).Add(stream).Add(fmt::format("{}", repeat));
  return hasher.Hex();
}

Result<LoggedAnswer> LlmCallLog::Call(std::string_view agent, llm::Provider& provider,
                                      const llm::Request& request, std::string_view stream,
                                      const llm::CallOptions& options) {
  const llm::ProviderInfo info = provider.Info();
  const std::string key = NextKey(llm::RequestFingerprint(request, info.model_id), stream);

  // Resume: a finished call with this key is answered from the store.
  auto found = store_.FindLlmCall(run_id_, key);
  if (!found) return std::unexpected(found.error());
  if (found->has_value() && (*found)->response_hash.has_value()) {
    const store::LlmCallRecord& record = **found;
    auto text = store_.GetArtifact(*record.response_hash);
    if (text) {
      LoggedAnswer answer;
      answer.response.text = std::move(*text);
      answer.response.model = record.model_id;
      answer.response.usage.input_tokens = record.input_tokens;
      answer.response.usage.output_tokens = record.output_tokens;
      answer.response.cost_usd = record.cost_usd;
      answer.response.latency =
          std::chrono::milliseconds(static_cast<std::int64_t>(record.latency_s * 1000));
      answer.llm_call_id = record.id;
      answer.reused = true;
      if (budget_) budget_->Record(answer.response.usage, record.cost_usd);
      spdlog::info("llm {}: reused finished call {} ({} tokens)", agent, record.id,
                   answer.response.usage.Total());
      return answer;
    }
    spdlog::warn("llm {}: stored answer of call {} is unreadable ({}); calling again", agent,
                 record.id, text.error().message);
  }

  store::LlmCallRecord record;
  record.run_id = run_id_;
  record.agent = std::string(agent);
  record.model_id = info.model_id;
  record.request_fingerprint = key;
  auto prompt_hash = store_.PutArtifact(llm::CanonicalRequestJson(request, info.model_id));
  if (!prompt_hash) return std::unexpected(prompt_hash.error());
  record.prompt_hash = *prompt_hash;

  const auto start = std::chrono::steady_clock::now();
  Result<llm::Response> response = provider.Complete(request, options);
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (!response) {
    record.status = StatusOf(response.error());
    record.latency_s = elapsed_s;
    if (auto added = store_.AddLlmCall(record); !added) {
      spdlog::warn("llm {}: the failed call could not be stored: {}", agent, added.error().message);
    }
    spdlog::info("llm {}: call failed: {}", agent, response.error().message);
    return std::unexpected(response.error());
  }

  auto response_hash = store_.PutArtifact(response->text);
  if (!response_hash) return std::unexpected(response_hash.error());
  record.response_hash = *response_hash;
  record.input_tokens = response->usage.input_tokens;
  record.output_tokens = response->usage.output_tokens;
  record.cost_usd = response->cost_usd;
  record.latency_s = response->latency.count() > 0
                         ? std::chrono::duration<double>(response->latency).count()
                         : elapsed_s;
  record.status = store::LlmCallStatus::kOk;
  auto added = store_.AddLlmCall(record);
  if (!added) return std::unexpected(added.error());
  spdlog::info("llm {}: call {} answered ({} tokens, ${:.4f}, {:.1f} s)", agent, added->id,
               response->usage.Total(), response->cost_usd, record.latency_s);
  LoggedAnswer answer;
  answer.response = std::move(*response);
  answer.llm_call_id = added->id;
  return answer;
}

}  // namespace kforge::agent
