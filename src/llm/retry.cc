#include "kforge/llm/retry.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>
#include <random>
#include <thread>

#include "api_error.h"
#include "kforge/llm/rate_limiter.h"
#include "kforge/llm/redact.h"

namespace kforge::llm {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool ContainsOverloaded(std::string_view body) {
  constexpr std::string_view kWord = "overloaded";
  if (body.size() < kWord.size()) return false;
  // Case-insensitive search without copying the whole body.
  for (std::size_t i = 0; i + kWord.size() <= body.size(); ++i) {
    std::size_t k = 0;
    while (k < kWord.size() &&
           std::tolower(static_cast<unsigned char>(body[i + k])) == kWord[k]) {
      ++k;
    }
    if (k == kWord.size()) return true;
  }
  return false;
}

double UniformUnit() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

milliseconds Backoff(const RetryPolicy& policy, int retry_number) {
  const double base = static_cast<double>(policy.initial_backoff.count()) *
                      std::pow(policy.multiplier, retry_number);
  const double capped = std::min(base, static_cast<double>(policy.max_backoff.count()));
  return milliseconds(static_cast<long>(capped / 2 + UniformUnit() * capped / 2));
}

std::string StatusText(int status) {
  switch (status) {
    case 400: return "400 Bad Request";
    case 401: return "401 Unauthorized";
    case 403: return "403 Forbidden";
    case 404: return "404 Not Found";
    case 408: return "408 Request Timeout";
    case 409: return "409 Conflict";
    case 413: return "413 Payload Too Large";
    case 422: return "422 Unprocessable Entity";
    case 429: return "429 Too Many Requests";
    case 500: return "500 Internal Server Error";
    case 502: return "502 Bad Gateway";
    case 503: return "503 Service Unavailable";
    case 504: return "504 Gateway Timeout";
    case 529: return "529 Overloaded";
    default: return std::to_string(status);
  }
}

// The final error for a non-2xx response.
Error HttpError(const HttpResponse& response, const HttpRequest& request,
                const EndpointLabel& label, int attempts, bool gave_up_retrying) {
  const ApiErrorBody api = ParseApiError(response.body);
  const std::string api_text =
      api.type.empty() ? api.message : fmt::format("{}: {}", api.type, api.message);
  const std::string head = fmt::format("model '{}': HTTP {} from {}", label.model_id,
                                       StatusText(response.status), Redact(request.url));
  const std::string key_hint =
      label.api_key_env.empty() ? std::string("the model's API key")
                                : fmt::format("the key in ${}", label.api_key_env);
  const int s = response.status;
  // Gemini answers a bad key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID.
  const bool bad_key = s == 401 || (s == 400 && (response.body.find("API_KEY_INVALID") !=
                                                      std::string::npos ||
                                                  response.body.find("API key not valid") !=
                                                      std::string::npos));
  if (bad_key) {
    return Error{ErrorCode::kPermissionDenied,
                 fmt::format("{}: the API key was refused ({}). Check {}; not retried.", head,
                             api_text, key_hint)};
  }
  if (s == 403) {
    return Error{ErrorCode::kPermissionDenied,
                 fmt::format("{}: access denied ({}). Check that {} may use this model; not "
                             "retried.",
                             head, api_text, key_hint)};
  }
  if (s == 404) {
    return Error{ErrorCode::kNotFound,
                 fmt::format("{}: not found ({}). Check the entry's `model` and `endpoint` in the "
                             "model registry; not retried.",
                             head, api_text)};
  }
  if (s == 429) {
    // Rate limited after every retry: try again later (transient). An exhausted quota: the
    // account may not use the model until its billing changes (permanent).
    return Error{gave_up_retrying ? ErrorCode::kUnavailable : ErrorCode::kPermissionDenied,
                 gave_up_retrying
                     ? fmt::format("{}: rate limited after {} attempts ({}). Lower the entry's "
                                   "requests_per_minute/tokens_per_minute or max_concurrency.",
                                   head, attempts, api_text)
                     : fmt::format("{}: quota exhausted ({}). Check the account's billing and "
                                   "limits; not retried.",
                                   head, api_text)};
  }
  if (s >= 500 || gave_up_retrying) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("{}: server error after {} attempts ({}). Try again later.", head,
                             attempts, api_text)};
  }
  return Error{ErrorCode::kInvalidArgument,
               fmt::format("{}: the request was rejected ({}); not retried.", head, api_text)};
}

}  // namespace

