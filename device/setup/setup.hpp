// MPI_Init and MPI_Finalize of the device (setup.cpp): the one place that
// knows every layer below, so that none of them has to know it.
#pragma once

namespace iris::device {

// MPI_Init: builds `rt`. Returns an MPI error class. A start after an
// earlier runtime_finalize(true) reuses the launcher's client; after
// runtime_finalize(false) it is a fatal error.
int runtime_init(int required_thread_level);
// MPI_Finalize: drains, says IRIS_STATS, closes the transports, frees `rt`.
// With `may_start_again` (sessions only, MPI_Init never ended), the
// launcher's client stays open until the process exits, for a later start.
int runtime_finalize(bool may_start_again = false);

}  // namespace iris::device
