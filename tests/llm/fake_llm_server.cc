// fake_llm_server: a local server speaking one provider's wire format, with scripted faults, for
// the command-line tests of the LLM layer (tests/llm/*.sh) and its two-process tests. Listens on
// 127.0.0.1 (an ephemeral port, written to --port-file) until SIGTERM or SIGINT.
//
//   fake_llm_server --provider openai|openai_compatible|anthropic|gemini --port-file FILE
//                   [--generation FILE] [--analysis FILE]   answer texts (analysis: requests
//                                                           that ask for "recommendations")
//                   [--fail STATUS --fail-from N --fail-count C]  requests N.. N+C-1 (0-based;
//                                                           C = -1: all from N on) get STATUS
//                   [--log FILE]                            one line per request: "<unix ms>
//                                                           <index> <status> <in flight>"
//                   [--stream-error-with-key]               answer with a stream whose error
//                                                           event quotes the request's key
// The answer text defaults to a one-line reply. Bodies are the providers' own shapes, including
// their error bodies (Anthropic's overloaded_error, OpenAI's error object, Gemini's status).
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

namespace {

using nlohmann::json;

struct Options {
  std::string provider = "openai";
  std::string port_file;
  std::string generation = "OK";
  std::string analysis = "OK";
  int fail_status = 0;
  int fail_from = 0;
  int fail_count = 0;
  std::string log;
  bool stream_error_with_key = false;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fake_llm_server: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fake_llm_server: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--provider") o.provider = value();
    else if (arg == "--port-file") o.port_file = value();
    else if (arg == "--generation") o.generation = ReadAll(value());
    else if (arg == "--analysis") o.analysis = ReadAll(value());
    else if (arg == "--fail") o.fail_status = std::stoi(value());
    else if (arg == "--fail-from") o.fail_from = std::stoi(value());
    else if (arg == "--fail-count") o.fail_count = std::stoi(value());
    else if (arg == "--log") o.log = value();
    else if (arg == "--stream-error-with-key") o.stream_error_with_key = true;
    else {
      std::fprintf(stderr, "fake_llm_server: unknown argument %s\n", arg.c_str());
      std::exit(2);
    }
  }
  if (o.port_file.empty()) {
    std::fprintf(stderr, "fake_llm_server: --port-file is required\n");
    std::exit(2);
  }
  return o;
}

std::string KeyOf(const httplib::Request& req) {
  std::string key = req.get_header_value("x-api-key");
  if (key.empty()) key = req.get_header_value("x-goog-api-key");
  if (key.empty()) {
    key = req.get_header_value("Authorization");
    if (key.rfind("Bearer ", 0) == 0) key = key.substr(7);
  }
  return key;
}

std::string SuccessBody(const std::string& provider, const std::string& text) {
  if (provider == "anthropic") {
    return json{{"id", "msg_fake"},
                {"type", "message"},
                {"role", "assistant"},
                {"model", "fake-model"},
                {"content", json::array({{{"type", "text"}, {"text", text}}})},
                {"stop_reason", "end_turn"},
                {"usage", {{"input_tokens", 100}, {"output_tokens", 50}}}}
        .dump();
  }
  if (provider == "gemini") {
    return json{{"candidates",
                 json::array({{{"content", {{"role", "model"},
                                            {"parts", json::array({{{"text", text}}})}}},
                               {"finishReason", "STOP"}}})},
                {"usageMetadata", {{"promptTokenCount", 100}, {"candidatesTokenCount", 50}}},
                {"modelVersion", "fake-model"}}
        .dump();
  }
  return json{{"id", "chatcmpl-fake"},
              {"object", "chat.completion"},
              {"model", "fake-model"},
              {"choices", json::array({{{"index", 0},
                                        {"message", {{"role", "assistant"}, {"content", text}}},
                                        {"finish_reason", "stop"}}})},
              {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 50}}}}
      .dump();
}

std::string StreamBody(const std::string& text) {
  std::string out;
  out += "data: " + json{{"model", "fake-model"},
                         {"choices", json::array({{{"delta", {{"content", text}}}}})}}
                        .dump() +
         "\n\n";
  out += "data: " + json{{"choices", json::array({{{"delta", json::object()},
                                                    {"finish_reason", "stop"}}})},
                         {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 50}}}}
                        .dump() +
         "\n\n";
  out += "data: [DONE]\n\n";
  return out;
}

std::string ErrorBody(const std::string& provider, int status) {
  if (provider == "anthropic") {
    const bool overloaded = status == 529;
    return json{{"type", "error"},
                {"error", {{"type", overloaded ? "overloaded_error" : "api_error"},
                           {"message", overloaded ? "Overloaded" : "Internal server error"}}}}
        .dump();
  }
  if (provider == "gemini") {
    return json{{"error", {{"code", status},
                           {"message", "The model is overloaded. Please try again later."},
                           {"status", status == 429 ? "RESOURCE_EXHAUSTED" : "UNAVAILABLE"}}}}
        .dump();
  }
  return json{{"error", {{"message", "The server had an error while processing your request."},
                         {"type", "server_error"}}}}
      .dump();
}

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  const Options options = Parse(argc, argv);
  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(16); };
  std::atomic<int> next_index{0};
  std::atomic<int> in_flight{0};
  std::mutex log_mu;

  server.Post(".*", [&](const httplib::Request& req, httplib::Response& res) {
    const int index = next_index++;
    const int now_in_flight = ++in_flight;
    const long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    int status = 200;
    if (options.fail_status != 0 && index >= options.fail_from &&
        (options.fail_count < 0 || index < options.fail_from + options.fail_count)) {
      status = options.fail_status;
    }
    if (!options.log.empty()) {
      std::lock_guard lock(log_mu);
      std::ofstream(options.log, std::ios::app)
          << ms << " " << index << " " << status << " " << now_in_flight << "\n";
    }
    const std::string key = KeyOf(req);
    if (status != 200) {
      res.status = status;
      res.set_content(ErrorBody(options.provider, status), "application/json");
      --in_flight;
      return;
    }
    const bool analysis = req.body.find("recommendations") != std::string::npos &&
                          req.body.find("bottleneck") != std::string::npos;
    const std::string& text = analysis ? options.analysis : options.generation;
    const bool stream = req.body.find("\"stream\":true") != std::string::npos;
    if (options.stream_error_with_key) {
      res.set_content("data: " +
                          json{{"error", {{"message", "upstream failure for key " + key}}}}.dump() +
                          "\n\n",
                      "text/event-stream");
    } else if (stream) {
      res.set_content(StreamBody(text), "text/event-stream");
    } else {
      res.set_content(SuccessBody(options.provider, text), "application/json");
    }
    --in_flight;
  });

  const int port = server.bind_to_any_port("127.0.0.1");
  if (port <= 0) {
    std::fprintf(stderr, "fake_llm_server: cannot bind a port on 127.0.0.1\n");
    return 1;
  }
  std::thread listener([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  {
    const std::string tmp = options.port_file + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::rename(tmp.c_str(), options.port_file.c_str());
  }
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  server.stop();
  listener.join();
  return 0;
}
