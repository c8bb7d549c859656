#include "perfgate/host/service_discovery.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "perfgate/host/host_sampler.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

const std::filesystem::path kRoot =
    std::filesystem::path(PERFGATE_SOURCE_DIR) / "tests/fixtures/proc/listeners";

// perfgate is pid 1000 in the fixture, in a login session's scope.
ServiceSearch search(const std::string& host, uint16_t port) {
  ServiceQuery q;
  q.host = host;
  q.port = port;
  q.local = true;
  q.self = 1000;
  return find_service(ProcReader(kRoot), CgroupReader(kRoot), q);
}

TEST(ProcNetTcp, ParsesIpv4AndIpv6AndSkipsGarbage) {
  auto v4 = parse_proc_net_tcp(ProcReader(kRoot).read("net/tcp").value(), false);
  ASSERT_EQ(v4.size(), 7u);
  EXPECT_EQ(v4[0].address, "127.0.0.1");
  EXPECT_EQ(v4[0].port, 8080);
  EXPECT_EQ(v4[0].inode, 1001u);
  EXPECT_TRUE(v4[0].listening);
  EXPECT_FALSE(v4[5].listening);  // an established connection on the same port
  auto v6 = parse_proc_net_tcp(ProcReader(kRoot).read("net/tcp6").value(), true);
  ASSERT_EQ(v6.size(), 1u);
  EXPECT_EQ(v6[0].address, "::1");
  EXPECT_EQ(v6[0].port, 7070);
}

TEST(ServiceDiscovery, PreforkServerIsOneTreeInItsOwnCgroup) {
  auto found = search("127.0.0.1", 8080);
  ASSERT_TRUE(found.service);
  EXPECT_EQ(found.service->pid, 100);
  EXPECT_EQ(found.service->roots, std::vector<pid_t>{100});  // the worker is its descendant
  EXPECT_EQ(found.service->name, "api-server");
  EXPECT_EQ(found.service->cgroup, "/system.slice/api.service");
  EXPECT_EQ(found.service->describe(),
            "api-server pid 100 (listening on 127.0.0.1:8080), cgroup /system.slice/api.service");
  EXPECT_EQ(found.unattributed_listener, "");
}

TEST(ServiceDiscovery, ReusePortGroupOfUnrelatedProcessesIsEveryTreeButNotASessionScope) {
  // The unreadable fd folder (450) and the vanished pid (400) are skipped on the way.
  auto found = search("localhost", 9090);
  ASSERT_TRUE(found.service);
  EXPECT_EQ(found.service->roots, (std::vector<pid_t>{200, 300}));
  EXPECT_EQ(found.service->cgroup, "");  // a login session holds perfgate too
  EXPECT_EQ(found.service->listener, "0.0.0.0:9090");
}

TEST(ServiceDiscovery, Ipv6ListenerInAContainerCgroup) {
  auto found = search("::1", 7070);
  ASSERT_TRUE(found.service);
  EXPECT_EQ(found.service->pid, 500);
  EXPECT_EQ(found.service->listener, "[::1]:7070");
  EXPECT_EQ(found.service->cgroup, "/docker/3f2a9c0d11");
  EXPECT_FALSE(search("127.0.0.1", 7070).service);  // ::1 is not 127.0.0.1
}

TEST(ServiceDiscovery, ListenerNobodyVisibleHoldsIsNamedForTheAdvice) {
  auto found = search("127.0.0.1", 5432);
  EXPECT_FALSE(found.service);
  EXPECT_EQ(found.unattributed_listener, "127.0.0.1:5432");
  EXPECT_NE(unattributed_advice(found.unattributed_listener).find("service.container"),
            std::string::npos);
  auto nothing = search("127.0.0.1", 1234);
  EXPECT_FALSE(nothing.service);
  EXPECT_EQ(nothing.unattributed_listener, "");
}

TEST(ServiceDiscovery, DockerProxyLeadsToTheContainersListenerInAnotherNetworkNamespace) {
  auto found = search("127.0.0.1", 8081);
  ASSERT_TRUE(found.service);
  EXPECT_EQ(found.service->pid, 700);
  EXPECT_EQ(found.service->name, "nginx");
  EXPECT_EQ(found.service->cgroup, "/system.slice/docker-abc123def.scope");
  EXPECT_EQ(found.service->how,
            "behind docker-proxy pid 600 on 0.0.0.0:8081, listening on port 80 in another "
            "network namespace");
}

