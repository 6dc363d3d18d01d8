/* What the seeded collective tests (coll_node.c, coll_allreduce.c) share:
 * one pseudo-random sequence that every rank draws alike, the values ranks
 * contribute, and a non-commutative op with each rank's operand. */
#ifndef IRIS_TEST_SEEDED_H
#define IRIS_TEST_SEEDED_H

#include <stdint.h>

#include "check.h"

/* The sequence's state: main sets it from the seed. */
static uint64_t state;

/* The next number below `below`, the same on every rank. */
static inline unsigned next(unsigned below) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (unsigned)(state >> 33) % below;
}

/* What rank r contributes at element i in iteration it. */
static inline int value(int r, int i, int it) {
  return (r * 31 + i * 7 + it * 13) % 1000 - 500;
}

/* x -> a*x + b as two unsigned; in o inout composes in rank order: the
 * lower rank's map applied last. Not commutative. Arithmetic mod 2^32. */
static inline void compose(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  const unsigned *f = in;
  unsigned *g = inout;
  for (int i = 0; i < *len; ++i) {
    const unsigned a = f[2 * i] * g[2 * i];
    const unsigned b = f[2 * i] * g[2 * i + 1] + f[2 * i + 1];
    g[2 * i] = a;
    g[2 * i + 1] = b;
  }
}

/* Rank r's map at element i in iteration it (a is odd). */
static inline void map_of(int r, int i, int it, unsigned *m) {
  m[0] = (unsigned)(2 * r + i + it) | 1U;
  m[1] = (unsigned)(r * 5 + i * 3 + it);
}

#endif
