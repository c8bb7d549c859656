#pragma once
// Paired mode where both sides run one installed program: a build that installs
// outside its checkout (make install into /usr/local, one shared venv) makes the
// candidate and the baseline the same build, and the pair an A/A comparison.

#include <optional>
#include <string>

#include "perfgate/profile/profile.h"

namespace perfgate {

/// The executable both services run, when it looks like one build compared with
/// itself: the two commands resolve (PATH, else the service's cwd) to one file
/// (same st_dev and st_ino) that lies outside both working directories, the
/// working directories differ, and no argument of either side names an existing
/// file inside its own working directory. `sh -c "exec app ..."` is looked
/// through to `app`. nullopt otherwise, or when either side starts nothing.
/// `path` is the PATH the services are started with.
std::optional<std::string> shared_installed_executable(const ServiceSpec& candidate,
                                                       const ServiceSpec& baseline,
                                                       const std::string& path);

/// The one-line warning for `executable` (shared_installed_executable's answer).
std::string shared_executable_warning(const std::string& executable);

}  // namespace perfgate
