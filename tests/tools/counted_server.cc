// A small single-threaded HTTP/1.1 keep-alive server for the cost phase's
// end-to-end tests: built without sanitizers (an ASan binary cannot run under
// Valgrind), so the suite's sanitizer build can still count a real service.
// --work-rounds N: a fixed loop per response, to plant an exact regression.
// --close: each connection closed after one response (HTTP/1.0's way);
// --fork: each connection served by a child forked for it, which answers one
// request and exits (Python's ForkingHTTPServer): --close's twin, whose work
// is done in short-lived children.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

volatile sig_atomic_t g_stop = 0;  // set by SIGTERM/SIGINT: a signal handler needs a global

void on_signal(int) {
  g_stop = 1;
}

uint64_t spin_rounds(uint64_t rounds) {
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (uint64_t i = 0; i < rounds; ++i) x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ULL + i;
  return x;
}

struct Conn {
  int fd;
  std::string in;
};

// Answers every complete request in `c.in`; false when the connection must close.
bool serve(Conn& c, uint64_t rounds, bool close_after, volatile uint64_t& sink) {
  for (size_t end; (end = c.in.find("\r\n\r\n")) != std::string::npos;) {
    bool health = c.in.compare(0, 12, "GET /health ") == 0;
    c.in.erase(0, end + 4);
    if (!health) sink = spin_rounds(rounds);
    const char* body = health ? "ok" : "Hello, world\n";
    char out[160];
    int n = std::snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n%s\r\n%s",
                          std::strlen(body), close_after ? "Connection: close\r\n" : "", body);
    if (write(c.fd, out, static_cast<size_t>(n)) != n || close_after) return false;
  }
  return true;
}

// --fork: the child reads one request, answers it and exits.
[[noreturn]] void serve_forked(int fd, uint64_t rounds, volatile uint64_t& sink) {
  Conn c{fd, {}};
  char buf[8192];
  for (ssize_t n; c.in.find("\r\n\r\n") == std::string::npos;) {
    if ((n = read(fd, buf, sizeof buf)) <= 0) _exit(0);
    c.in.append(buf, static_cast<size_t>(n));
  }
  serve(c, rounds, true, sink);
  close(fd);
  _exit(0);
}

int listen_on(int port, const char* port_file) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 128) != 0) {
    std::perror("counted_server: bind");
    std::exit(1);
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (port_file) {
    std::string tmp = std::string(port_file) + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (f) std::fprintf(f, "%d\n", ntohs(addr.sin_port)), std::fclose(f);
    std::rename(tmp.c_str(), port_file);
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  const char* port_file = nullptr;
  uint64_t rounds = 0;
  bool close_after = false, fork_each = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--close")) close_after = true;
    if (!std::strcmp(argv[i], "--fork")) fork_each = close_after = true;
    if (i + 1 == argc) break;
    if (!std::strcmp(argv[i], "--port")) port = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--port-file")) port_file = argv[++i];
    if (!std::strcmp(argv[i], "--work-rounds")) rounds = std::strtoull(argv[++i], nullptr, 10);
  }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  signal(SIGPIPE, SIG_IGN);
  int listener = listen_on(port, port_file);
  std::vector<Conn> conns;
  volatile uint64_t sink = 0;
  while (!g_stop) {
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    for (const auto& c : conns) fds.push_back({c.fd, POLLIN, 0});
    // No timeout: a timer would run more often per request under Valgrind.
    if (poll(fds.data(), fds.size(), -1) <= 0) continue;
    if (fds[0].revents & POLLIN) {
      int fd = accept(listener, nullptr, nullptr);
      int one = 1;
      if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (fd >= 0 && fork_each) {
        if (fork() == 0) serve_forked(fd, rounds, sink);
        close(fd);
        while (waitpid(-1, nullptr, WNOHANG) > 0) {
        }
      } else if (fd >= 0) {
        conns.push_back({fd, {}});
      }
    }
    for (size_t i = fds.size() - 1; i >= 1; --i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Conn& c = conns[i - 1];
      char buf[8192];
      ssize_t n = read(c.fd, buf, sizeof buf);
      if (n > 0) c.in.append(buf, static_cast<size_t>(n));
      if (n <= 0 || !serve(c, rounds, close_after, sink)) {
        close(c.fd);
        conns.erase(conns.begin() + static_cast<long>(i - 1));
      }
    }
  }
  return 0;
}
