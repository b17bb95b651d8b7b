// The readable summary of a `kforge e2e` outcome: where the time goes, what was synthesized and
// put in, whether the patched model computes the same thing, and tokens/s per configuration and
// batch size with the per-kernel speedups.
#ifndef KFORGE_E2E_SUMMARY_H_
#define KFORGE_E2E_SUMMARY_H_

#include <string>

#include "kforge/e2e/pipeline.h"

namespace kforge::e2e {

std::string SummaryText(const E2eOutcome& outcome);

}  // namespace kforge::e2e

#endif  // KFORGE_E2E_SUMMARY_H_
