#include "perfgate/host/placement.h"

#include <unistd.h>

#include <algorithm>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

bool all_allowed(const CpuList& cpus, const CpuList& allowed) {
  return std::all_of(cpus.begin(), cpus.end(), [&](int cpu) {
    return std::binary_search(allowed.begin(), allowed.end(), cpu);
  });
}

Placement fixed_placement(const PlacementSpec& spec, const CpuList& allowed) {
  for (const auto& [key, cpus] : {std::pair{"load", &spec.load}, {"service", &spec.service}})
    if (!all_allowed(*cpus, allowed))
      throw Error(std::string("placement.") + key + ": \"" + format_cpu_list(*cpus) +
                  "\" names a CPU this process may not use; allowed: " + format_cpu_list(allowed) +
                  " (its affinity and cgroup cpuset)");
  return {spec.load, spec.service, true, "from the profile"};
}

Placement auto_placement(int load_threads, const CpuList& allowed, bool services_started) {
  Placement p;
  auto n = static_cast<int>(allowed.size());
  std::string cpus = std::to_string(n) + " CPU" + (n == 1 ? "" : "s") + " allowed (" +
                     format_cpu_list(allowed) + ")";
  if (n < 2) {
    p.how = "auto: " + cpus + ", nothing to split";
    return p;
  }
  if (n < 4) {
    // Measured on 2 cores with a busy neighbour: pinned runs made 4-9x fewer
    // requests, each handoff waiting on the other core's neighbour. Small hosts
    // are left to the scheduler unless the profile names the CPUs.
    p.how = "auto: " + cpus + ", too few to split safely; name the CPUs to pin";
    return p;
  }
  if (!services_started) {
    // A service perfgate did not start is left as it is unless the profile
    // asks; the load alone pinned would only take cores from it.
    p.how = "auto: perfgate does not start the service; set placement to pin one it watches";
    return p;
  }
  int load = std::clamp(load_threads, 1, n / 2);
  p.service.assign(allowed.begin(), allowed.end() - load);
  p.load.assign(allowed.end() - load, allowed.end());
  p.how = "auto: " + cpus;
  return p;
}

bool starts(const std::optional<ServiceSpec>& service) {
  return service && !service->command.empty();
}

}  // namespace

std::string Placement::describe() const {
  if (!pinned()) return "off";
  std::string out;
  if (!load.empty()) out = "load " + format_cpu_list(load);
  if (!service.empty()) out += (out.empty() ? "" : ", ") + ("service " + format_cpu_list(service));
  return out;
}

Placement choose_placement(const PlacementSpec& spec, int load_threads, const CpuList& allowed,
                           bool services_started) {
  if (spec.mode == "off") return {{}, {}, false, "off in the profile"};
  if (spec.mode == "fixed") return fixed_placement(spec, allowed);
  return auto_placement(load_threads, allowed, services_started);
}

CpuList allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CpuList out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  return out;
}

Placement resolve_placement(const Profile& profile) {
  bool started = starts(profile.service) && (!profile.paired || starts(profile.paired->service));
  return choose_placement(profile.placement, profile.load.threads, allowed_cpus(), started);
}

void record_placement(HostFingerprint& host, const Placement& placement) {
  if (placement.pinned()) host.fields["placement"] = placement.describe();
}

cpu_set_t to_cpu_set(const CpuList& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus)
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  return set;
}

CpuList task_cpus(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CpuList out;
  if (sched_getaffinity(tid, sizeof set, &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  return out;
}

bool set_task_cpus(pid_t tid, const CpuList& cpus) {
  cpu_set_t set = to_cpu_set(cpus);
  return sched_setaffinity(tid, sizeof set, &set) == 0;
}

ThreadCpusScope::ThreadCpusScope(const CpuList& cpus) {
  if (cpus.empty() || sched_getaffinity(0, sizeof previous_, &previous_) != 0) return;
  cpu_set_t set = to_cpu_set(cpus);
  set_ = sched_setaffinity(0, sizeof set, &set) == 0;
}

ThreadCpusScope::~ThreadCpusScope() {
  if (set_) sched_setaffinity(0, sizeof previous_, &previous_);
}

PinnedTrees::PinnedTrees(const ProcReader& proc, const std::vector<pid_t>& roots,
                         const CpuList& cpus) {
  if (cpus.empty()) return;
  for (pid_t root : roots)
    for (pid_t pid : proc.process_tree(root, getpid()))  // never perfgate's own threads
      for (const auto& thread : proc.threads(std::to_string(pid))) {
        CpuList before = task_cpus(thread.pid);
        if (!before.empty() && set_task_cpus(thread.pid, cpus))
          saved_.emplace_back(thread.pid, before);
      }
}

PinnedTrees::~PinnedTrees() {
  for (const auto& [tid, cpus] : saved_) set_task_cpus(tid, cpus);
}

}  // namespace perfgate
