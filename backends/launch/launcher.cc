// Local multi-process launcher: fork/exec of the ranks, output pumping, and
// stopping whole process groups on failure, timeout or interrupt.
#include "backends/launch/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace dtensor::launch {
namespace {

volatile std::sig_atomic_t g_stop_requested = 0;

constexpr size_t kMaxCapturedBytes = 256 * 1024;
constexpr int kPollMillis = 20;
// After the last rank exited, how long to wait for its pipe to reach EOF (a
// grandchild that escaped the process group may hold it open).
constexpr auto kDrainTimeout = std::chrono::milliseconds(1000);

using Clock = std::chrono::steady_clock;

std::string env_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// The environment of one rank: the launcher's, minus what we replace or the
// spec removes, plus the launch variables and the spec's extras.
std::vector<std::string> rank_environment(const LaunchSpec& spec, int rank, int port) {
  std::vector<std::pair<std::string, std::string>> vars = {
      {"RANK", std::to_string(rank)},
      {"LOCAL_RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(spec.nproc)},
      {"LOCAL_WORLD_SIZE", std::to_string(spec.nproc)},
      {"GROUP_RANK", "0"},
      {"MASTER_ADDR", spec.master_addr},
      {"MASTER_PORT", std::to_string(port)},
  };
  vars.insert(vars.end(), spec.env.begin(), spec.env.end());
  std::set<std::string> drop(spec.unset_env.begin(), spec.unset_env.end());
  for (const auto& [name, value] : vars) drop.insert(name);
  // Launched from inside a torchrun worker: our ranks serve their own store.
  drop.insert("TORCHELASTIC_USE_AGENT_STORE");
  std::vector<std::string> result;
  for (char** e = environ; *e != nullptr; ++e) {
    if (drop.count(env_name(*e)) == 0) result.emplace_back(*e);
  }
  for (const auto& [name, value] : vars) result.push_back(name + "=" + value);
  return result;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (std::string& s : strings) result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

// In the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(int out_fd, pid_t parent, bool ignore_sigpipe, char** argv,
                             char** envp) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the launcher died before prctl
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  // The disposition survives exec, a handler would not; the mask is
  // inherited from the forking thread, which may block SIGPIPE (Note [SIGPIPE]).
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigprocmask(SIG_UNBLOCK, &pipe_only, nullptr);
  signal(SIGPIPE, ignore_sigpipe ? SIG_IGN : SIG_DFL);
  execvpe(argv[0], argv, envp);
  const char message[] = "dtensor-launch: exec failed: ";
  (void)!write(STDERR_FILENO, message, sizeof(message) - 1);
  const char* reason = strerror(errno);
  (void)!write(STDERR_FILENO, reason, strlen(reason));
  (void)!write(STDERR_FILENO, "\n", 1);
  _exit(127);
}

struct Child {
  RankResult result;
  int out_fd = -1;  // read end of the rank's stdout+stderr pipe; -1 at EOF
  std::string partial_line;
  size_t dropped_bytes = 0;
  bool running = true;
};

class Supervisor {
 public:
  explicit Supervisor(const LaunchSpec& spec) : spec_(spec) {}
  ~Supervisor() { kill_all_groups(SIGKILL); }  // nothing outlives the launch

  LaunchResult run();

 private:
  void spawn(int port);
  void pump_output(int timeout_ms);
  void on_bytes(Child& child, const char* data, size_t size);
  void emit_line(Child& child, const std::string& line);
  void reap();
  void start_stopping();
  void kill_all_groups(int sig);
  bool any_running() const;
  bool any_pipe_open() const;

