// End-to-end: a real server started outside perfgate, as a CI step's
// `./server &` or `docker run -p` would, and a profile without a `service`
// section. perfgate must find the server by its listening socket.
#include <fcntl.h>
#include <sched.h>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

// A process the test starts and ends by its PID; `prepare` runs in the child
// before exec (e.g. to join a cgroup). Ready once `port_file` holds a line.
class OutsideProcess {
 public:
  OutsideProcess(const std::vector<std::string>& args, const fs::path& port_file,
                 const std::function<void()>& prepare = {}) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);  // its own group: ending it ends what it started
      if (prepare) prepare();
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      execvp(argv[0], argv.data());
      _exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      auto text = testing::read_file(port_file);
      if (!text.empty() && text.back() == '\n') {
        port_ = static_cast<uint16_t>(std::stoi(text));
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop();
    throw std::runtime_error("outside process did not start: " + args.front());
  }
  ~OutsideProcess() { stop(); }
  OutsideProcess(const OutsideProcess&) = delete;
  OutsideProcess& operator=(const OutsideProcess&) = delete;
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

 private:
  void stop() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

// A cgroup v2 folder of the test's own, removed (after its processes) at the end.
class TestCgroup {
 public:
  TestCgroup() {
    std::ifstream mounts("/proc/mounts");
    std::string dev, where, type, rest;
    while (mounts >> dev >> where >> type && std::getline(mounts, rest))
      if (type == "cgroup2") mount_ = where;
    if (mount_.empty()) return;
    path_ = "/perfgate-test-" + std::to_string(getpid());
    std::error_code ec;
    if (!fs::create_directory(dir(), ec) || ec) path_.clear();
  }
  ~TestCgroup() {
    if (!path_.empty()) rmdir(dir().c_str());
  }
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;
  bool usable() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  fs::path dir() const { return fs::path(mount_) / path_.substr(1); }
  /// Moves the calling process in: for a child, between fork and exec.
  void join() const { std::ofstream(dir() / "cgroup.procs") << getpid() << "\n"; }

 private:
  std::string mount_, path_;
};

std::string profile_text(const std::string& extra = "") {
  return R"({
  "name": "attribution-cli-test",
  "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
  "load": { "threads": 1, "connections": 4, "duration": "400ms", "warmup": "100ms" },
  "repeat": { "count": 3, "discard": 0 })" +
         extra + "\n}";
}

// Saturation rules off: for tests that look at attribution on a shared machine.
const std::string kNoSaturation = R"(,
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" })";

class AttributionCliTest : public ::testing::Test {
 protected:
  nlohmann::json run(uint16_t port, const std::string& profile, testing::CommandResult& r) {
    testing::write_file(profile_, profile);
    auto json_path = dir_ / "result.json";
    fs::remove(json_path);
    r = testing::run_command({testing::perfgate_binary(), "run", profile_.string(), "--store",
                              store_.string(), "--json", json_path.string()},
                             {{"TARGET_PORT", std::to_string(port)}});
    auto text = testing::read_file(json_path);
    return text.empty() ? nlohmann::json() : nlohmann::json::parse(text);
  }

