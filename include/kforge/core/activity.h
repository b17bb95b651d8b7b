// What the current thread is doing, for live displays (`kforge bench`'s rows): code announces a
// phase with a ScopedActivity ("generating", "compiling", "waiting for a device", "evaluating",
// "timing", "profiling", "waiting for answer 3"), and a display that installed an ActivitySink on
// that thread hears each change. Nested scopes restore the outer activity when they end.
//
// Thread-safety: everything is per thread (thread_local). Work handed to another thread (a pool)
// carries the sink along with CurrentActivitySink() and an ActivitySinkGuard there. Without a
// sink a ScopedActivity costs a few stores.
#ifndef KFORGE_CORE_ACTIVITY_H_
#define KFORGE_CORE_ACTIVITY_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace kforge {

// Called with the new activity each time it changes on the thread that installed it.
using ActivitySink = std::shared_ptr<const std::function<void(std::string_view activity)>>;

// Installs `sink` on this thread for the guard's lifetime (the previous one comes back after).
class ActivitySinkGuard {
 public:
  explicit ActivitySinkGuard(ActivitySink sink);
  ~ActivitySinkGuard();
  ActivitySinkGuard(const ActivitySinkGuard&) = delete;
  ActivitySinkGuard& operator=(const ActivitySinkGuard&) = delete;

 private:
  ActivitySink previous_;
};

// The sink installed on this thread, or null.
ActivitySink CurrentActivitySink();

// Announces `activity` for the scope's lifetime; the enclosing activity is announced again when
// it ends.
class ScopedActivity {
 public:
  explicit ScopedActivity(std::string activity);
  ~ScopedActivity();
  ScopedActivity(const ScopedActivity&) = delete;
  ScopedActivity& operator=(const ScopedActivity&) = delete;

 private:
  std::string previous_;
};

}  // namespace kforge

#endif  // KFORGE_CORE_ACTIVITY_H_
