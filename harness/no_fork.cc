#include "no_fork.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace kforge_harness {
namespace {

#if defined(__x86_64__)
constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#else
#error "kforge-harness: seccomp architecture not listed"
#endif

sock_filter Stmt(unsigned short code, unsigned k) { return BPF_STMT(code, k); }
sock_filter Jump(unsigned short code, unsigned k, unsigned char t, unsigned char f) {
  return BPF_JUMP(code, k, t, f);
}

// Refuse syscall `nr` with `error`.
void Refuse(std::vector<sock_filter>& p, long nr, int error) {
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (static_cast<unsigned>(error) & 0xFFFF)));
}

}  // namespace

bool ForbidNewProcesses(std::string* error) {
  std::vector<sock_filter> p;
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#ifdef __NR_fork
  Refuse(p, __NR_fork, EPERM);
#endif
#ifdef __NR_vfork
  Refuse(p, __NR_vfork, EPERM);
#endif
  Refuse(p, __NR_execve, EPERM);
  Refuse(p, __NR_execveat, EPERM);
  Refuse(p, __NR_clone3, ENOSYS);
  Refuse(p, __NR_ptrace, EPERM);
  Refuse(p, __NR_process_vm_readv, EPERM);
  Refuse(p, __NR_process_vm_writev, EPERM);
  // clone: allowed only with CLONE_THREAD in its flags (the first argument on x86_64 and
  // aarch64; the low 32 bits hold every flag that matters here).
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4));
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])));
  p.push_back(Jump(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  sock_fprog prog{static_cast<unsigned short>(p.size()), p.data()};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *error = std::string("prctl(NO_NEW_PRIVS): ") + std::strerror(errno);
    return false;
  }
  // TSYNC: every thread the process already has (a driver's) gets the filter too.
  if (::syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
    *error = std::string("seccomp: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace kforge_harness
