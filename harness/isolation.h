// What the harness sees of its sandbox from inside, before any candidate code loads
// (runner/PROTOCOL.md `observed_isolation`): network blocked, root read-only, the user.
#ifndef KFORGE_HARNESS_ISOLATION_H_
#define KFORGE_HARNESS_ISOLATION_H_

#include <string>

namespace kforge_harness {

// {"network_blocked": bool, "root_read_only": bool, "user": name} as JSON text.
std::string ObserveIsolationJson();

}  // namespace kforge_harness

#endif  // KFORGE_HARNESS_ISOLATION_H_
