#include "perfgate/cli/cli.h"

int main(int argc, char** argv) {
  return perfgate::run_cli(argc, argv);
}