  std::vector<std::string> demo_server(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {
        testing::perfgate_binary(), "demo-server", "--port", "0", "--port-file",
        port_file_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  TempDir dir_;
  fs::path profile_ = dir_ / "profile.json";
  fs::path store_ = dir_ / "perfgate.db";
  fs::path port_file_ = dir_ / "port";
};

double service_cpu_per_request(const nlohmann::json& result) {
  return result["metrics"]["service_cpu_us_per_request"]["value"].get<double>();
}

// The bench's found service (issue 27): one event-loop thread serving every
// connection, started outside perfgate; perfgate finds it and places its thread.
TEST_F(AttributionCliTest, ASingleThreadServerIsFoundAndItsPlacementMeasured) {
  testing::CommandResult r;
  OutsideProcess server(demo_server({"--work", "20us", "--single-thread"}), port_file_);
  auto result = run(server.port(), profile_text(kNoSaturation), r);
  ASSERT_FALSE(result.is_null()) << r.err;
  EXPECT_NE(r.exit_code, 3) << r.err;
  EXPECT_EQ(result["load_machine"]["service"]["pid"].get<int>(), server.pid());
  EXPECT_GT(result["load"]["responses"].get<double>(), 0) << result.dump(2);
  // Its busy thread is known, so the share of samples with load and service on one CPU is.
  EXPECT_TRUE(result["load_machine"]["shared_cpu_pct"].is_number())
      << result["load_machine"].dump(2);
  EXPECT_GT(service_cpu_per_request(result), 20.0);  // at least the work it burns
  // However many connections the load opened, the server kept one serving thread:
  // its main thread and the event loop.
  size_t threads = 0;
  for (const auto& entry :
       fs::directory_iterator("/proc/" + std::to_string(server.pid()) + "/task"))
    threads += entry.exists();
  EXPECT_LE(threads, 2u);
}

// `demo-server --fork` (issue 47's fork-per-request service), started outside
// perfgate as a user would: every request answered by a child of its own and the
// connection closed, so the load reconnects each time and nothing fails; the
// server itself is the process perfgate finds. With --single-thread it is refused.
TEST_F(AttributionCliTest, AForkingDemoServerAnswersEveryRequestFromAChild) {
  testing::CommandResult r;
  OutsideProcess server(demo_server({"--delay", "1ms", "--fork"}), port_file_);
  auto result = run(server.port(), profile_text(kNoSaturation), r);
  ASSERT_FALSE(result.is_null()) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_GT(result["load"]["responses"].get<double>(), 10) << result.dump(2);
  EXPECT_EQ(result["metrics"]["error_rate_pct"]["value"].get<double>(), 0) << result.dump(2);
  EXPECT_EQ(result["load_machine"]["service"]["pid"].get<int>(), server.pid());

  auto both = testing::run_command(
      {testing::perfgate_binary(), "demo-server", "--port", "0", "--fork", "--single-thread"}, {});
  EXPECT_EQ(both.exit_code, 3) << both.out << both.err;
  EXPECT_NE(both.err.find("--single-thread excludes --fork"), std::string::npos) << both.err;
}

// Issue 42, item 17: a recipe that starts its service through `sh -c` without
// exec leaves sh as the process perfgate started, and the server its child.
// The console and the JSON name the process that serves, not the shell; the
// whole tree is still the service's.
TEST_F(AttributionCliTest, AServiceStartedThroughAShellIsNamedByTheProcessThatServes) {
  uint16_t port = testing::unused_port();
  std::string serve = "'" + testing::perfgate_binary() + "' demo-server --port " +
                      std::to_string(port) + "; exit $?";  // not the last command: sh stays
  nlohmann::json command = {"sh", "-c", serve};
  testing::CommandResult r;
  auto result = run(
      port,
      profile_text(kNoSaturation + ",\n  \"service\": { \"command\": " + command.dump() + " }"), r);
  ASSERT_FALSE(result.is_null()) << r.err;
  EXPECT_NE(r.exit_code, 3) << r.err;
  const auto& service = result["load_machine"]["service"];
  EXPECT_EQ(service["name"], "perfgate") << service.dump(2);
  EXPECT_NE(service["how"].get<std::string>().find("started by perfgate through sh, which runs "
                                                   "it as pid "),
            std::string::npos)
      << service.dump(2);
  int pid = service["pid"].get<int>();
  EXPECT_NE(r.out.find("service: perfgate pid " + std::to_string(pid)), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("service: sh "), std::string::npos) << r.out;
  EXPECT_EQ(testing::validate_result_json(dir_ / "result.json").exit_code, 0);
}

TEST_F(AttributionCliTest, BackgroundServerIsFoundByItsListenerAndItsCostFollowsItsWork) {
  testing::CommandResult r;
  double light = 0;
  {
    OutsideProcess server(demo_server({"--work", "20us"}), port_file_);
    auto result = run(server.port(), profile_text(), r);
    ASSERT_FALSE(result.is_null()) << r.err;
    EXPECT_NE(r.exit_code, 3) << r.err;
    // Its CPU is the service's now, not foreign: nothing else on an idle host to call saturated.
    const auto& service = result["load_machine"]["service"];
    EXPECT_EQ(service["pid"].get<int>(), server.pid()) << result["load_machine"].dump(2);
    EXPECT_EQ(service["how"].get<std::string>(),
              "listening on 127.0.0.1:" + std::to_string(server.port()));
    EXPECT_NE(r.out.find("service: perfgate pid " + std::to_string(server.pid())),
              std::string::npos)
        << r.out;
    ASSERT_TRUE(result["metrics"].contains("service_cpu_us_per_request")) << result.dump(2);
    ASSERT_TRUE(result["metrics"].contains("requests_per_service_cpu_s"));
    light = service_cpu_per_request(result);
    auto check = testing::validate_result_json(dir_ / "result.json");
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }
  fs::remove(port_file_);
  {
    // Fifty times the work per response: its CPU per request must rise with it.
    OutsideProcess server(demo_server({"--work", "1ms"}), port_file_);
    auto result = run(server.port(), profile_text(kNoSaturation), r);
    ASSERT_FALSE(result.is_null()) << r.err;
    double heavy = service_cpu_per_request(result);
    EXPECT_GT(heavy, light * 5) << "light " << light << " us, heavy " << heavy << " us";
  }
}

TEST_F(AttributionCliTest, ServerInACgroupOfItsOwnIsAttributedThroughTheCgroup) {
  TestCgroup cgroup;
  if (!cgroup.usable()) GTEST_SKIP() << "no writable cgroup v2 hierarchy on this machine";
  testing::CommandResult r;
  {
    OutsideProcess server(demo_server({"--work", "20us"}), port_file_, [&] { cgroup.join(); });
    auto result = run(server.port(), profile_text(kNoSaturation), r);
    ASSERT_FALSE(result.is_null()) << r.err;
    const auto& service = result["load_machine"]["service"];
    EXPECT_EQ(service["cgroup"].get<std::string>(), cgroup.path()) << result.dump(2);
    EXPECT_EQ(service["pid"].get<int>(), server.pid());
    EXPECT_NE(r.out.find(", cgroup " + cgroup.path()), std::string::npos) << r.out;
    EXPECT_GT(service_cpu_per_request(result), 0.0);
  }
}

// The profile keys for what no discovery finds: the cgroup named outright, and a
// container named by its id's prefix in the cgroup path (as docker-ID.scope).
TEST_F(AttributionCliTest, ServiceCgroupAndContainerKeysNameTheServiceAsAUserWrites) {
  TestCgroup cgroup;
  if (!cgroup.usable()) GTEST_SKIP() << "no writable cgroup v2 hierarchy on this machine";
  OutsideProcess server(demo_server({"--work", "20us"}), port_file_, [&] { cgroup.join(); });
  std::string container_id = cgroup.path().substr(cgroup.path().find("test-"));
  struct Case {
    std::string key, how;
  };
  for (const auto& c :
       {Case{R"("cgroup": ")" + cgroup.path() + "\"", "named by service.cgroup"},
        Case{R"("container": ")" + container_id + "\"", "named by service.container"}}) {
    testing::CommandResult r;
    auto result =
        run(server.port(), profile_text(kNoSaturation + ",\n  \"service\": {" + c.key + "}"), r);
    ASSERT_FALSE(result.is_null()) << c.key << "\n" << r.err;
    EXPECT_NE(r.exit_code, 3) << r.err;
    const auto& service = result["load_machine"]["service"];
    EXPECT_EQ(service["how"].get<std::string>(), c.how) << service;
    EXPECT_EQ(service["cgroup"].get<std::string>(), cgroup.path()) << service;
    EXPECT_GT(service_cpu_per_request(result), 0.0) << c.key;
  }
}

