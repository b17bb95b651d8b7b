// kforge-harness: the process a native candidate (cpp, cuda, hip, sycl) runs in, with no
// interpreter (runner/HARNESS.md). Started by the judge with the channel at fd 3 and the arena
// at fd 4; everything else comes through commands.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "device.h"
#include "harness.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("kforge-harness %s protocol %d\n", kforge_harness::NewDevice()->kind().c_str(),
                kforge_harness::kProtocol);
    return 0;
  }
  struct stat st {};
  if (::fstat(kforge_harness::kChannelFd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
      ::fstat(kforge_harness::kArenaFd, &st) != 0) {
    std::fprintf(stderr,
                 "kforge-harness: started without its channel (fd 3) and arena (fd 4); it is "
                 "started by kforge, not by hand\n");
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);
  kforge_harness::Harness harness(kforge_harness::NewDevice());
  return harness.Run();
}
