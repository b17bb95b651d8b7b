// The shared body of the HTTP providers: vision check, retries, timing, cost, redaction and
// exception-safe parsing. Each wire format supplies how to build the HTTP request and how to read
// a 2xx body. Internal to the llm module.
#ifndef KFORGE_SRC_LLM_HTTP_PROVIDER_H_
#define KFORGE_SRC_LLM_HTTP_PROVIDER_H_

#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kforge/llm/http_provider_config.h"
#include "kforge/llm/http_transport.h"
#include "kforge/llm/provider.h"

namespace kforge::llm {

class HttpProvider : public Provider {
 public:
  HttpProvider(HttpProviderConfig config, std::shared_ptr<HttpTransport> transport,
               std::string provider_name);

  Result<Response> Complete(const Request& request, const CallOptions& options) final;
  ProviderInfo Info() const final;

 protected:
  // url, headers and body of the call (timeouts are filled in by Complete).
  virtual Result<HttpRequest> BuildHttpRequest(const Request& request,
                                               const CallOptions& options) const = 0;
  // Reads text, finish reason, model and usage from a 2xx body (`request` is the one sent). May throw nlohmann::json
  // exceptions on a body of the wrong shape; Complete turns them into kParse errors.
  virtual Result<Response> ParseBody(const Request& request, std::string_view body) const = 0;

  const HttpProviderConfig& config() const { return config_; }
  // "{endpoint without trailing slash}{path}".
  std::string Url(std::string_view path) const;
  // A kParse error naming the model, the URL and the start of the body.
  Error Malformed(std::string_view what, std::string_view body) const;
  // Parses JSON; a kParse error (naming truncation when the input ended early) if invalid.
  Result<nlohmann::json> ParseJson(std::string_view body) const;
  // An answer without text that ended because of the output limit or a content filter is a
  // failure saying so (kInvalidArgument: the same request fails the same way); nullopt otherwise.
  std::optional<Error> EmptyAnswerError(const Response& response) const;

 private:
  const HttpProviderConfig config_;
  const std::shared_ptr<HttpTransport> transport_;
  const std::string provider_name_;
};

// Joins the texts of all system messages with a blank line.
std::string JoinedSystemText(const Request& request);

}  // namespace kforge::llm

#endif  // KFORGE_SRC_LLM_HTTP_PROVIDER_H_