TEST(ServiceDiscovery, ProfileKeysNameTheServiceBeforeAnyListener) {
  ServiceQuery q;
  q.self = 1000;
  q.container = "abc123";
  auto found = find_service(ProcReader(kRoot), CgroupReader(kRoot), q);
  ASSERT_TRUE(found.service);
  EXPECT_EQ(found.service->cgroup, "/system.slice/docker-abc123def.scope");
  EXPECT_EQ(found.service->how, "named by service.container");

  q = {};
  q.self = 1000;
  q.cgroup = "system.slice/api.service";
  found = find_service(ProcReader(kRoot), CgroupReader(kRoot), q);
  ASSERT_TRUE(found.service);
  EXPECT_EQ(found.service->cgroup, "/system.slice/api.service");
  EXPECT_EQ(found.service->pid, 0);

  q = {};
  q.self = 1000;
  q.process_name = "v6-server";
  found = find_service(ProcReader(kRoot), CgroupReader(kRoot), q);
  ASSERT_TRUE(found.service);
  EXPECT_EQ(found.service->pid, 500);
  EXPECT_EQ(found.service->how, "named by service.process_name");
}

// Issue 41, item 5: a pid_file holding 4294967297 wrapped to PID 1, and init's
// CPU was charged as the service's. A number past pid_t's range names nobody
// (2^32 + 400 wrapped to the fixture's PID 400).
TEST(ServiceDiscovery, APidFileNumberPastAPidsRangeNamesNoProcess) {
  testing::TempDir dir;
  for (const char* text : {"4294967696\n", "-1\n"}) {
    testing::write_file(dir / "service.pid", text);
    ServiceQuery q;
    q.self = 1000;
    q.pid_file = (dir / "service.pid").string();
    auto found = find_service(ProcReader(kRoot), CgroupReader(kRoot), q);
    EXPECT_FALSE(found.service) << text << " gave PID " << found.service->pid;
  }
}

TEST(ServiceDiscovery, OwnCgroupRule) {
  EXPECT_TRUE(own_cgroup("/system.slice/api.service", "/user.slice/user-0.slice/session-1.scope"));
  EXPECT_TRUE(own_cgroup("/docker/3f2a", "/"));
  EXPECT_FALSE(own_cgroup("/", "/x"));
  EXPECT_FALSE(own_cgroup("/ci/job", "/ci/job"));  // perfgate's own
  EXPECT_FALSE(own_cgroup("/ci", "/ci/job"));      // holds perfgate
  EXPECT_FALSE(own_cgroup("/user.slice/user-1000.slice", "/"));
  EXPECT_FALSE(own_cgroup("/user.slice/user-1000.slice/session-2.scope", "/"));
  EXPECT_FALSE(own_cgroup("/init.scope", "/"));
  EXPECT_FALSE(own_cgroup("/user.slice/user-1000.slice/user@1000.service", "/"));
}

TEST(ServiceDiscovery, CgroupCountersFeedTheSampler) {
  CgroupReader cgroups(kRoot);
  ASSERT_TRUE(cgroups.available());
  EXPECT_EQ(cgroups.usage_usec("/system.slice/api.service"), 1500000u);
  EXPECT_EQ(cgroups.memory_bytes("/system.slice/api.service"), 10485760u);
  EXPECT_EQ(cgroups.memory_bytes("/docker/3f2a9c0d11"), std::nullopt);
  ServiceWatch watch{{100}, "/system.slice/api.service"};
  auto snap = take_snapshot(ProcReader(kRoot), &watch, cgroups, {});
  EXPECT_DOUBLE_EQ(snap.service_cpu_total_s.value(), 1.5);
  EXPECT_EQ(snap.service_rss_kib, 10240u);
  watch.cgroup = "/gone";
  EXPECT_FALSE(take_snapshot(ProcReader(kRoot), &watch, cgroups, {}).service_cpu_total_s);
}

TEST(ServiceDiscovery, CgroupPressureIsItsTasksWaitForACpu) {
  CgroupReader cgroups(kRoot);
  EXPECT_EQ(cgroups.cpu_wait_usec("/system.slice/api.service"), 250000u);
  EXPECT_EQ(cgroups.cpu_wait_usec("/docker/3f2a9c0d11"), std::nullopt);  // no cpu.pressure
}

// A service watched by its cgroup: the run's own waits for a CPU are perfgate's
// threads' (schedstat) and the cgroup's tasks' (its cpu.pressure), so that the
// cpu_pressure rule leaves them out; without the cgroup's figure, unknown.
TEST(ServiceDiscovery, ACgroupServicesWaitsAreTheRunsThroughItsPressure) {
  namespace fs = std::filesystem;
  testing::TempDir root;
  fs::copy(fs::path(PERFGATE_SOURCE_DIR) / "tests/fixtures/proc/debian-vm/t1", root.path(),
           fs::copy_options::recursive);
  fs::copy(kRoot / "sys", root / "sys", fs::copy_options::recursive);
  fs::copy(kRoot / "proc/mounts", root / "proc/mounts");  // where cgroup2 is
  CgroupReader cgroups(root.path());
  ServiceWatch watch{{}, "/system.slice/api.service"};
  auto snap = take_snapshot(ProcReader(root.path()), &watch, cgroups, {});
  EXPECT_DOUBLE_EQ(snap.service_cpu_total_s.value(), 1.5);
  // 163 ms of perfgate's threads, 250 ms (250000 us) of the service's cgroup.
  EXPECT_EQ(snap.run_wait_ns.value(), 413000000u);
  watch.cgroup = "/docker/3f2a9c0d11";  // measured, but no cpu.pressure
  snap = take_snapshot(ProcReader(root.path()), &watch, cgroups, {});
  EXPECT_TRUE(snap.service_cpu_total_s);
  EXPECT_FALSE(snap.run_wait_ns);
}