TEST_F(AttributionCliTest, ListenerBehindAForwarderInAnotherNetworkNamespaceIsFound) {
  if (geteuid() != 0) GTEST_SKIP() << "unshare --net needs root";
  auto inner_port_file = dir_ / "inner-port";
  std::string serve = "ip link set lo up && exec " + testing::perfgate_binary() +
                      " demo-server --port 0 --port-file " + inner_port_file.string();
  std::unique_ptr<OutsideProcess> inner;
  try {
    inner = std::make_unique<OutsideProcess>(
        std::vector<std::string>{"unshare", "--net", "sh", "-c", serve}, inner_port_file);
  } catch (const std::exception&) {
    GTEST_SKIP() << "unshare --net is not allowed here";
  }
  auto forwarder_script = (testing::source_dir() / "tests/support/netns_forwarder.py").string();
  OutsideProcess forwarder(
      {"python3", forwarder_script, "-host-ip", "127.0.0.1", "-host-port", "0", "-container-ip",
       "127.0.0.1", "-container-port", std::to_string(inner->port()), "-netns-pid",
       std::to_string(inner->pid()), "-port-file", port_file_.string()},
      port_file_);
  testing::CommandResult r;
  auto result = run(forwarder.port(), profile_text(kNoSaturation), r);
  ASSERT_FALSE(result.is_null()) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto& service = result["load_machine"]["service"];
  EXPECT_EQ(service["pid"].get<int>(), inner->pid()) << result["load_machine"].dump(2);
  EXPECT_NE(service["how"].get<std::string>().find("in another network namespace"),
            std::string::npos)
      << service.dump();
  EXPECT_GT(service_cpu_per_request(result), 0.0);
}

