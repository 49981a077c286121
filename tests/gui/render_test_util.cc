// Xvfb, process and PNG helpers of the rendering tests. See render_test_util.h.
#include "tests/gui/render_test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stb/stb_image.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace dtensor::gui::testing {
namespace {

// The first executable `name` on PATH (or in /usr/bin), "" if none.
std::string which(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = std::string(path ? path : "") + ":/usr/bin:/bin";
  std::stringstream stream(dirs);
  for (std::string dir; std::getline(stream, dir, ':');) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string temp_dir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

}  // namespace

XvfbServer::~XvfbServer() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
}

bool XvfbServer::start(std::string* why) {
  std::string xvfb = which("Xvfb");
  if (xvfb.empty()) {
    *why = "Xvfb is not installed (Debian package xvfb); skipping the headless rendering test";
    return false;
  }
  int fds[2];
  if (pipe(fds) != 0) {
    *why = "pipe() failed";
    return false;
  }
  pid_ = fork();
  if (pid_ == 0) {
    close(fds[0]);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    std::string fd = std::to_string(fds[1]);
    execl(xvfb.c_str(), "Xvfb", "-displayfd", fd.c_str(), "-screen", "0", "1280x1024x24",
          "-nolisten", "tcp", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  pollfd poll_fd{fds[0], POLLIN, 0};
  std::string number;
  while (poll(&poll_fd, 1, /*timeout_ms=*/20000) > 0) {
    char c;
    if (read(fds[0], &c, 1) != 1 || c == '\n') break;
    number += c;
  }
  close(fds[0]);
  if (number.empty()) {
    *why = "Xvfb did not report a display within 20 s";
    return false;
  }
  display_ = ":" + number;
  return true;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& display) {
  static int counter = 0;
  std::string log = temp_dir() + "/process_" + std::to_string(getpid()) + "_" +
                    std::to_string(counter++) + ".log";
  ProcessResult result;
  pid_t pid = fork();
  if (pid == 0) {
    int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(out, 2);
    if (display.empty()) {
      unsetenv("DISPLAY");
    } else {
      setenv("DISPLAY", display.c_str(), 1);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(log);
  std::stringstream buffer;
  buffer << in.rdbuf();
  result.output = buffer.str();
  return result;
}

Rgb Image::at(int x, int y) const {
  size_t i = (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 3;
  return {rgb[i], rgb[i + 1], rgb[i + 2]};
}

std::optional<Image> load_png(const std::string& path) {
  int w = 0, h = 0, channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &w, &h, &channels, 3);
  if (data == nullptr) return std::nullopt;
  Image image;
  image.width = w;
  image.height = h;
  image.rgb.assign(data, data + static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
  stbi_image_free(data);
  return image;
}

Box find_color(const Image& image, Rgb color, int tolerance) {
  return find_fill(image, color, /*min_row_pixels=*/1, tolerance);
}

Box find_fill(const Image& image, Rgb color, int min_row_pixels, int tolerance) {
  Box box;
  for (int y = 0; y < image.height; ++y) {
    int count = 0, first = image.width, last = -1;
    for (int x = 0; x < image.width; ++x) {
      Rgb c = image.at(x, y);
      if (std::abs(c.r - color.r) > tolerance || std::abs(c.g - color.g) > tolerance ||
          std::abs(c.b - color.b) > tolerance) {
        continue;
      }
      ++count;
      first = std::min(first, x);
      last = x;
    }
    if (count < min_row_pixels || count == 0) continue;
    box.count += count;
    box.x0 = std::min(box.x0, first);
    box.x1 = std::max(box.x1, last);
    box.y0 = std::min(box.y0, y);
    box.y1 = y;
  }
  return box;
}

int count_present(const Image& image, const std::vector<Rgb>& colors, int64_t min_pixels) {
  int present = 0;
  for (Rgb c : colors) present += find_color(image, c).count >= min_pixels ? 1 : 0;
  return present;
}

}  // namespace dtensor::gui::testing
