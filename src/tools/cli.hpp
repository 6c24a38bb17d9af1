#pragma once
// The ptk command line of this build: `ptk <command> ...` with argv as main receives it. Returns the exit status
// (exit_status.hpp); errors are reported on stderr in one line. Called by a one-backend build's main (ptk.cpp)
// and by a backend module (backend_module.cpp) on behalf of an install's launcher.
namespace ptk::tools {
int cli_main(int argc, char** argv);
}
