/* What the files of the ulfm program share (ulfm.c says what each case
 * checks): the victims and this rank, from ulfm.c, and the cases of
 * ulfm_more.c. */
#pragma once

#include <mpi.h>

#include "check.h"

enum { most = 64 };

extern int victims[most];
extern int victim_count;
extern int me;         /* rank in MPI_COMM_WORLD */
extern int world_size; /* of MPI_COMM_WORLD */

int is_victim(int r);
/* Whether `err` is of a failure class (PROC_FAILED, _PENDING, REVOKED). */
int failure(int err);

/* WHERE "none". */
void revoke_intercomm(void);
void revoke_during_read(void);
void revoke_after_mprobe(void);
void revoke_in_collectives(void);
/* WHERE "intercomm". */
void intercomm_survives(void);
/* check.h's counter is one per file: ulfm_more.c's failed checks. */
int ulfm_more_failures(void);
