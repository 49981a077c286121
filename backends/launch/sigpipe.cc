// SigpipeBlock: see Note [SIGPIPE] in sigpipe.h.
#include "backends/launch/sigpipe.h"

#include <pthread.h>

#include <cerrno>
#include <csignal>
#include <ctime>

namespace dtensor {
namespace {

sigset_t only_sigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  return set;
}

}  // namespace

SigpipeBlock::SigpipeBlock() {
  const sigset_t pipe = only_sigpipe();
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &pipe, &old);
  was_blocked_ = sigismember(&old, SIGPIPE) == 1;
}

SigpipeBlock::~SigpipeBlock() {
  if (was_blocked_) return;  // an outer block (or the program) owns the mask
  const sigset_t pipe = only_sigpipe();
  // Unblocking with a SIGPIPE pending would deliver it now: take it first.
  sigset_t pending;
  while (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
    const timespec no_wait{0, 0};
    if (sigtimedwait(&pipe, nullptr, &no_wait) < 0 && errno != EINTR) break;
  }
  pthread_sigmask(SIG_UNBLOCK, &pipe, nullptr);
}

bool sigpipe_blocked_on_this_thread() {
  sigset_t current;
  pthread_sigmask(SIG_BLOCK, nullptr, &current);
  return sigismember(&current, SIGPIPE) == 1;
}

}  // namespace dtensor
