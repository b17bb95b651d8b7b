// Logging: one line per named step, at a level set by the KFORGE_LOG environment variable
// (trace, debug, info, warn, error, off; default warn so that command output stays readable).
#ifndef KFORGE_CORE_LOG_H_
#define KFORGE_CORE_LOG_H_

#include <spdlog/spdlog.h>

namespace kforge {

// Configures the default logger from KFORGE_LOG; idempotent, call once at start-up.
void InitLogging();

}  // namespace kforge

#endif  // KFORGE_CORE_LOG_H_
