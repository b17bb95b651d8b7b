#include "kforge/llm/http_transport.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <vector>

#include "kforge/llm/redact.h"

namespace kforge::llm {
namespace {

using Clock = std::chrono::steady_clock;

// Longest sleep between checks of cancellation, deadline and the read timeout.
constexpr std::chrono::milliseconds kPollSlice{50};

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string Trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])) != 0) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])) != 0) --e;
  return std::string(s.substr(b, e - b));
}

bool IsLoopbackUrl(std::string_view url) {
  const std::size_t scheme = url.find("://");
  std::string_view rest = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
  for (std::string_view host : {"127.0.0.1", "localhost", "[::1]"}) {
    if (rest.substr(0, host.size()) == host &&
        (rest.size() == host.size() || rest[host.size()] == ':' || rest[host.size()] == '/')) {
      return true;
    }
  }
  return false;
}

// State of one transfer, reached from libcurl's callbacks.
struct Transfer {
  const HttpRequest* request = nullptr;
  HttpResponse response;
  Clock::time_point last_activity;  // the last progress (HttpRequest::read_timeout)
  curl_off_t last_upload = 0;
};

bool OnlyWhitespace(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(),
                     [](unsigned char c) { return std::isspace(c) != 0; });
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  const std::string_view chunk(data, n);
  t->response.body.append(data, n);
  const bool progress = t->request->counts_as_progress ? t->request->counts_as_progress(chunk)
                                                       : !OnlyWhitespace(chunk);
  if (progress) t->last_activity = Clock::now();
  if (t->request->on_body) t->request->on_body(chunk);
  return n;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  t->last_activity = Clock::now();
  std::string_view line(data, n);
  if (line.substr(0, 5) == "HTTP/") {
    t->response.headers.clear();  // a new response (after 100 Continue or a redirect)
    return n;
  }
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  t->response.headers.emplace_back(std::move(name), Trim(line.substr(colon + 1)));
  return n;
}

int OnProgress(void* user, curl_off_t /*dltotal*/, curl_off_t /*dlnow*/, curl_off_t /*ultotal*/,
               curl_off_t ulnow) {
  auto* t = static_cast<Transfer*>(user);
  if (ulnow != t->last_upload) {
    t->last_upload = ulnow;
    t->last_activity = Clock::now();
  }
  return 0;
}

Error CurlFailure(CURLcode code, const char* detail, const std::string& url) {
  const std::string what = Redact(detail != nullptr && detail[0] != '\0'
                                      ? std::string(detail)
                                      : std::string(curl_easy_strerror(code)));
  const std::string where = Redact(url);
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return Error{ErrorCode::kTimeout, fmt::format("connecting to {} timed out: {}", where, what)};
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return Error{ErrorCode::kInvalidArgument,
                   fmt::format("bad endpoint URL {}: {}; check the model's `endpoint`", where,
                               what)};
    case CURLE_COULDNT_CONNECT:
      return Error{ErrorCode::kUnavailable,
                   fmt::format("{}{}: {}", kCannotConnect, where, what)};
    case CURLE_PARTIAL_FILE:
      return Error{ErrorCode::kUnavailable,
                   fmt::format("response from {} was truncated (connection closed before the "
                               "whole body arrived): {}",
                               where, what)};
    default:
      return Error{ErrorCode::kUnavailable, fmt::format("request to {} failed: {}", where, what)};
  }
}

class CurlTransport : public HttpTransport {
 public:
  CurlTransport() { GlobalInit(); }
  ~CurlTransport() override {
    for (auto& h : free_) {
      curl_multi_cleanup(h.multi);
      curl_easy_cleanup(h.easy);
    }
  }

  Result<HttpResponse> Send(const HttpRequest& request, const CallOptions& options) override {
    if (options.cancel.IsCancelled()) {
      return MakeError(ErrorCode::kCancelled, "call cancelled before it was sent");
    }
    Handle h = Take();
    auto result = Perform(h, request, options);
    Give(h);
    return result;
  }

 private:
  struct Handle {
    CURL* easy = nullptr;
    CURLM* multi = nullptr;
  };

