// The inbox provider: a person answers prompts through files.
//
// Prompt N is written to `<dir>/NNNN-prompt.md` (Markdown, readable by a person; images beside it
// as NNNN-image-K.ext) and its answer is read from `<dir>/NNNN-answer.md` (the whole file is the
// answer). Without `wait`, a call whose answer file is missing fails with kUnavailable and the
// message "waiting for answer N: write it to <path>" so that the command exits; run it again once
// the answer is there. With `wait`, the call polls until the answer file appears and has stopped
// changing. Resuming is consistent: a prompt already written (same fingerprint, same occurrence)
// keeps its number and is not rewritten, and an existing answer is returned at once.
#ifndef KFORGE_LLM_INBOX_H_
#define KFORGE_LLM_INBOX_H_

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "kforge/core/error.h"
#include "kforge/llm/provider.h"

namespace kforge::llm {

struct InboxOptions {
  std::filesystem::path dir;  // created if missing; relative paths are taken from the current directory
  std::string model_id = "inbox";
  bool wait = false;  // poll for answers instead of failing with "waiting for answer N"
  std::chrono::milliseconds poll_interval{1'000};
  // An answer is taken once its size and modification time were unchanged for this long (the
  // person may still be saving it). Only in wait mode; without wait the file is taken as it is.
  std::chrono::milliseconds settle_time{1'000};
};

// Scans `options.dir` for prompts already written. Errors: the directory cannot be created/read.
Result<std::unique_ptr<Provider>> NewInboxProvider(InboxOptions options);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_INBOX_H_
