// Writes to a closed socket inside LibTorch (TCPStore, Gloo pairs, NCCL's
// bootstrap) must fail with EPIPE and become an exception, never kill the
// process with SIGPIPE.
//   { dtensor::SigpipeBlock no_sigpipe; store->set(key, value); }
#pragma once

namespace dtensor {

// Note [SIGPIPE]
// A C++ process dies of SIGPIPE by default when it writes to a socket whose
// peer has gone (Python ignores the signal at start-up, so PyTorch users
// never meet it). When rank 0 dies, its store and Gloo pairs close, and a
// survivor that writes to them would die silently instead of reporting
// "rank 0 exited". The writes happen inside LibTorch and Gloo, on the
// calling thread (TCPStore clients) and on threads they start (Gloo's device
// loop and worker threads, the TCPStore server, NCCL's proxy threads).
// Two layers, so that no process dtensor starts or joins dies of it:
//   1. Where dtensor owns the process: dtensor's launcher starts its ranks
//      with SIGPIPE ignored (the disposition survives exec), as Python does.
//      LaunchSpec::ignore_sigpipe = false is the way out: ranks then start
//      with the default disposition, unblocked.
//   2. Where dtensor only joins a process (a user's program under torchrun
//      or any other launcher, whose SIGPIPE disposition is the program's
//      business): every call that creates a world, a group, a store
//      connection or an NCCL communicator, and every store operation of
//      dtensor's, runs inside a SigpipeBlock. It blocks SIGPIPE on this
//      thread only; threads started inside inherit the blocked mask for
//      their lifetime, so their writes to a closed peer fail with EPIPE,
//      which LibTorch and Gloo report as errors. When the block ends, a
//      SIGPIPE raised on this thread meanwhile is consumed, not delivered.
//      Nothing process-wide changes, and a program's own sockets keep the
//      program's own disposition.

/// Blocks SIGPIPE on the calling thread for its lifetime (see Note
/// [SIGPIPE]). Nests: an inner block leaves the outer one's state alone.
class SigpipeBlock {
 public:
  SigpipeBlock();
  ~SigpipeBlock();
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  bool was_blocked_ = false;
};

/// True when SIGPIPE is blocked on the calling thread (for tests).
bool sigpipe_blocked_on_this_thread();

}  // namespace dtensor
