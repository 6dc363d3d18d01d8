/* What the files of the threads program share: the rank and size, the
 * arguments, the threads' own communicators, TCHECK for checks made on any
 * thread, the message pattern (sizes and bytes), run_threads, and the phases
 * that threads.c's main runs from threads_comms.c (E, I) and threads_lock.c
 * (F, G, J, K). */
#ifndef IRIS_TEST_THREADS_H
#define IRIS_TEST_THREADS_H

#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { T = 4, MAXTAG = T };

/* In MPI_COMM_WORLD; set by main (threads.c). */
extern int rank, size;
extern int messages;         /* per thread: the first argument (60) */
extern int expect_aside;     /* the second argument is `aside` (J, K) */
extern int rendezvous_bytes; /* G's message: past the live eager limit */
extern MPI_Comm own[T];      /* one per thread */

/* TCHECK's failed checks, from any thread: atomics. main adds them to
 * check.h's count. */
extern int failures;

/* The file name of a path (TCHECK names the file, not the path). */
static inline const char *threads_file_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

#define TCHECK(cond, ...)                                                                      \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", rank, threads_file_name(__FILE__), \
              __LINE__, #cond);                                                                \
      fprintf(stderr, __VA_ARGS__);                                                            \
      fputc('\n', stderr);                                                                     \
      __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);                                      \
    }                                                                                          \
  } while (0)

/* threads.c. Message `seq` of thread t has size_of(seq, t) bytes, which
 * fill writes as sent by rank `from`; bad_byte returns the first byte that
 * differs, or -1. */
int size_of(int seq, int t);
void fill(unsigned char *buf, int n, int from, int t, int seq);
int bad_byte(const unsigned char *buf, int n, int from, int t, int seq);

/* Runs body on T threads, each given its index (a long), joins them, then
 * waits in MPI_Barrier. */
void run_threads(void *(*body)(void *));

/* threads_comms.c: thread bodies for run_threads. */
void *constructors(void *arg); /* E */
void *intercomms(void *arg);   /* I */

/* threads_lock.c: each runs its phase's threads, with the barriers they
 * share. */
void blocked_run(void);     /* F */
void left_posted_run(void); /* G: the named receive, then the wildcard one */
void held_lock_run(void);   /* J, then K */

#endif
