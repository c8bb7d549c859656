#pragma once

#include <sys/types.h>

#include <string>

#include "perfgate/profile/profile.h"

namespace perfgate {

/// The service under test, started by perfgate in its own process group and
/// always stopped with it: SIGTERM to the group, SIGKILL after a grace period.
class ServiceProcess {
 public:
  /// Starts `spec.command`; throws Error when it cannot be started.
  explicit ServiceProcess(const ServiceSpec& spec);
  ~ServiceProcess();
  ServiceProcess(const ServiceProcess&) = delete;
  ServiceProcess& operator=(const ServiceProcess&) = delete;

  /// Polls `spec.ready_url` until it answers; throws Error when the service
  /// exits first or does not answer within `spec.ready_timeout`.
  void wait_ready();
  /// True while the process has not exited.
  bool running();
  /// How it ended, e.g. "exited with status 1"; meaningful once running() is false.
  std::string exit_description() const;
  void stop(Nanos grace = std::chrono::seconds(5));
  pid_t pid() const { return pid_; }
  const std::string& command() const { return spec_.command.front(); }

 private:
  ServiceSpec spec_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  bool stopped_ = false;
  int exit_status_ = 0;
};

}  // namespace perfgate
