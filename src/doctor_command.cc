// placeholder: being written
#include "perfgate/command.h"

namespace perfgate {

void register_doctor_command(CommandSet&) {}

}  // namespace perfgate
