/* What the files of the rma program share: the rank, the size and the
 * neighbours in MPI_COMM_WORLD, a few helpers (rma.c), and the phases that
 * rma.c's main runs from rma_more.c:
 *   I  PSCW: 10 rounds in a ring (post to the left, start to the right, a
 *      put, complete, wait); 3 rounds of a 1 MiB put and a strided one
 *      into a Win_create window; then both neighbours in one group each way
 *      ended by MPI_Win_test; complete and wait outside an epoch;
 *   J  request-based ops (Rput, Rget, Raccumulate, Rget_accumulate) in a
 *      lock_all epoch, and outside a passive-target one (MPI_ERR_RMA_SYNC);
 *      the large-count forms (Put_c, Get_c, Accumulate_c, Get_accumulate_c,
 *      Win_allocate_c with Win_shared_query_c where memory is shared);
 *   K  info and attributes: the hints given at creation and by
 *      MPI_Win_set_info read back by MPI_Win_get_info, a keyval of our own
 *      set, read, deleted and set again, its delete callback run by
 *      MPI_Win_delete_attr and by MPI_Win_free;
 *   L  what MPICH's own rma tests do that the rest does not: 600 windows
 *      open at once, fetch_and_op on MPI_CHAR, accumulates of no data with
 *      types that do not match, and a shared window where odd ranks have
 *      no memory (MPI_Win_shared_query gives them size 0 and NULL), and
 *      MAXLOC and MPI_NO_OP fetches on MPI_SHORT_INT, a pair with holes
 *      (a short, padding, an int), at a displacement of one pair; SUM and
 *      a fetching BXOR of 1000 ints under exclusive locks.
 *   M  lazy locks (a lock on a rank whose memory is not mapped here is
 *      asked for with the epoch's ops, in one message): every kind of op
 *      in one exclusive epoch, checked after the unlock; an epoch of more
 *      ops than one message takes; epochs without ops; under lock_all,
 *      thousands of small puts, SUMs and gets to one rank (small ops to a
 *      rank not mapped here wait in batches), then puts and gets of 4 KiB,
 *      the largest a batch takes, the gets into an origin type with
 *      holes; a put too large for a
 *      batch held back by an exclusive lock another rank holds; every
 *      rank adding
 *      to one counter by fetch_and_op under exclusive locks (each fetched
 *      value once); an op outside a dynamic window's attached memory,
 *      reported by MPI_Win_unlock. Run on one node too, where the locks
 *      are taken at once.
 * and from rma_remote.c:
 *   N  large puts and gets to the right neighbour, into windows allocated
 *      and created: 1 MiB fenced each way; under lock_all 16 KiB pieces,
 *      a vector target type of 4 KiB blocks and a get into an origin type
 *      with holes; 64 KiB under an exclusive lock, read back after a
 *      flush; a 256 KiB Rput whose origin buffer is overwritten as soon
 *      as its request completes; 128 KiB in PSCW. A netmod with RMA (ofi) moves them by its
 *      writes and reads: the job says so (RMA_EXPECT_WINDOW_RMA), and the
 *      count of those (MPIX_Stat_get "window_rma") is checked. */
#ifndef IRIS_TEST_RMA_H
#define IRIS_TEST_RMA_H

#include "check.h"

/* In MPI_COMM_WORLD; set by main (rma.c). */
extern int rank, size, right, left;

/* CLOCK_MONOTONIC, in seconds. */
double seconds(void);
/* The class of a return code (MPI_SUCCESS stays MPI_SUCCESS). */
int error_class(int code);
/* MPI_Win_allocate's size in bytes, rounded up to a multiple of 64: after a
 * segment whose size is not a multiple of 16 bytes, MPICH 4.0.2 (ch4:ucx, one
 * node) puts into the wrong place and MPI_WIN_BASE is not the base pointer. */
MPI_Aint padded(size_t bytes);
/* Between others' RMA and the target's own loads or stores of its window
 * memory (a barrier apart), the unified model still asks for MPI_Win_sync in
 * an epoch of the target's own (MPI 4.0, 12.7). */
void sync_self(MPI_Win win);
/* Whether an op outside the window must be reported (Iris: yes; another
 * MPI may leave it undefined). */
extern const int kRangeMustBeReported;

#ifdef IRIS_MPI_H_INCLUDED
/* How many messages of the kinds named (MPIX_Stat_get's names) this rank has
 * sent so far: a phase counts what one step costs from two of these. */
static inline MPI_Count sent_so_far(const char *const *names, int n) {
  MPI_Count sum = 0, v = 0;
  for (int i = 0; i < n; ++i) sum += (MPIX_Stat_get(names[i], &v), v);
  return sum;
}
#endif

/* rma_more.c's phases, I to M. */
void test_pscw(void);
void test_requests(void);
void test_info_attrs(void);
void test_mpich_cases(void);
void test_lazy_locks(void);
/* rma_remote.c's phase N. */
void test_remote(void);

/* check.h's failure counter is one per file: main adds rma_more.c's. */
int rma_more_failures(void);
int rma_remote_failures(void);

#endif
