// Host gate: keeps candidate compiles and timed phases apart on one host, between the threads of
// one KForge process and between KForge processes (EVAL-PROTOCOL: no compile beside a timing).
//
// Three uses, and who excludes whom:
//   compile           shared with other compiles; excludes every timing
//   timing on "cpu"   excludes everything (compiles, every other timing)
//   timing on DEVICE  excludes compiles, CPU timings and timings on the same DEVICE; timings on
//                     other devices of the host run beside it (their host load is small and the
//                     load monitor reports what remains)
// A timing that arrives waits for the compiles already running (never for compiles that arrive
// after it: those wait behind it), so a stream of compiles cannot starve timings; a compile waits
// while any timing runs or waits.
//
// Mechanism: open-file-description locks (fcntl F_OFD_SETLK) on byte ranges of one lock file.
// Each lease opens the file itself, so threads of one process exclude each other as processes do,
// and a process that dies releases its leases with its descriptors. The file is
// $KFORGE_HOST_GATE, else /tmp/kforge-host-gate (created mode 0666, so that every user's KForge
// shares it; where another user's file cannot be opened for writing, a per-user file is used and
// a warning says that other users' KForge runs are not kept apart). KFORGE_HOST_GATE=none turns
// the gate off (every lease is granted at once; reported by HostGate::enabled()).
//
// Contract: never ask for a compile lease while holding a timing lease on the same thread (or
// wait on a compile that needs one): the compile would wait for the timing forever.
//
// Thread-safety: all methods may be called from any thread.
#ifndef KFORGE_CORE_HOST_GATE_H_
#define KFORGE_CORE_HOST_GATE_H_

#include <chrono>
#include <filesystem>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

#include "kforge/core/error.h"

namespace kforge {

class HostGate {
 public:
  // A held use of the gate; released by its destructor (or by the process ending).
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    // Seconds spent waiting for the gate before it was granted.
    double waited_seconds() const { return waited_seconds_; }
    bool held() const { return fd_ >= 0; }

   private:
    friend class HostGate;
    int fd_ = -1;
    double waited_seconds_ = 0;
  };

  // The gate of this host (see above for the file); shared by the whole process.
  static HostGate& Default();

  // A gate on `lock_file`; an empty path is a gate that is turned off.
  explicit HostGate(std::filesystem::path lock_file);

  // Waits for a compile lease. Errors: cancelled through `stop`, or the lock file unusable.
  Result<Lease> Compile(std::stop_token stop = {}) const;

  // Waits for a timing lease on `device` ("cpu", or a device name such as "cuda:0"; every name
  // other than "cpu" is a device whose timings exclude only the same name's).
  Result<Lease> Timing(std::string_view device, std::stop_token stop = {}) const;

  bool enabled() const { return !lock_file_.empty(); }
  const std::filesystem::path& lock_file() const { return lock_file_; }

 private:
  Result<int> Open() const;

  std::filesystem::path lock_file_;
};

}  // namespace kforge

#endif  // KFORGE_CORE_HOST_GATE_H_