std::optional<milliseconds> ParseRetryAfter(std::string_view value) {
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front())) != 0) {
    value.remove_prefix(1);
  }
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back())) != 0) {
    value.remove_suffix(1);
  }
  if (value.empty()) return std::nullopt;
  double seconds = 0;
  const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec == std::errc() && ptr == value.data() + value.size()) {
    if (seconds < 0 || !std::isfinite(seconds)) return std::nullopt;
    return milliseconds(static_cast<long>(std::ceil(seconds * 1000)));
  }
  // IMF-fixdate, e.g. "Wed, 21 Oct 2015 07:28:00 GMT".
  std::tm tm{};
  const std::string text(value);
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  const std::time_t when = timegm(&tm);
  const std::time_t now = std::time(nullptr);
  return milliseconds(std::max<std::int64_t>(0, static_cast<std::int64_t>(when - now)) * 1000);
}

std::optional<milliseconds> ParseDurationText(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    text.remove_suffix(1);
  }
  if (text.empty()) return std::nullopt;
  double total_ms = 0;
  while (!text.empty()) {
    double number = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc() || number < 0 || !std::isfinite(number)) return std::nullopt;
    text.remove_prefix(static_cast<std::size_t>(ptr - text.data()));
    // Longest unit first: "ms" before "m", "ns"/"us" before "s".
    static constexpr std::pair<std::string_view, double> kUnits[] = {
        {"ms", 1.0},   {"us", 1e-3}, {"\u00b5s", 1e-3}, {"ns", 1e-6},
        {"h", 3.6e6}, {"m", 6e4},   {"s", 1e3}};
    bool matched = false;
    for (const auto& [unit, scale] : kUnits) {
      if (text.substr(0, unit.size()) == unit) {
        total_ms += number * scale;
        text.remove_prefix(unit.size());
        matched = true;
        break;
      }
    }
    if (!matched) return std::nullopt;
  }
  return milliseconds(static_cast<long>(std::ceil(total_ms)));
}

AttemptVerdict ClassifyHttpStatus(const HttpResponse& response) {
  AttemptVerdict verdict;
  const int s = response.status;
  if (s >= 200 && s < 300) return verdict;
  if (s == 429) {
    // An exhausted quota (OpenAI "insufficient_quota") does not come back by waiting.
    verdict.retry = response.body.find("insufficient_quota") == std::string::npos;
  } else if (s == 408 || s == 409 || s >= 500) {
    verdict.retry = true;
  } else if (s != 401 && s != 403 && s != 404) {
    verdict.retry = ContainsOverloaded(response.body);
  }
  auto state = [&verdict](std::optional<milliseconds> wait, std::string_view source) {
    if (!wait || verdict.retry_after) return;
    verdict.retry_after = wait;
    verdict.retry_after_source = std::string(source);
  };
  if (auto ms = response.Header("retry-after-ms"); !ms.empty()) {
    if (auto v = ParseRetryAfter(ms)) state(milliseconds(v->count() / 1000), "retry-after-ms");
  }
  if (auto ra = response.Header("retry-after"); !ra.empty()) {
    state(ParseRetryAfter(ra), "Retry-After");
  }
  if (s == 429 && !verdict.retry_after) {
    // OpenAI: the reset of the limit that ran out (remaining 0), else the later of the two.
    std::optional<milliseconds> chosen;
    std::string chosen_source;
    bool chosen_exhausted = false;
    for (std::string_view which : {"requests", "tokens"}) {
      const auto reset =
          ParseDurationText(response.Header(fmt::format("x-ratelimit-reset-{}", which)));
      if (!reset) continue;
      const bool exhausted =
          response.Header(fmt::format("x-ratelimit-remaining-{}", which)) == "0";
      const bool better = !chosen || (exhausted && !chosen_exhausted) ||
                          (exhausted == chosen_exhausted && *reset > *chosen);
      if (better) {
        chosen = reset;
        chosen_source = fmt::format("x-ratelimit-reset-{}", which);
        chosen_exhausted = exhausted;
      }
    }
    state(chosen, chosen_source);
  }
  if (!verdict.retry_after) {
    // Gemini: google.rpc.RetryInfo in the error's details.
    if (auto delay = RetryInfoDelay(response.body)) {
      state(ParseDurationText(*delay), "RetryInfo.retryDelay");
    }
  }
  return verdict;
}