  Handle Take() {
    {
      std::lock_guard lock(mu_);
      if (!free_.empty()) {
        Handle h = free_.back();
        free_.pop_back();
        return h;
      }
    }
    return Handle{curl_easy_init(), curl_multi_init()};
  }

  void Give(Handle h) {
    std::lock_guard lock(mu_);
    free_.push_back(h);
  }

  static Result<HttpResponse> Perform(Handle h, const HttpRequest& request,
                                      const CallOptions& options) {
    CURL* easy = h.easy;
    curl_easy_reset(easy);
    Transfer transfer;
    transfer.request = &request;
    char error_buffer[CURL_ERROR_SIZE] = {0};

    curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(request.connect_timeout.count()));
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
    if (IsLoopbackUrl(request.url)) curl_easy_setopt(easy, CURLOPT_PROXY, "");
    if (request.method == "POST") {
      curl_easy_setopt(easy, CURLOPT_POST, 1L);
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
    } else if (request.method != "GET") {
      curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
    curl_slist* headers = nullptr;
    for (const auto& [name, value] : request.headers) {
      headers = curl_slist_append(headers, fmt::format("{}: {}", name, value).c_str());
    }
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &OnBody);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &OnHeader);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &transfer);
    curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, &OnProgress);
    curl_easy_setopt(easy, CURLOPT_XFERINFODATA, &transfer);
    curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);

    const Clock::time_point start = Clock::now();
    transfer.last_activity = start;
    curl_multi_add_handle(h.multi, easy);
    std::optional<Error> abort;
    int running = 1;
    while (true) {
      curl_multi_perform(h.multi, &running);
      if (running == 0) break;
      const Clock::time_point now = Clock::now();
      if (options.cancel.IsCancelled()) {
        abort = Error{ErrorCode::kCancelled, "call cancelled while the request was in flight"};
        break;
      }
      if (options.deadline && now >= *options.deadline) {
        abort = Error{ErrorCode::kTimeout,
                      fmt::format("deadline passed while waiting for {}", Redact(request.url))};
        break;
      }
      const auto silence = now - transfer.last_activity;
      if (silence >= request.read_timeout) {
        abort = Error{ErrorCode::kTimeout,
                      fmt::format("no progress from {} for {} ms (the read timeout: no answer "
                                  "bytes, or only keep-alive bytes; raise the model's "
                                  "read_timeout_s if the server is just slow)",
                                  Redact(request.url), request.read_timeout.count())};
        break;
      }
      auto wait = std::min<Clock::duration>(kPollSlice, request.read_timeout - silence);
      if (options.deadline) wait = std::min<Clock::duration>(wait, *options.deadline - now);
      const int wait_ms = static_cast<int>(
          std::max<long>(1, std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()));
      curl_multi_poll(h.multi, nullptr, 0, wait_ms, nullptr);
    }

    CURLcode code = CURLE_OK;
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(h.multi, &queued)) {
      if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy) code = msg->data.result;
    }
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(h.multi, easy);
    curl_slist_free_all(headers);

    if (abort) return std::unexpected(std::move(*abort));
    if (code != CURLE_OK) return std::unexpected(CurlFailure(code, error_buffer, request.url));
    transfer.response.status = static_cast<int>(status);
    return std::move(transfer.response);
  }

  std::mutex mu_;
  std::vector<Handle> free_;  // guarded by mu_; idle handles keep their connections alive
};

}  // namespace

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return "";
}

std::shared_ptr<HttpTransport> NewCurlTransport() { return std::make_shared<CurlTransport>(); }

Status ProbeTcpConnect(const std::string& url, std::chrono::milliseconds timeout) {
  GlobalInit();
  CURL* easy = curl_easy_init();
  char error_buffer[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_CONNECT_ONLY, 1L);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()) * 2);
  if (IsLoopbackUrl(url)) curl_easy_setopt(easy, CURLOPT_PROXY, "");
  const CURLcode code = curl_easy_perform(easy);
  curl_easy_cleanup(easy);
  if (code != CURLE_OK) return std::unexpected(CurlFailure(code, error_buffer, url));
  return Ok();
}

}  // namespace kforge::llm
