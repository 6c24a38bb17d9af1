// ptk of a one-backend build (build/<preset>/ptk): the command line linked with this build's backend. An
// install's bin/ptk is the launcher (launcher/), which runs the same command line from a backend module.
#include "cli.hpp"

int main(int argc, char** argv) { return ptk::tools::cli_main(argc, argv); }