Result<HttpResponse> SendWithRetry(HttpTransport& transport, const HttpRequest& request,
                                   const RetryPolicy& policy, const CallOptions& options,
                                   const EndpointLabel& label, int* attempts,
                                   const SendOptions& send) {
  const int max_attempts = std::max(1, policy.max_attempts);
  // The attempts run under the nearer of the caller's deadline and the model's call timeout.
  CallOptions bounded = options;
  const bool call_deadline_binds =
      send.call_deadline && (!options.deadline || *send.call_deadline < *options.deadline);
  if (call_deadline_binds) bounded.deadline = send.call_deadline;
  auto past_deadline = [&](std::string what) {
    // Crossing the caller's deadline is the caller's budget; crossing the model's call timeout
    // is the provider being too slow (transient).
    if (call_deadline_binds) {
      return Error{ErrorCode::kTimeout,
                   fmt::format("model '{}': the call timeout of {:g} s (call_timeout_s) {}",
                               label.model_id,
                               static_cast<double>(send.call_timeout.count()) / 1000, what)};
    }
    return Error{ErrorCode::kResourceExhausted,
                 fmt::format("model '{}': the call's deadline {}", label.model_id, what)};
  };
  for (int attempt = 1;; ++attempt) {
    if (attempts != nullptr) *attempts = attempt;
    // Every request on the wire takes a permit, retries included.
    std::optional<RateLimiter::Permit> permit;
    if (send.limiter != nullptr) {
      auto taken = send.limiter->Acquire(send.estimated_tokens, bounded);
      if (!taken) {
        Error error = taken.error();
        if (error.code == ErrorCode::kResourceExhausted) {
          return std::unexpected(past_deadline("would pass before the rate limit lets it start"));
        }
        error.message = fmt::format("model '{}': {}", label.model_id, error.message);
        return std::unexpected(std::move(error));
      }
      permit.emplace(std::move(*taken));
    }
    auto result = transport.Send(request, bounded);
    permit.reset();
    std::optional<milliseconds> wait;
    std::string reason;
    if (result) {
      const AttemptVerdict verdict = ClassifyHttpStatus(*result);
      if (result->status >= 200 && result->status < 300) return result;
      if (!verdict.retry || attempt >= max_attempts) {
        return std::unexpected(
            HttpError(*result, request, label, attempt, verdict.retry && attempt >= max_attempts));
      }
      reason = fmt::format("HTTP {}", result->status);
      if (verdict.retry_after) {
        if (*verdict.retry_after > policy.max_retry_after) {
          return MakeError(
              ErrorCode::kUnavailable,
              fmt::format("model '{}': HTTP {} with {} of {} s, longer than the {} s KForge "
                          "waits; try again later.",
                          label.model_id, result->status, verdict.retry_after_source,
                          (verdict.retry_after->count() + 999) / 1000,
                          policy.max_retry_after.count() / 1000));
        }
        // Honour the server's wait, plus up to 10% jitter so that parallel callers spread out.
        wait = *verdict.retry_after +
               milliseconds(static_cast<long>(UniformUnit() * verdict.retry_after->count() / 10));
        reason += fmt::format(", {} {} ms", verdict.retry_after_source, verdict.retry_after->count());
      }
    } else {
      const Error& failed = result.error();
      const bool retryable = (failed.code == ErrorCode::kUnavailable &&
                              !failed.message.starts_with(kCannotConnect)) ||
                             failed.code == ErrorCode::kTimeout;
      const bool deadline_passed = bounded.deadline && Clock::now() >= *bounded.deadline;
      if (deadline_passed && failed.code == ErrorCode::kTimeout && call_deadline_binds) {
        return std::unexpected(past_deadline(fmt::format("passed ({})", Redact(failed.message))));
      }
      if (!retryable || deadline_passed || attempt >= max_attempts) {
        Error error = std::move(result).error();
        error.message = fmt::format("model '{}': {}", label.model_id, Redact(error.message));
        if (retryable && attempt > 1) error.message += fmt::format(" (after {} attempts)", attempt);
        if (error.message.find(kCannotConnect) != std::string::npos) {
          error.message += "; not retried: is the server running, and is the entry's `endpoint` right?";
        }
        return std::unexpected(std::move(error));
      }
      reason = failed.message;
    }
    if (!wait) wait = Backoff(policy, attempt - 1);
    if (bounded.deadline && Clock::now() + *wait >= *bounded.deadline) {
      return std::unexpected(past_deadline(
          fmt::format("would pass while waiting {} ms to retry ({})", wait->count(), Redact(reason))));
    }
    spdlog::warn("model '{}': {}; retrying in {} ms (attempt {}/{})", label.model_id,
                 Redact(reason), wait->count(), attempt + 1, max_attempts);
    if (options.cancel.WaitFor(*wait)) {
      return MakeError(ErrorCode::kCancelled,
                       fmt::format("model '{}': call cancelled while waiting to retry",
                                   label.model_id));
    }
  }
}

}  // namespace kforge::llm