// The one-line crash: a profile naming a service it does not start.
TEST_F(AttributionCliTest, ProfileWithOnlyProcessNameOrPidFileRunsAgainstAnOutsideServer) {
  // A name of its own (comm is the name it was started by), so that no other
  // perfgate on this machine answers to it.
  std::string name = "pgsvc" + std::to_string(getpid() % 1000000);
  fs::create_symlink(testing::perfgate_binary(), dir_ / name);
  auto args = demo_server();
  args.front() = (dir_ / name).string();
  OutsideProcess server(args, port_file_);
  auto pid_file = dir_ / "server.pid";
  testing::write_file(pid_file, std::to_string(server.pid()) + "\n");
  for (const std::string& key :
       {R"("process_name": ")" + name + "\"", R"("pid_file": ")" + pid_file.string() + "\""}) {
    testing::CommandResult r;
    store_ = dir_ / ("store-" + std::to_string(key.size()) + ".db");  // a first run: no baseline
    auto result =
        run(server.port(), profile_text(kNoSaturation + ",\n  \"service\": {" + key + "}"), r);
    EXPECT_EQ(r.exit_code, 0) << key << "\n" << r.out << r.err;
    ASSERT_FALSE(result.is_null()) << key << "\n" << r.err;
    EXPECT_EQ(result["load_machine"]["service"]["pid"], server.pid()) << result["load_machine"];
  }
}

// Issue 50 item 8: a pid_file naming a process perfgate runs under (here the
// test, perfgate's parent: a harness serving in-process) was watched and
// pinned with its whole tree, perfgate's own threads and CPU included. It is
// the service without perfgate: the run measures it, and the test's CPUs are
// its own again afterwards.
TEST_F(AttributionCliTest, APidFileNamingAnAncestorOfPerfgateLeavesPerfgateOut) {
  testing::DemoServerProcess server;
  auto pid_file = dir_ / "parent.pid";
  testing::write_file(pid_file, std::to_string(getpid()) + "\n");
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  testing::CommandResult r;
  auto result = run(server.port(),
                    profile_text(kNoSaturation + ",\n  \"service\": {\"pid_file\": \"" +
                                 pid_file.string() + "\"}"),
                    r);
  EXPECT_LE(r.exit_code, 2) << r.out << r.err;
  ASSERT_FALSE(result.is_null()) << r.err;
  EXPECT_EQ(result["load_machine"]["service"]["pid"], getpid()) << result["load_machine"];
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after)) << "the test process was left pinned";
}

// One busy-looping child per core, killed by its PID at the end.
class CpuHogs {
 public:
  CpuHogs() {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < cores; ++i) {
      pid_t pid = fork();
      if (pid == 0) {
        auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        volatile uint64_t x = 0;
        while (std::chrono::steady_clock::now() < end)
          for (int k = 0; k < 100000; ++k) x = x + 1;
        _exit(0);
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~CpuHogs() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }
  CpuHogs(const CpuHogs&) = delete;
  CpuHogs& operator=(const CpuHogs&) = delete;

 private:
  std::vector<pid_t> pids_;
};

TEST_F(AttributionCliTest, HogBesideAnAttributedServiceStillSaturatesTheRun) {
  OutsideProcess server(demo_server(), port_file_);
  testing::CommandResult r;
  nlohmann::json result;
  {
    CpuHogs hogs;
    result = run(server.port(), profile_text(), r);
  }
  ASSERT_FALSE(result.is_null()) << r.err;
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(result["load_machine"]["service"]["pid"], server.pid());
  bool foreign = false;
  for (const auto& reason : result["saturation"]["reasons"])
    foreign = foreign || reason.get<std::string>().starts_with("foreign CPU");
  EXPECT_TRUE(foreign) << result["saturation"].dump();
}

}  // namespace
}  // namespace perfgate
