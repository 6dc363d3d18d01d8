/* Iris mpi.h, part: fault tolerance after a rank dies (ULFM, as Open MPI
 * and MPICH spell it with MPIX_, and the MPI-5 draft's MPIX_Comm_get_failed
 * and MPIX_Comm_ack_failed). Programs include <mpi.h>, which includes every
 * part; each part compiles on its own.
 *
 * Only with recovery on (mpiexec --enable-recovery, which sets
 * IRIS_RECOVERY=1): then an operation that involves a dead rank ends with
 * MPIX_ERR_PROC_FAILED through the communicator's error handler (set
 * MPI_ERRORS_RETURN to see it), a receive from MPI_ANY_SOURCE answers
 * MPIX_ERR_PROC_FAILED_PENDING while a failure is not acknowledged, and a
 * revoked communicator ends every operation with MPIX_ERR_REVOKED. The
 * survivors agree (MPIX_Comm_agree) and shrink the communicator to
 * themselves (MPIX_Comm_shrink). device/protocols/recovery.hpp says how. */
#ifndef IRIS_MPI_FT_H_INCLUDED
#define IRIS_MPI_FT_H_INCLUDED

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MPIX_ULFM 1 /* the MPIX_ calls below are here */

int MPIX_Comm_revoke(MPI_Comm comm);
int MPIX_Comm_is_revoked(MPI_Comm comm, int *flag);
int MPIX_Comm_shrink(MPI_Comm comm, MPI_Comm *newcomm);
int MPIX_Comm_ishrink(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request);
int MPIX_Comm_agree(MPI_Comm comm, int *flag);
int MPIX_Comm_iagree(MPI_Comm comm, int *flag, MPI_Request *request);
int MPIX_Comm_failure_ack(MPI_Comm comm);
int MPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group *failed_group);
int MPIX_Comm_get_failed(MPI_Comm comm, MPI_Group *failed_group);
int MPIX_Comm_ack_failed(MPI_Comm comm, int num_to_ack, int *num_acked);

#ifdef __cplusplus
}
#endif

#endif /* IRIS_MPI_FT_H_INCLUDED */
