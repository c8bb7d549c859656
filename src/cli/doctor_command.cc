// `perfgate doctor [PROFILE]`: the preflight a careful engineer does before a load test.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "perfgate/cli/command.h"
#include "perfgate/core/exit_status.h"
#include "perfgate/host/doctor.h"

namespace perfgate {

void register_doctor_command(CommandSet& commands) {
  auto path = std::make_shared<std::filesystem::path>();
  auto* doctor = commands.app().add_subcommand(
      "doctor", "Check this load machine before a test: limits, TCP settings, CPU, memory");
  doctor->add_option("profile", *path, "Profile whose connections the limits must allow");
  commands.add(doctor, [path](const CommandContext& ctx) {
    int connections = path->empty() ? 0 : load_profile(*path, ctx.env).load.connections;
    // One second of CPU sampling: long enough to catch a busy neighbour.
    auto checks = doctor_checks(gather_doctor_facts(std::chrono::seconds(1)), connections);
    std::cout << doctor_table(checks);
    return to_int(has_warnings(checks) ? ExitStatus::kWarn : ExitStatus::kPass);
  });
}

}  // namespace perfgate
