/* Iris mpi.h, part: active messages after IBM LAPI (MPIX_). Programs include
 * <mpi.h>, which includes every part; each part compiles on its own.
 *
 * A header handler, registered in the same order on every rank, runs at the
 * target when a message starts to arrive and says where its data goes; a
 * completion handler runs once the data is there. Counters count what has
 * happened: the origin counter when the origin buffer may be reused, the
 * target counter (named by the address MPIX_Counter_address gave at the
 * target) after the completion handler, the completion counter at the
 * origin after the target counter. Put and get move bytes to and from
 * memory the target exposed. Operations complete while the target computes
 * without calling MPI (a progress thread, IRIS_ASYNC_PROGRESS; shared
 * memory needs none for put and get). Under recovery (IRIS_RECOVERY=1) an
 * op to a rank that died ends with MPIX_ERR_PROC_FAILED: MPIX_Counter_wait
 * on a counter it would have bumped, short of its value, returns that
 * (until MPIX_Counter_set), and so does the next MPIX_Am_fence covering the
 * rank. The top README has an example. */
#ifndef IRIS_MPI_AM_H_INCLUDED
#define IRIS_MPI_AM_H_INCLUDED

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct iris_counter *MPIX_Counter; /* opaque */
#define MPIX_COUNTER_NULL ((MPIX_Counter)0)
/* The largest user header an MPIX_Amsend may carry. */
#define MPIX_AM_UHDR_MAX 1024

typedef void MPIX_Am_completion_fn(MPI_Comm comm, void *user_info);
typedef void *MPIX_Am_header_fn(MPI_Comm comm, int origin, const void *uhdr, int uhdr_len,
                                MPI_Aint data_len, MPIX_Am_completion_fn **completion,
                                void **user_info);

int MPIX_Am_register(MPIX_Am_header_fn *fn, int *handler);
int MPIX_Amsend(int handler, const void *uhdr, int uhdr_len, const void *data, MPI_Aint data_len,
                int target, MPI_Comm comm, MPI_Aint target_counter, MPIX_Counter origin_counter,
                MPIX_Counter completion_counter);
int MPIX_Put(const void *origin, MPI_Aint bytes, int target, MPI_Aint target_addr, MPI_Comm comm,
             MPI_Aint target_counter, MPIX_Counter origin_counter, MPIX_Counter completion_counter);
int MPIX_Get(void *origin, MPI_Aint bytes, int target, MPI_Aint target_addr, MPI_Comm comm,
             MPI_Aint target_counter, MPIX_Counter origin_counter);
int MPIX_Counter_create(MPIX_Counter *counter);
int MPIX_Counter_free(MPIX_Counter *counter);
int MPIX_Counter_get(MPIX_Counter counter, MPI_Count *value);
int MPIX_Counter_set(MPIX_Counter counter, MPI_Count value);
int MPIX_Counter_wait(MPIX_Counter counter, MPI_Count value);
int MPIX_Counter_address(MPIX_Counter counter, MPI_Aint *address);
int MPIX_Expose(void *base, MPI_Aint bytes);
int MPIX_Conceal(void *base);
int MPIX_Am_fence(MPI_Comm comm, int target);

#ifdef __cplusplus
}
#endif

#endif /* IRIS_MPI_AM_H_INCLUDED */
