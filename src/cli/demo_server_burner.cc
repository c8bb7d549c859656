#include "demo_server_burner.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "perfgate/core/error.h"

namespace perfgate {

struct BusyBurner::Shared {
  std::atomic<int64_t> busy_until_ns{0};  // CLOCK_MONOTONIC: one clock for both processes
  std::atomic<pid_t> pid{0};
};

namespace {

static_assert(std::atomic<int64_t>::is_always_lock_free, "shared between processes");
using std::chrono::nanoseconds;
using namespace std::chrono_literals;

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One millisecond of a full core.
void spin_1ms() {
  int64_t until = monotonic_ns() + 1'000'000;
  volatile uint64_t sink = 0;
  while (monotonic_ns() < until)
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<uint64_t>(i);
}

void burn(const BusyBurner::Shared& shared, const std::atomic<bool>& done) {
  while (!done) {
    if (monotonic_ns() < shared.busy_until_ns.load())
      spin_1ms();
    else
      std::this_thread::sleep_for(1ms);
  }
}

// The burner's whole life: spin while busy, until the lifeline's other end closes.
[[noreturn]] void burner_main(const BusyBurner::Shared& shared, int lifeline, int threads) {
  int null = open("/dev/null", O_RDWR);
  for (int fd : {0, 1, 2}) dup2(null, fd);  // never holds a reader's pipe open
  std::atomic<bool> done{false};
  std::vector<std::thread> burners;
  for (int i = 0; i < threads; ++i) burners.emplace_back([&] { burn(shared, done); });
  pollfd p{lifeline, POLLIN, 0};
  while (poll(&p, 1, -1) < 0 && errno == EINTR) {
  }
  done = true;
  for (auto& t : burners) t.join();
  _exit(0);
}

}  // namespace

BusyBurner::BusyBurner(int threads) {
  void* memory =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw Error(std::string("--burn-while-busy: mmap: ") + strerror(errno));
  shared_ = new (memory) Shared;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw Error(std::string("--burn-while-busy: pipe: ") + strerror(errno));
  pid_t middle = fork();
  if (middle < 0) throw Error(std::string("--burn-while-busy: fork: ") + strerror(errno));
  if (middle == 0) {
    close(fds[1]);
    setsid();
    pid_t burner = fork();
    if (burner == 0) burner_main(*shared_, fds[0], threads);
    shared_->pid = burner;
    _exit(burner > 0 ? 0 : 1);
  }
  close(fds[0]);
  lifeline_ = fds[1];
  int status = 0;
  while (waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("--burn-while-busy: could not start the burner process");
}

BusyBurner::~BusyBurner() {
  if (lifeline_ >= 0) close(lifeline_);
  if (shared_) munmap(shared_, sizeof(Shared));
}

void BusyBurner::busy_for(nanoseconds length) {
  int64_t until = monotonic_ns() + length.count();
  int64_t now = shared_->busy_until_ns.load();
  while (now < until && !shared_->busy_until_ns.compare_exchange_weak(now, until)) {
  }
}

pid_t BusyBurner::pid() const {
  return shared_->pid.load();
}

BusyWatch::BusyWatch(BusyBurner& burner, std::function<uint64_t()> served)
    : thread_([&burner, served = std::move(served)](std::stop_token stop) {
        uint64_t seen = served();
        while (!stop.stop_requested()) {
          uint64_t now = served();
          if (now != seen) burner.busy_for(20ms);
          seen = now;
          std::this_thread::sleep_for(2ms);
        }
      }) {}

}  // namespace perfgate
