// The backends behind pmi::client_open(). Private to pmi/.
//
// client_open() asks them in order; each returns nullptr when the
// environment says its launcher did not start this process:
//   pmi1       the PMI-1 wire protocol (MPICH's Hydra: PMI_FD, or PMI_PORT + PMI_ID)
//   pmix       a PMIx server (Iris's mpiexec, Open MPI's mpirun, srun --mpi=pmix)
//   singleton  always succeeds: rank 0 of a job of size 1
#pragma once

#include <memory>
#include <string_view>

#include "pmi/pmi.hpp"

namespace iris::pmi {

// nullptr when no launcher is present (PMIx then falls back to its own
// singleton, which this function finalizes again). Throws pmi::error when the
// environment names a PMIx server that cannot be reached.
std::unique_ptr<client> pmix_client_open();

std::unique_ptr<client> singleton_client_open();

// nullptr unless PMI_FD or PMI_PORT is set. Throws pmi::error when the
// launcher named there does not answer the protocol.
std::unique_ptr<client> pmi1_client_open();

// Throws pmi::error unless `key` and `value` fit the limits in pmi.hpp, so that
// every backend rejects the same cards.
void check_card(std::string_view key, std::string_view value);

}  // namespace iris::pmi
