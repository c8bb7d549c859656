// placeholder: being written
#include "perfgate/command.h"

namespace perfgate {

void register_report_command(CommandSet&) {}

}  // namespace perfgate
