// LlmCallLog: every LLM call of a run goes through here, so that it is recorded in the run store
// (prompt and response artifacts, tokens, cost, latency, status, call key) and so that a resumed
// run answers a call from the store instead of paying for it again.
//
// The call key. Identical requests are legitimate and frequent (independent samples share their
// first prompt; a model may be asked the same thing twice in a row), so the key of a call is not
// the request fingerprint alone but
//   XXH3-128(RequestFingerprint(request, model_id), stream, repeat)
// where `stream` names the caller's independent conversation ("sample-0") and `repeat` counts
// earlier calls with the same fingerprint on the same stream in this process. A conversation that
// is replayed step by step (a resumed run) therefore meets the same keys in the same order. The
// key is stored in llm_calls.request_fingerprint and looked up with RunStore::FindLlmCall.
//
// Thread-safety: Call() may be called from any number of threads; the provider must be
// thread-safe (llm::Provider's contract) and the store is.
#ifndef KFORGE_AGENT_LLM_CALL_LOG_H_
#define KFORGE_AGENT_LLM_CALL_LOG_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "kforge/core/error.h"
#include "kforge/llm/budget.h"
#include "kforge/llm/call_options.h"
#include "kforge/llm/provider.h"
#include "kforge/llm/request.h"
#include "kforge/llm/response.h"
#include "kforge/store/run_store.h"

namespace kforge::agent {

// A finished call: the answer and where it is recorded.
struct LoggedAnswer {
  llm::Response response;   // for a reused call: text, usage, cost and latency as recorded
  std::string llm_call_id;  // the llm_calls row holding it
  bool reused = false;      // answered from the store: no provider was called
};

class LlmCallLog {
 public:
  // `store` must outlive the log. `budget` (may be null) is charged with the usage of reused calls,
  // so that a resumed run's budget counts what the run already spent; live calls are charged by
  // the budgeted provider that made them.
  LlmCallLog(store::RunStore& store, std::string run_id, std::shared_ptr<llm::Budget> budget);

  // Answers `request` from the store when a finished call with the same key exists, else calls
  // `provider` and records the call, successful or not. A failed call is returned as its Error
  // (after it is recorded); a store failure is returned as an Error too.
  Result<LoggedAnswer> Call(std::string_view agent, llm::Provider& provider,
                            const llm::Request& request, std::string_view stream,
                            const llm::CallOptions& options);

  const std::string& run_id() const { return run_id_; }
  store::RunStore& store() { return store_; }

 private:
  // The key of the next call with `fingerprint` on `stream` (advances the repeat counter).
  std::string NextKey(const std::string& fingerprint, std::string_view stream);

  store::RunStore& store_;
  const std::string run_id_;
  const std::shared_ptr<llm::Budget> budget_;
  std::mutex mu_;
  std::map<std::string, int> repeats_;  // guarded by mu_; (fingerprint, stream) -> calls so far
};

}  // namespace kforge::agent

#endif  // KFORGE_AGENT_LLM_CALL_LOG_H_