  const LaunchSpec& spec_;
  std::vector<Child> children_;
  LaunchResult result_;
  bool stopping_ = false;
  Clock::time_point stop_started_;
  bool sent_kill_ = false;
};

void Supervisor::spawn(int port) {
  std::vector<std::string> argv_strings = spec_.argv;
  std::vector<char*> argv = c_strings(argv_strings);
  const pid_t parent = getpid();
  for (int rank = 0; rank < spec_.nproc; ++rank) {
    std::vector<std::string> env_strings = rank_environment(spec_, rank, port);
    std::vector<char*> envp = c_strings(env_strings);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("dtensor-launch: pipe failed");
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("dtensor-launch: fork failed");
    if (pid == 0) exec_child(fds[1], parent, spec_.ignore_sigpipe, argv.data(), envp.data());
    setpgid(pid, pid);  // also in the child: whichever runs first wins the race
    close(fds[1]);
    Child child;
    child.result.rank = rank;
    child.result.pid = pid;
    child.out_fd = fds[0];
    children_.push_back(std::move(child));
  }
}

void Supervisor::emit_line(Child& child, const std::string& line) {
  if (spec_.on_line) spec_.on_line(child.result.rank, line);
  if (!spec_.capture_output) return;
  std::string& out = child.result.output;
  out += line;
  out += '\n';
  if (out.size() > kMaxCapturedBytes) {
    const size_t cut = out.size() - kMaxCapturedBytes / 2;
    child.dropped_bytes += cut;
    out.erase(0, cut);
  }
}

void Supervisor::on_bytes(Child& child, const char* data, size_t size) {
  child.partial_line.append(data, size);
  size_t start = 0;
  for (size_t nl; (nl = child.partial_line.find('\n', start)) != std::string::npos;
       start = nl + 1) {
    emit_line(child, child.partial_line.substr(start, nl - start));
  }
  child.partial_line.erase(0, start);
}

void Supervisor::pump_output(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<Child*> owners;
  for (Child& c : children_) {
    if (c.out_fd < 0) continue;
    fds.push_back({c.out_fd, POLLIN, 0});
    owners.push_back(&c);
  }
  if (fds.empty()) return;
  if (poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
  char buffer[65536];
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    Child& c = *owners[i];
    const ssize_t n = read(c.out_fd, buffer, sizeof(buffer));
    if (n > 0) {
      on_bytes(c, buffer, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      if (!c.partial_line.empty()) emit_line(c, c.partial_line);
      c.partial_line.clear();
      close(c.out_fd);
      c.out_fd = -1;
    }
  }
}

void Supervisor::reap() {
  for (Child& c : children_) {
    if (!c.running) continue;
    int status = 0;
    if (waitpid(c.result.pid, &status, WNOHANG) != c.result.pid) continue;
    c.running = false;
    c.result.exited = WIFEXITED(status);
    c.result.exit_code = c.result.exited ? WEXITSTATUS(status) : -1;
    c.result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    c.result.stopped_by_launcher =
        stopping_ && !c.result.exited && (c.result.signal == SIGTERM || c.result.signal == SIGKILL);
    if (!c.result.ok() && !stopping_ && result_.first_failed_rank < 0) {
      result_.first_failed_rank = c.result.rank;
      if (spec_.kill_on_failure) start_stopping();
    }
  }
}

void Supervisor::start_stopping() {
  if (stopping_) return;
  stopping_ = true;
  stop_started_ = Clock::now();
  kill_all_groups(SIGTERM);
}

void Supervisor::kill_all_groups(int sig) {
  for (const Child& c : children_) kill(-c.result.pid, sig);
}

bool Supervisor::any_running() const {
  return std::any_of(children_.begin(), children_.end(), [](const Child& c) { return c.running; });
}

bool Supervisor::any_pipe_open() const {
  return std::any_of(children_.begin(), children_.end(),
                     [](const Child& c) { return c.out_fd >= 0; });
}

LaunchResult Supervisor::run() {
  const auto start = Clock::now();
  result_.master_port =
      spec_.master_port > 0 ? spec_.master_port : find_free_port(spec_.master_addr);
  spawn(result_.master_port);
  Clock::time_point all_exited;
  while (any_running() || (any_pipe_open() && Clock::now() - all_exited < kDrainTimeout)) {
    pump_output(kPollMillis);
    const bool was_running = any_running();
    reap();
    if (was_running && !any_running()) all_exited = Clock::now();
    const auto now = Clock::now();
    if (g_stop_requested && !stopping_) {
      result_.interrupted = true;
      start_stopping();
    }
    if (spec_.timeout.count() > 0 && now - start > spec_.timeout && !stopping_) {
      result_.timed_out = true;
      start_stopping();
    }
    if (stopping_ && !sent_kill_ && now - stop_started_ > spec_.kill_grace) {
      sent_kill_ = true;
      kill_all_groups(SIGKILL);
    }
  }
  kill_all_groups(SIGKILL);  // grandchildren left in the ranks' groups
  for (Child& c : children_) {
    if (c.out_fd >= 0) close(c.out_fd);
    if (c.dropped_bytes > 0) {
      c.result.output.insert(
          0, "[... " + std::to_string(c.dropped_bytes) + " bytes of earlier output dropped ...]\n");
    }
    result_.ranks.push_back(std::move(c.result));
  }
  children_.clear();
  result_.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return std::move(result_);
}

extern "C" void on_stop_signal(int) { g_stop_requested = 1; }

}  // namespace

std::string RankResult::status() const {
  std::ostringstream out;
  if (exited) {
    out << "exit code " << exit_code;
  } else if (signal != 0) {
    out << "killed by signal " << signal << " (" << strsignal(signal) << ")";
  } else {
    out << "still running";
  }
  if (stopped_by_launcher) out << " (stopped by the launcher)";
  return out.str();
}

bool LaunchResult::ok() const {
  if (timed_out || interrupted || ranks.empty()) return false;
  return std::all_of(ranks.begin(), ranks.end(), [](const RankResult& r) { return r.ok(); });
}

std::string LaunchResult::summary() const {
  std::ostringstream out;
  if (ok()) {
    out << "all " << ranks.size() << " ranks succeeded";
  } else if (first_failed_rank >= 0) {
    out << "rank " << first_failed_rank
        << " failed first: " << ranks[static_cast<size_t>(first_failed_rank)].status();
  } else if (timed_out) {
    out << "timed out: ranks were still running and were killed";
  } else if (interrupted) {
    out << "interrupted: ranks were stopped";
  } else {
    out << "failed";
  }
  out << " (" << elapsed.count() << " ms, MASTER_PORT=" << master_port << ")";
  return out.str();
}

std::string LaunchResult::report() const {
  std::ostringstream out;
  out << summary() << "\n";
  std::vector<const RankResult*> order;
  for (const RankResult& r : ranks) order.push_back(&r);
  std::stable_partition(order.begin(), order.end(), [](const RankResult* r) { return !r->ok(); });
  for (const RankResult* r : order) {
    out << "---- rank " << r->rank << ": " << r->status() << " ----\n" << r->output;
  }
  return out.str();
}

LaunchResult launch_local(const LaunchSpec& spec) {
  if (spec.nproc < 1) throw std::invalid_argument("dtensor-launch: nproc must be >= 1");
  if (spec.argv.empty()) throw std::invalid_argument("dtensor-launch: no program to launch");
  if (spec.master_port < 0 || spec.master_port > 65535) {
    throw std::invalid_argument("dtensor-launch: master port must be in 0..65535");
  }
  Supervisor supervisor(spec);
  return supervisor.run();
}

int find_free_port(const std::string& host) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("find_free_port: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  const std::string ip = host == "localhost" ? "127.0.0.1" : host;
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) addr.sin_addr.s_addr = INADDR_ANY;
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) throw std::runtime_error("find_free_port: cannot bind a port on " + host);
  return ntohs(addr.sin_port);
}

void install_stop_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace dtensor::launch
