// MPI_Init and MPI_Finalize of the device (setup.cpp): the one place that
// knows every layer below, so that none of them has to know it.
#pragma once

namespace iris::device {

// MPI_Init: builds `rt`. Returns an MPI error class.
int runtime_init(int required_thread_level);
// MPI_Finalize: drains, says IRIS_STATS, closes the transports, frees `rt`.
int runtime_finalize();

}  // namespace iris::device
