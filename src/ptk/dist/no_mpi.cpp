// A build without MPI (PTK_ENABLE_MPI=OFF, or AUTO without an MPI found): the world stays one rank. Compiled instead
// of mpi_backend.cpp.
#include <cstdlib>

#include "ptk/dist/backend.hpp"
#include "ptk/dist/comm.hpp"

namespace ptk::dist {

bool built_with_mpi() { return false; }

// Under a launcher with more than one rank, every rank would train alone: refused.
bool start_mpi(int*, char***) {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (size == nullptr || *size == '\0') size = std::getenv("PMI_SIZE");
  if (size != nullptr && *size != '\0' && std::string(size) != "1")
    throw UsageError(std::string("dist: started by an MPI launcher as one of ") + size +
                " ranks, but this ptk was built without MPI (PTK_ENABLE_MPI=OFF): every rank would train alone. "
                "Install libopenmpi-dev and reconfigure, or run without mpirun");
  return false;
}

void finish_mpi() {}

}  // namespace ptk::dist
