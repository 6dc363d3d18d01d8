/* What the files of the coll program share: the rank and size, the roots
 * every rooted collective is tried with, the phases that coll.c's main runs
 * from coll_ops.c and coll_errors.c, and those files' failure counts. */
#ifndef IRIS_TEST_COLL_H
#define IRIS_TEST_COLL_H

#include "check.h"

/* In MPI_COMM_WORLD; set by main (coll.c). */
extern int rank;
extern int size;

/* The roots every rooted collective is tried with (coll.c's pick_roots). */
extern int roots[3];

/* coll_ops.c: every predefined op on every type it allows, MINLOC/MAXLOC
 * ties, MPI_REPLACE and MPI_NO_OP (predefined_ops); a non-commutative user
 * op (user_op). */
void predefined_ops(void);
void user_op(void);

/* coll_errors.c: error classes through the int and the large-count
 * bindings. */
void errors(void);
void errors_c(void);

/* check.h's failure counter (check_failures) is one per file: main adds
 * these files' counts to coll.c's before it reports and finishes. */
int coll_ops_failures(void);
int coll_errors_failures(void);

#endif
