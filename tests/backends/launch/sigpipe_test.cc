// SigpipeBlock (Note [SIGPIPE]): inside a block, writing to a socket whose
// peer is gone fails with EPIPE instead of killing the process, threads
// started inside keep SIGPIPE blocked, and nothing is left pending or
// blocked when the block ends. Without a block the same write kills the
// process, which is what the block is for.
#include "backends/launch/sigpipe.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <thread>

namespace dtensor {
namespace {

// A connected socket whose peer has closed: writing to it raises SIGPIPE.
struct OrphanSocket {
  int fd = -1;
  OrphanSocket() {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) ADD_FAILURE() << "socketpair failed";
    close(fds[1]);
    fd = fds[0];
  }
  ~OrphanSocket() { close(fd); }
  // errno of a one-byte write (0 when it succeeded).
  int write_errno() const {
    const char byte = 'x';
    errno = 0;
    return write(fd, &byte, 1) < 0 ? errno : 0;
  }
};

bool sigpipe_pending() {
  sigset_t pending;
  sigpending(&pending);
  return sigismember(&pending, SIGPIPE) == 1;
}

class SigpipeBlockTest : public ::testing::Test {
 protected:
  // What torchrun gives a C++ program, whatever the test runner set.
  void SetUp() override {
    previous_ = signal(SIGPIPE, SIG_DFL);
    ASSERT_FALSE(sigpipe_blocked_on_this_thread());
  }
  void TearDown() override { signal(SIGPIPE, previous_); }
  void (*previous_)(int) = SIG_DFL;
};

TEST_F(SigpipeBlockTest, WriteToAClosedPeerFailsWithEpipeAndLeavesNothingPending) {
  OrphanSocket socket;
  {
    SigpipeBlock block;
    EXPECT_TRUE(sigpipe_blocked_on_this_thread());
    EXPECT_EQ(socket.write_errno(), EPIPE);
    EXPECT_EQ(socket.write_errno(), EPIPE);
    EXPECT_TRUE(sigpipe_pending());  // raised, held back by the block
  }
  EXPECT_FALSE(sigpipe_pending());  // consumed, not delivered
  EXPECT_FALSE(sigpipe_blocked_on_this_thread());
}

TEST_F(SigpipeBlockTest, ThreadsStartedInsideKeepItBlockedThreadsStartedOutsideDoNot) {
  OrphanSocket socket;
  bool inner_blocked = false;
  int inner_errno = 0;
  std::thread inner;
  {
    SigpipeBlock block;
    inner = std::thread([&] {
      inner_blocked = sigpipe_blocked_on_this_thread();
      inner_errno = socket.write_errno();  // after the block ended, too
    });
  }
  inner.join();
  EXPECT_TRUE(inner_blocked);
  EXPECT_EQ(inner_errno, EPIPE);
  bool outer_blocked = true;
  std::thread outer([&] { outer_blocked = sigpipe_blocked_on_this_thread(); });
  outer.join();
  EXPECT_FALSE(outer_blocked);
}

TEST_F(SigpipeBlockTest, NestedBlocksLeaveTheOuterOneInCharge) {
  OrphanSocket socket;
  {
    SigpipeBlock outer;
    {
      SigpipeBlock inner;
      EXPECT_EQ(socket.write_errno(), EPIPE);
    }
    EXPECT_TRUE(sigpipe_blocked_on_this_thread());
    EXPECT_EQ(socket.write_errno(), EPIPE);
  }
  EXPECT_FALSE(sigpipe_blocked_on_this_thread());
  EXPECT_FALSE(sigpipe_pending());
}

TEST_F(SigpipeBlockTest, AProgramThatIgnoresSigpipeKeepsIgnoringIt) {
  signal(SIGPIPE, SIG_IGN);
  OrphanSocket socket;
  { SigpipeBlock block; }
  EXPECT_EQ(socket.write_errno(), EPIPE);
}

// The hazard itself: without a block the write kills the process.
TEST_F(SigpipeBlockTest, WithoutABlockTheSameWriteKillsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        signal(SIGPIPE, SIG_DFL);
        OrphanSocket socket;
        socket.write_errno();
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGPIPE), "");
}

}  // namespace
}  // namespace dtensor
