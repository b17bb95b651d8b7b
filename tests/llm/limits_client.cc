// llm_limits_client REGISTRY.toml MODEL_ID CALLS: makes CALLS calls to MODEL_ID, built from the
// registry file as `kforge run` builds it (so with the host-wide limits of provider_factory). A
// helper of host_limits_test.cc, which runs two of these at once against one server. Exit 0 when
// every call succeeded; else 1 with the error on stderr.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kforge/core/files.h"
#include "kforge/llm/provider_factory.h"
#include "kforge/llm/registry.h"

int main(int argc, char** argv) {
  using namespace kforge;
  if (argc != 4) {
    std::fprintf(stderr, "usage: llm_limits_client REGISTRY.toml MODEL_ID CALLS\n");
    return 2;
  }
  auto text = ReadFile(argv[1]);
  llm::ModelRegistry registry;
  if (!text || !registry.AddToml(*text, argv[1])) {
    std::fprintf(stderr, "llm_limits_client: cannot read the registry %s\n", argv[1]);
    return 2;
  }
  auto entry = registry.Find(argv[2]);
  if (!entry) {
    std::fprintf(stderr, "llm_limits_client: %s\n", entry.error().message.c_str());
    return 2;
  }
  auto provider = llm::NewProviderForModel(*entry, llm::ProviderFactoryOptions{});
  if (!provider) {
    std::fprintf(stderr, "llm_limits_client: %s\n", provider.error().message.c_str());
    return 1;
  }
  llm::Request request;
  request.messages = {llm::Message::User("hi")};
  for (int i = 0; i < std::atoi(argv[3]); ++i) {
    auto response = (*provider)->Complete(request, llm::CallOptions{});
    if (!response) {
      std::fprintf(stderr, "llm_limits_client: %s\n", response.error().message.c_str());
      return 1;
    }
  }
  return 0;
}
