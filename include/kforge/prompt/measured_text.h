// MaskMeasuredText: the parts of a rendered prompt that were measured on the machine that
// rendered it, blanked, so that a recorded conversation can be replayed on another machine.
//
// A prompt states measurements: the analysis prompt's timing, profile summary and device facts
// (everything from its "## Timing" heading to its closing "Give at most ..." line), the
// generation prompt's "Timing: ..." line and "## Device" facts. On another machine these differ
// not only in their numbers but in their words too (a profile there may call the same kernel
// launch-bound, or list its kernels in another order), while the conversation (the task, the
// candidates, the recommendations) is the same. The cassette's "numbers may differ" replay
// compares prompts through this mask (see llm::Cassette::Load).
#ifndef KFORGE_PROMPT_MEASURED_TEXT_H_
#define KFORGE_PROMPT_MEASURED_TEXT_H_

#include <string>
#include <string_view>

namespace kforge {

// `prompt` with each measured part replaced by one "#" line (headings kept); text that is not
// a KForge prompt comes back unchanged.
std::string MaskMeasuredText(std::string_view prompt);

}  // namespace kforge

#endif  // KFORGE_PROMPT_MEASURED_TEXT_H_
