// A cpp-httplib server on 127.0.0.1 (an ephemeral port) for wire-format tests, plus helpers.
#ifndef KFORGE_TESTS_LLM_TEST_SERVER_H_
#define KFORGE_TESTS_LLM_TEST_SERVER_H_

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "kforge/llm/http_provider_config.h"

namespace kforge::llm::testing {

class TestServer {
 public:
  explicit TestServer(int threads = 8) {
    server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~TestServer() {
    server_.stop();
    thread_.join();
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  httplib::Server& server() { return server_; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

// A config with fast retries and short timeouts, for a server at `endpoint`.
inline HttpProviderConfig FastConfig(const std::string& endpoint,
                                     const std::string& api_key = "sk-test-0123456789abcdefghij") {
  HttpProviderConfig config;
  config.model_id = "test-model";
  config.model = "wire-model";
  config.endpoint = endpoint;
  config.api_key = api_key;
  config.api_key_env = "TEST_API_KEY";
  config.vision = true;
  config.retry.max_attempts = 4;
  config.retry.initial_backoff = std::chrono::milliseconds(10);
  config.retry.max_backoff = std::chrono::milliseconds(40);
  config.connect_timeout = std::chrono::milliseconds(1000);
  config.read_timeout = std::chrono::milliseconds(2000);
  return config;
}

}  // namespace kforge::llm::testing

#endif  // KFORGE_TESTS_LLM_TEST_SERVER_H_
