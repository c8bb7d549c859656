// placeholder: being written
#include "perfgate/command.h"

namespace perfgate {

void register_store_command(CommandSet&) {}

}  // namespace perfgate