// A duet whose two services share one cgroup: its CPU is this side's service's,
// and not taken from foreign CPU a second time as the companion's.
TEST(ServiceDiscovery, ACgroupSharedByBothSidesIsCountedOnce) {
  CgroupReader cgroups(kRoot);
  ServiceWatch self{{100}, "/system.slice/api.service"}, other{{200}, self.cgroup};
  auto snap = take_snapshot(ProcReader(kRoot), &self, &other, cgroups, {});
  EXPECT_DOUBLE_EQ(snap.service_cpu_total_s.value(), 1.5);
  EXPECT_FALSE(snap.companion_cpu_total_s);
  ServiceWatch elsewhere{{200}, "/docker/3f2a9c0d11"};
  snap = take_snapshot(ProcReader(kRoot), &self, &elsewhere, cgroups, {});
  EXPECT_TRUE(snap.companion_cpu_total_s);
}

TEST(ServiceDiscovery, ContainerIsRecognisedByItsPidOnesCgroup) {
  EXPECT_FALSE(in_container(ProcReader(kRoot)));
  testing::TempDir dir;
  std::filesystem::create_directories(dir / "proc/1");
  testing::write_file(dir / "proc/1/cgroup", "0::/kubepods/besteffort/pod1/3f2a\n");
  EXPECT_TRUE(in_container(ProcReader(dir.path())));
}

// Issue 42, item 17: perfgate started `sh -c` (no exec), whose child serves.
// The started shell stays the tree's root; the name is the listener's, whole
// from its argv[0] where the kernel cut its comm at 15 bytes.
TEST(ServiceDiscovery, AStartedShellIsNamedByTheDescendantThatListens) {
  testing::TempDir dir;
  auto server = dir / "demo-server-with-a-long-name";  // comm: "demo-server-wit"
  std::filesystem::create_symlink(testing::perfgate_binary(), server);
  std::string serve = "'" + server.string() + "' demo-server --port 0 --port-file '" +
                      (dir / "port").string() + "' >/dev/null 2>&1; exit $?";
  pid_t sh = fork();
  if (sh == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", serve.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(sh, 0);
  std::string port_text;
  for (int i = 0; i < 500 && (port_text.empty() || port_text.back() != '\n'); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    port_text = testing::read_file(dir / "port");
  }
  ServiceQuery q;
  q.started = sh;
  q.host = "127.0.0.1";
  q.local = true;
  q.self = getpid();
  std::optional<AttributedService> found, unlistened;
  if (!port_text.empty()) {
    q.port = static_cast<uint16_t>(std::stoi(port_text));
    found = find_service(ProcReader("/"), CgroupReader(""), q).service;
    q.port = testing::unused_port();  // nobody listens there: the started process's name
    unlistened = find_service(ProcReader("/"), CgroupReader(""), q).service;
  }
  kill(-sh, SIGKILL);
  waitpid(sh, nullptr, 0);
  ASSERT_FALSE(port_text.empty()) << "the server did not start";
  ASSERT_TRUE(found);
  EXPECT_EQ(found->name, "demo-server-with-a-long-name");
  EXPECT_EQ(found->pid, sh);
  EXPECT_EQ(found->roots, std::vector<pid_t>{sh});
  EXPECT_EQ(found->how.rfind("started by perfgate through sh, which runs it as pid ", 0), 0u)
      << found->how;
  ASSERT_TRUE(unlistened);
  EXPECT_EQ(unlistened->name, "sh");
  EXPECT_EQ(unlistened->how, "started by perfgate");
}

TEST(ServiceDiscovery, UrlHostAndPort) {
  EXPECT_EQ(url_host_port("http://127.0.0.1:8080/x"),
            std::make_pair(std::string("127.0.0.1"), uint16_t(8080)));
  EXPECT_EQ(url_host_port("https://u:p@[::1]/"), std::make_pair(std::string("::1"), uint16_t(443)));
  EXPECT_EQ(url_host_port("http://localhost"),
            std::make_pair(std::string("localhost"), uint16_t(80)));
  EXPECT_FALSE(url_host_port("http://h:99999/"));
}

}  // namespace
}  // namespace perfgate
