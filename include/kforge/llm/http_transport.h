// HttpTransport: sends one HTTP request and returns the whole response; the seam under every HTTP
// provider, so tests and the load benchmark can swap it.
//
// Contract:
// - Send() is thread-safe and may be called concurrently; connections are pooled and reused.
// - Any HTTP status is a successful Send(); only failures to get a complete response are errors:
//   kUnavailable for connection failures (reset, DNS, a body cut short of its declared length;
//   a connection that could not be made at all — refused, no route — has a message starting
//   with kCannotConnect: nothing was sent), kTimeout for a connect timeout, an idle timeout (no
//   progress for `read_timeout`) or the call's deadline, kCancelled when CallOptions::cancel
//   fires, kInvalidArgument for a bad URL.
// - Error messages name the URL with secrets redacted.
#ifndef KFORGE_LLM_HTTP_TRANSPORT_H_
#define KFORGE_LLM_HTTP_TRANSPORT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/llm/call_options.h"

namespace kforge::llm {

struct HttpRequest {
  std::string method = "POST";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Time allowed to establish the connection (TCP and TLS).
  std::chrono::milliseconds connect_timeout{10'000};
  // Idle timeout: the longest time without progress. Progress is the response's status line and
  // headers, request bytes going out, and body bytes that `counts_as_progress` accepts (unset: any
  // chunk that is not only whitespace), so a server trickling keep-alive bytes is timed out like
  // a silent one. Non-streaming answers from large models can take minutes before the first
  // byte, hence the generous default.
  std::chrono::milliseconds read_timeout{300'000};
  // Whether a chunk of body bytes is progress (streams: an event carrying data, not a comment).
  std::function<bool(std::string_view)> counts_as_progress;
  // Receives body bytes as they arrive (streaming); the full body is returned as well. Optional.
  std::function<void(std::string_view)> on_body;
};

// The start of the message of a connection that could not be made at all (kUnavailable).
inline constexpr std::string_view kCannotConnect = "cannot connect to ";

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  std::string body;

  // Value of the first header named `name` (lowercase), or "" if absent.
  std::string Header(std::string_view name) const;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual Result<HttpResponse> Send(const HttpRequest& request, const CallOptions& options) = 0;
};

// The libcurl transport. Loopback URLs (127.0.0.1, localhost, [::1]) never go through a proxy;
// other URLs honour the usual *_proxy environment variables.
std::shared_ptr<HttpTransport> NewCurlTransport();

// Opens (and closes) a TCP connection to the host and port of `url` within `timeout`: "is the
// endpoint reachable now". Sends no request.
Status ProbeTcpConnect(const std::string& url, std::chrono::milliseconds timeout);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_HTTP_TRANSPORT_H_
