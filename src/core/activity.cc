#include "kforge/core/activity.h"

#include <utility>

namespace kforge {
namespace {

thread_local ActivitySink current_sink;
thread_local std::string current_activity;

void Announce(const std::string& activity) {
  current_activity = activity;
  if (current_sink && *current_sink) (*current_sink)(current_activity);
}

}  // namespace

ActivitySinkGuard::ActivitySinkGuard(ActivitySink sink) : previous_(std::move(current_sink)) {
  current_sink = std::move(sink);
}

ActivitySinkGuard::~ActivitySinkGuard() { current_sink = std::move(previous_); }

ActivitySink CurrentActivitySink() { return current_sink; }

ScopedActivity::ScopedActivity(std::string activity) : previous_(current_activity) {
  Announce(activity);
}

ScopedActivity::~ScopedActivity() { Announce(previous_); }

}  // namespace kforge
