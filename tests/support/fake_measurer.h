#pragma once

// A fake load for the gate's unit tests: scripted windows replayed as a
// Measurement, so that every path of the pipeline runs without load, in
// microseconds, with figures that do not depend on this machine.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "gate/gate_pipeline.h"

namespace perfgate::testing {

/// One measurement window: `responses` answered in one second, each taking
/// `latency`, and `errors` socket errors.
struct ScriptedWindow {
  uint64_t responses = 1000;
  std::chrono::milliseconds latency{10};
  uint64_t errors = 0;
  double foreign_cpu_pct = 0;       // what the sampler saw of other processes, % of the host
  double generator_thread_pct = 0;  // the busiest load thread, % of a core
};

/// `windows` as the engine would have measured them under `profile`'s load;
/// `service_cpu_s[i]`, when given, is the attributed service's CPU in window i.
inline Measurement scripted_measurement(const Profile& profile,
                                        const std::vector<ScriptedWindow>& windows,
                                        bool aborted = false,
                                        const std::vector<double>& service_cpu_s = {}) {
  Measurement m;
  m.load.engine = "fake";
  m.load.threads = profile.load.threads;
  m.load.connections = profile.load.connections;
  m.origin = SteadyClock::now();
  m.aborted = aborted;
  for (size_t i = 0; i < windows.size(); ++i) {
    Iteration it;
    it.index = static_cast<int>(i);
    it.discarded = static_cast<int>(i) < profile.repeat.discard;
    it.duration = std::chrono::seconds(1);
    it.stats.responses = windows[i].responses;
    it.stats.errors.connect = windows[i].errors;
    for (uint64_t r = 0; r < windows[i].responses; ++r) {
      it.stats.statuses.count(200);
      it.stats.latency.record(windows[i].latency);
    }
    m.load.iterations.push_back(it);
    WindowSummary w;
    w.iteration = static_cast<int>(i);
    w.samples = 1;
    if (i < service_cpu_s.size()) w.service_cpu_s = service_cpu_s[i];
    w.foreign_cpu_mean_pct = w.foreign_cpu_max_pct = windows[i].foreign_cpu_pct;
    w.generator_thread_pct = w.generator_thread_max_pct = windows[i].generator_thread_pct;
    m.windows.push_back(w);
    int64_t from = 1'700'000'000'000 + static_cast<int64_t>(i) * 1000;
    m.wall_ms.emplace_back(from, from + 1000);
  }
  return m;
}

/// The same window `count` times, with a small spread of throughput so that rank
/// tests see an order rather than ties. The latency stays put: a window's p99
/// moves by whole milliseconds here, and a 1 ms jitter on 5 ms would be a
/// latency noise of 20 %, too loud for the default limits to be judged at all.
inline std::vector<ScriptedWindow> steady(int count, uint64_t responses,
                                          std::chrono::milliseconds latency) {
  std::vector<ScriptedWindow> out;
  for (int i = 0; i < count; ++i) out.push_back({responses + static_cast<uint64_t>(i), latency, 0});
  return out;
}

/// A Measurer whose load replays `script` (called with the profile), counting
/// how many loads it ran; `during` runs inside each load.
struct FakeMeasurer {
  std::function<std::vector<ScriptedWindow>(const Profile&)> script;
  bool aborted = false;
  std::function<void()> during;
  /// The service's CPU-seconds in each window (none: the service is not attributed).
  std::function<std::vector<double>(const Profile&)> service_cpu;
  std::shared_ptr<int> loads = std::make_shared<int>(0);

  std::vector<double> cpu(const Profile& p) const {
    return service_cpu ? service_cpu(p) : std::vector<double>{};
  }

  Measurer measurer() const {
    Measurer m;
    auto self = *this;
    m.load = [self](const Profile& p, const std::atomic<bool>&, std::optional<WallTime>) {
      ++*self.loads;
      if (self.during) self.during();
      return scripted_measurement(p, self.script(p), self.aborted, self.cpu(p));
    };
    m.paired = [self](const Profile& cand, const Profile& base, const std::atomic<bool>&) {
      ++*self.loads;
      if (self.during) self.during();
      PairedMeasurement pm;
      pm.baseline = scripted_measurement(base, self.script(base), false, self.cpu(base));
      pm.candidate = scripted_measurement(cand, self.script(cand), self.aborted, self.cpu(cand));
      return pm;
    };
    m.host = [] {
      HostFingerprint h;
      h.fields = {{"cpu_model", "fake"}, {"cpus", "2"}};
      return h;
    };
    return m;
  }
};

}  // namespace perfgate::testing
