/* Nonblocking, persistent and neighbourhood collectives, at any number of
 * ranks. Every collective is checked element by element at a small count, a
 * count past the eager limit (rendezvous) and zero; reductions also with a
 * non-commutative user op (composition of affine maps, so that any change of
 * order shows) and over a derived type. Then: a collective overlapped with
 * point-to-point traffic on the same communicator with the tags the
 * collectives use (nothing cross-matches); several collectives outstanding
 * at once, completed by Waitall in another order and by Waitany; persistent
 * collectives started several times with new data; the blocking Alltoallw
 * and Reduce_scatter(_block); the neighbourhood collectives on a periodic
 * 2-D grid and a distributed graph; an op and a type freed while a
 * nonblocking and a persistent reduction use them; and argument errors
 * under MPI_ERRORS_RETURN. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank;
static int size;

enum { modulus = 1000003 };

static int val(int r, int i, int salt) {
  return (r * 7919 + i * 31 + salt * 1009) % modulus;
}

static int mod(int64_t v) {
  return (int)(((v % modulus) + modulus) % modulus);
}

/* (a, b) stands for x -> a x + b; in (lower ranks) applies first. */
static void compose(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  const int *p = in;
  int *q = inout;
  for (int i = 0; i < *len; ++i) {
    const int64_t a1 = p[2 * i], b1 = p[2 * i + 1], a2 = q[2 * i], b2 = q[2 * i + 1];
    q[2 * i] = mod(a1 * a2);
    q[2 * i + 1] = mod(b1 * a2 + b2);
  }
}

/* The map of rank r, element i. */
static void map_of(int r, int i, int *a, int *b) {
  *a = 2 + (r * 3 + i) % 11;
  *b = 1 + (r * 5 + i * 7) % 13;
}

/* The composition of the maps of ranks lo..hi (inclusive), in rank order. */
static void fold(int lo, int hi, int i, int *a, int *b) {
  int64_t fa = 1, fb = 0;
  for (int r = lo; r <= hi; ++r) {
    int ra = 0, rb = 0;
    map_of(r, i, &ra, &rb);
    fa = mod(fa * ra);
    fb = mod(fb * ra + rb);
  }
  *a = (int)fa;
  *b = (int)fb;
}

static int sum_of(int i, int salt, int lo, int hi) {
  int64_t s = 0;
  for (int r = lo; r <= hi; ++r) s += val(r, i, salt);
  return (int)s;
}

static void wait_one(MPI_Request *r, const char *what) {
  CHECK(*r != MPI_REQUEST_NULL, "%s: no request", what);
  CHECK(MPI_Wait(r, MPI_STATUS_IGNORE) == MPI_SUCCESS, "%s: wait", what);
  CHECK(*r == MPI_REQUEST_NULL, "%s: request not freed", what);
}

static void test_barrier_bcast(int n) {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  /* Test until done: the schedule advances inside MPI_Test. */
  int flag = 0;
  while (!flag) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
  CHECK(r == MPI_REQUEST_NULL, "ibarrier request not freed");
  int *buf = malloc(sizeof(int) * (size_t)(n + 1));
  for (int root = 0; root < size; ++root) {
    for (int i = 0; i < n; ++i) buf[i] = rank == root ? val(root, i, 1) : -1;
    MPI_Ibcast(buf, n, MPI_INT, root, MPI_COMM_WORLD, &r);
    wait_one(&r, "ibcast");
    for (int i = 0; i < n; ++i) {
      CHECK(buf[i] == val(root, i, 1), "ibcast n %d root %d [%d] = %d", n, root, i, buf[i]);
    }
  }
  free(buf);
}

static void test_reductions(int n, MPI_Op affine, MPI_Datatype pair) {
  /* Zeroed: with n = 0 nothing is written before the calls read them. */
  int *in = calloc((size_t)(2 * n + 1) * (size_t)size, sizeof(int));
  int *out = calloc((size_t)(2 * n + 1) * (size_t)size, sizeof(int));
  MPI_Request r;
  for (int i = 0; i < n; ++i) in[i] = val(rank, i, 2);
  for (int root = 0; root<size; root += size> 2 ? size - 1 : 1) {
    for (int i = 0; i < n; ++i) out[i] = -1;
    MPI_Ireduce(in, out, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &r);
    wait_one(&r, "ireduce");
    for (int i = 0; rank == root && i < n; ++i) {
      CHECK(out[i] == sum_of(i, 2, 0, size - 1), "ireduce n %d root %d [%d]", n, root, i);
    }
    /* Non-commutative: rank order whatever the root. */
    for (int i = 0; i < n; ++i) map_of(rank, i, &in[2 * i], &in[2 * i + 1]);
    MPI_Ireduce(in, out, n, pair, affine, root, MPI_COMM_WORLD, &r);
    wait_one(&r, "ireduce affine");
    for (int i = 0; rank == root && i < n; ++i) {
      int a = 0, b = 0;
      fold(0, size - 1, i, &a, &b);
      CHECK(out[2 * i] == a && out[2 * i + 1] == b, "ireduce affine n %d root %d [%d]", n, root, i);
    }
    for (int i = 0; i < n; ++i) in[i] = val(rank, i, 2);
    /* In place at the root. */
    int *mine = rank == root ? out : in;
    for (int i = 0; i < n; ++i) mine[i] = val(rank, i, 4);
    MPI_Ireduce(rank == root ? MPI_IN_PLACE : in, mine, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD,
                &r);
    wait_one(&r, "ireduce in place");
    for (int i = 0; rank == root && i < n; ++i) {
      CHECK(out[i] == sum_of(i, 4, 0, size - 1), "ireduce ip n %d root %d [%d]", n, root, i);
    }
    for (int i = 0; i < n; ++i) in[i] = val(rank, i, 2);
  }
  MPI_Iallreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
  wait_one(&r, "iallreduce");
  for (int i = 0; i < n; ++i) CHECK(out[i] == sum_of(i, 2, 0, size - 1), "iallreduce [%d]", i);
  /* In place. */
  for (int i = 0; i < n; ++i) out[i] = val(rank, i, 3);
  MPI_Iallreduce(MPI_IN_PLACE, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
  wait_one(&r, "iallreduce in place");
  for (int i = 0; i < n; ++i) CHECK(out[i] == sum_of(i, 3, 0, size - 1), "iallreduce ip [%d]", i);
  /* Scan and Exscan with the non-commutative op. */
  for (int i = 0; i < n; ++i) map_of(rank, i, &in[2 * i], &in[2 * i + 1]);
  MPI_Iscan(in, out, n, pair, affine, MPI_COMM_WORLD, &r);
  wait_one(&r, "iscan");
  for (int i = 0; i < n; ++i) {
    int a = 0, b = 0;
    fold(0, rank, i, &a, &b);
    CHECK(out[2 * i] == a && out[2 * i + 1] == b, "iscan n %d [%d]", n, i);
  }
  MPI_Iexscan(in, out, n, pair, affine, MPI_COMM_WORLD, &r);
  wait_one(&r, "iexscan");
  for (int i = 0; rank > 0 && i < n; ++i) {
    int a = 0, b = 0;
    fold(0, rank - 1, i, &a, &b);
    CHECK(out[2 * i] == a && out[2 * i + 1] == b, "iexscan n %d [%d]", n, i);
  }
  /* Reduce_scatter_block and Reduce_scatter, nonblocking and blocking. */
  for (int i = 0; i < n * size; ++i) in[i] = val(rank, i, 4);
  MPI_Ireduce_scatter_block(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
  wait_one(&r, "ireduce_scatter_block");
  for (int i = 0; i < n; ++i) {
    CHECK(out[i] == sum_of(rank * n + i, 4, 0, size - 1), "ireduce_scatter_block [%d]", i);
  }
  int *counts = malloc(sizeof(int) * (size_t)size);
  int total = 0;
  for (int k = 0; k < size; ++k) total += counts[k] = (n + k) % (n + 1);
  int first = 0;
  for (int k = 0; k < rank; ++k) first += counts[k];
  for (int blocking = 0; blocking < 2; ++blocking) {
    for (int i = 0; i < counts[rank]; ++i) out[i] = -1;
    if (blocking) {
      MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    } else {
      MPI_Ireduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
      wait_one(&r, "ireduce_scatter");
    }
    for (int i = 0; i < counts[rank]; ++i) {
      CHECK(out[i] == sum_of(first + i, 4, 0, size - 1), "reduce_scatter b%d [%d]", blocking, i);
    }
  }
  (void)total;
  free(counts);
  free(in);
  free(out);
}

static void test_gathers(int n) {
  const size_t all = (size_t)n * (size_t)size + 1;
  int *send = malloc(sizeof(int) * all);
  int *recv = malloc(sizeof(int) * all);
  int *counts = malloc(sizeof(int) * (size_t)size);
  int *displs = malloc(sizeof(int) * (size_t)size);
  MPI_Request r;
  const int root = size - 1;
  for (int i = 0; i < n; ++i) send[i] = val(rank, i, 5);
  for (size_t i = 0; i < all; ++i) recv[i] = -1;
  MPI_Igather(send, n, MPI_INT, recv, n, MPI_INT, root, MPI_COMM_WORLD, &r);
  wait_one(&r, "igather");
  for (int k = 0; rank == root && k < size; ++k) {
    for (int i = 0; i < n; ++i) {
      CHECK(recv[k * n + i] == val(k, i, 5), "igather n %d block %d [%d]", n, k, i);
    }
  }
  /* In place at the root: its block is already where it goes. */
  for (size_t i = 0; i < all; ++i) recv[i] = -1;
  for (int i = 0; rank == root && i < n; ++i) recv[root * n + i] = val(root, i, 5);
  MPI_Igather(rank == root ? MPI_IN_PLACE : send, n, MPI_INT, recv, n, MPI_INT, root,
              MPI_COMM_WORLD, &r);
  wait_one(&r, "igather in place");
  for (int k = 0; rank == root && k < size; ++k) {
    for (int i = 0; i < n; ++i) {
      CHECK(recv[k * n + i] == val(k, i, 5), "igather ip n %d block %d [%d]", n, k, i);
    }
  }
  /* Gatherv: rank k sends (k + n) % (n + 1) ints, blocks in reverse order. */
  int at = 0;
  for (int k = size - 1; k >= 0; --k) {
    counts[k] = (k + n) % (n + 1);
    displs[k] = at;
    at += counts[k];
  }
  MPI_Igatherv(send, counts[rank], MPI_INT, recv, counts, displs, MPI_INT, root, MPI_COMM_WORLD,
               &r);
  wait_one(&r, "igatherv");
  for (int k = 0; rank == root && k < size; ++k) {
    for (int i = 0; i < counts[k]; ++i) {
      CHECK(recv[displs[k] + i] == val(k, i, 5), "igatherv block %d [%d]", k, i);
    }
  }
  /* Scatter and Scatterv from root 0. */
  for (int k = 0; k < size; ++k) {
    for (int i = 0; i < n; ++i) send[k * n + i] = val(k, i, 6);
  }
  MPI_Iscatter(send, n, MPI_INT, recv, n, MPI_INT, 0, MPI_COMM_WORLD, &r);
  wait_one(&r, "iscatter");
  for (int i = 0; i < n; ++i) CHECK(recv[i] == val(rank, i, 6), "iscatter [%d]", i);
  /* In place at the root (root 0): its block stays in the send buffer. */
  for (int i = 0; rank != 0 && i < n; ++i) recv[i] = -1;
  MPI_Iscatter(send, n, MPI_INT, rank == 0 ? MPI_IN_PLACE : recv, n, MPI_INT, 0, MPI_COMM_WORLD,
               &r);
  wait_one(&r, "iscatter in place");
  for (int i = 0; rank != 0 && i < n; ++i) {
    CHECK(recv[i] == val(rank, i, 6), "iscatter ip [%d]", i);
  }
  for (int i = 0; rank == 0 && i < n; ++i) CHECK(send[i] == val(0, i, 6), "iscatter ip root");
  for (int k = 0; k < size; ++k) {
    for (int i = 0; i < counts[k]; ++i) send[displs[k] + i] = val(k, i, 7);
  }
  MPI_Iscatterv(send, counts, displs, MPI_INT, recv, counts[rank], MPI_INT, 0, MPI_COMM_WORLD, &r);
  wait_one(&r, "iscatterv");
  for (int i = 0; i < counts[rank]; ++i) CHECK(recv[i] == val(rank, i, 7), "iscatterv [%d]", i);
  /* Allgather, also in place, and Allgatherv. */
  for (int i = 0; i < n; ++i) send[i] = val(rank, i, 8);
  MPI_Iallgather(send, n, MPI_INT, recv, n, MPI_INT, MPI_COMM_WORLD, &r);
  wait_one(&r, "iallgather");
  for (int k = 0; k < size; ++k) {
    for (int i = 0; i < n; ++i) CHECK(recv[k * n + i] == val(k, i, 8), "iallgather %d [%d]", k, i);
  }
  for (int i = 0; i < n; ++i) recv[rank * n + i] = val(rank, i, 9);
  MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, MPI_INT, MPI_COMM_WORLD, &r);
  wait_one(&r, "iallgather in place");
  for (int k = 0; k < size; ++k) {
    for (int i = 0; i < n; ++i) CHECK(recv[k * n + i] == val(k, i, 9), "iallgather ip %d", k);
  }
  MPI_Iallgatherv(send, counts[rank], MPI_INT, recv, counts, displs, MPI_INT, MPI_COMM_WORLD, &r);
  wait_one(&r, "iallgatherv");
  for (int k = 0; k < size; ++k) {
    for (int i = 0; i < counts[k]; ++i) {
      CHECK(recv[displs[k] + i] == val(k, i, 8), "iallgatherv %d [%d]", k, i);
    }
  }
  /* Alltoall: block k of rank j holds val(j, k * n + i). */
  for (int k = 0; k < size; ++k) {
    for (int i = 0; i < n; ++i) send[k * n + i] = val(rank, k * n + i, 10);
  }
  MPI_Ialltoall(send, n, MPI_INT, recv, n, MPI_INT, MPI_COMM_WORLD, &r);
  wait_one(&r, "ialltoall");
  for (int k = 0; k < size; ++k) {
    for (int i = 0; i < n; ++i) {
      CHECK(recv[k * n + i] == val(k, rank * n + i, 10), "ialltoall %d [%d]", k, i);
    }
  }
  memcpy(recv, send, sizeof(int) * (size_t)n * (size_t)size);
  MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, MPI_INT, MPI_COMM_WORLD, &r);
  wait_one(&r, "ialltoall in place");
  for (int k = 0; k < size; ++k) {
    for (int i = 0; i < n; ++i) {
      CHECK(recv[k * n + i] == val(k, rank * n + i, 10), "ialltoall ip %d [%d]", k, i);
    }
  }
  /* Alltoallv with uniform counts but blocks in reverse order on receipt. */
  int *sd = malloc(sizeof(int) * (size_t)size);
  int *rd = malloc(sizeof(int) * (size_t)size);
  int *cn = malloc(sizeof(int) * (size_t)size);
  for (int k = 0; k < size; ++k) {
    cn[k] = n;
    sd[k] = k * n;
    rd[k] = (size - 1 - k) * n;
  }
  MPI_Ialltoallv(send, cn, sd, MPI_INT, recv, cn, rd, MPI_INT, MPI_COMM_WORLD, &r);
  wait_one(&r, "ialltoallv");
  for (int k = 0; k < size; ++k) {
    for (int i = 0; i < n; ++i) {
      CHECK(recv[rd[k] + i] == val(k, rank * n + i, 10), "ialltoallv %d [%d]", k, i);
    }
  }
  /* Alltoallw (byte displacements), nonblocking and blocking. */
  MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)size);
  for (int k = 0; k < size; ++k) {
    types[k] = MPI_INT;
    sd[k] *= (int)sizeof(int);
    rd[k] *= (int)sizeof(int);
  }
  for (int blocking = 0; blocking < 2; ++blocking) {
    for (size_t i = 0; i < all; ++i) recv[i] = -1;
    if (blocking) {
      MPI_Alltoallw(send, cn, sd, types, recv, cn, rd, types, MPI_COMM_WORLD);
    } else {
      MPI_Ialltoallw(send, cn, sd, types, recv, cn, rd, types, MPI_COMM_WORLD, &r);
      wait_one(&r, "ialltoallw");
    }
    for (int k = 0; k < size; ++k) {
      for (int i = 0; i < n; ++i) {
        CHECK(recv[rd[k] / (int)sizeof(int) + i] == val(k, rank * n + i, 10),
              "alltoallw b%d %d [%d]", blocking, k, i);
      }
    }
  }
  free(types);
  free(sd);
  free(rd);
  free(cn);
  free(send);
  free(recv);
  free(counts);
  free(displs);
}

/* A derived type: 2 ints 2 apart (extent 3 ints, the middle one a gap).
 * Ibcast, Igather and Iallreduce (user op over the type) through it; the
 * gaps must stay as they were. */
static void sum_strided(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  const int *p = in;
  int *q = inout;
  for (int i = 0; i < *len; ++i) {
    q[3 * i] += p[3 * i];
    q[3 * i + 2] += p[3 * i + 2];
  }
}

static void test_derived(int n) {
  MPI_Datatype strided;
  MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  MPI_Op op;
  MPI_Op_create(sum_strided, 1, &op);
  const size_t ints = (size_t)(3 * n * size + 1);
  int *a = malloc(sizeof(int) * ints);
  int *b = malloc(sizeof(int) * ints);
  MPI_Request r;
  for (size_t i = 0; i < ints; ++i) a[i] = rank == 0 ? val(0, (int)i, 11) : -7;
  MPI_Ibcast(a, n, strided, 0, MPI_COMM_WORLD, &r);
  wait_one(&r, "ibcast derived");
  for (int i = 0; i < 3 * n; ++i) {
    const int want = i % 3 == 1 && rank != 0 ? -7 : val(0, i, 11);
    CHECK(a[i] == want, "ibcast derived [%d] = %d, want %d", i, a[i], want);
  }
  for (int i = 0; i < 3 * n; ++i) a[i] = val(rank, i, 12);
  for (size_t i = 0; i < ints; ++i) b[i] = -7;
  MPI_Igather(a, n, strided, b, n, strided, 0, MPI_COMM_WORLD, &r);
  wait_one(&r, "igather derived");
  for (int k = 0; rank == 0 && k < size; ++k) {
    for (int i = 0; i < 3 * n; ++i) {
      const int want = i % 3 == 1 ? -7 : val(k, i, 12);
      CHECK(b[3 * n * k + i] == want, "igather derived %d [%d]", k, i);
    }
  }
  for (size_t i = 0; i < ints; ++i) b[i] = -7;
  MPI_Iallreduce(a, b, n, strided, op, MPI_COMM_WORLD, &r);
  wait_one(&r, "iallreduce derived");
  for (int i = 0; i < 3 * n; ++i) {
    const int want = i % 3 == 1 ? -7 : sum_of(i, 12, 0, size - 1);
    CHECK(b[i] == want, "iallreduce derived [%d] = %d, want %d", i, b[i], want);
  }
  free(a);
  free(b);
  MPI_Op_free(&op);
  MPI_Type_free(&strided);
}

/* MPI lets a program free an op and a type that pending collectives use.
 * Rank 0 starts an Iallreduce (user op over a derived type) and a
 * persistent Allreduce, frees the op and the type, makes a new op that
 * would reuse the freed handle's slot (and poisons the result if it were
 * applied instead), and only then lets the other ranks contribute: the
 * reductions must still use the first op, the persistent one at every
 * Start. */
static void poison(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)in;
  (void)type;
  int *q = inout;
  for (int i = 0; i < 3 * *len; ++i) q[i] = -99;
}

static void test_freed_while_pending(void) {
  enum { n = 6 };
  MPI_Comm gate;
  MPI_Comm_dup(MPI_COMM_WORLD, &gate);
  if (rank != 0) MPI_Barrier(gate);
  MPI_Datatype strided;
  MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  MPI_Op op;
  MPI_Op_create(sum_strided, 1, &op);
  int a[3 * n], b[3 * n], c[3 * n];
  for (int i = 0; i < 3 * n; ++i) {
    a[i] = val(rank, i, 13);
    b[i] = c[i] = -7;
  }
  MPI_Request r[2];
  MPI_Iallreduce(a, b, n, strided, op, MPI_COMM_WORLD, &r[0]);
  MPI_Allreduce_init(a, c, n, strided, op, MPI_COMM_WORLD, MPI_INFO_NULL, &r[1]);
  MPI_Start(&r[1]);
  MPI_Op_free(&op);
  MPI_Type_free(&strided);
  MPI_Op other;
  MPI_Op_create(poison, 1, &other);
  if (rank == 0) MPI_Barrier(gate);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 3 * n; ++i) {
      const int want = i % 3 == 1 ? -7 : sum_of(i, 13, 0, size - 1);
      CHECK(b[i] == want, "iallreduce, op freed while pending [%d] = %d, want %d", i, b[i], want);
      CHECK(c[i] == want, "persistent allreduce, op freed (start %d) [%d] = %d, want %d", round, i,
            c[i], want);
    }
    for (int i = 0; i < 3 * n; ++i) c[i] = -7;
    MPI_Start(&r[1]);
    MPI_Wait(&r[1], MPI_STATUS_IGNORE);
  }
  MPI_Request_free(&r[1]);
  MPI_Op_free(&other);
  MPI_Comm_free(&gate);
}

/* Point-to-point on the same communicator, with the tags collectives use
 * and wildcards, while collectives are in flight: each message reaches its
 * receive and no collective message does. */
static void test_overlap(void) {
  const int tags[] = {100, 102, 0x40000000, 0x40000100, 0x40000201};
  const int ntags = (int)(sizeof(tags) / sizeof(tags[0]));
  const int to = (rank + 1) % size;
  const int from = (rank - 1 + size) % size;
  int got[5] = {0};
  MPI_Status st[5];
  MPI_Request p2p[5];
  /* The first receive takes any tag: it must still get the p2p message. */
  for (int t = 0; t < ntags; ++t) {
    MPI_Irecv(&got[t], 1, MPI_INT, t == 0 ? MPI_ANY_SOURCE : from, t == 0 ? MPI_ANY_TAG : tags[t],
              MPI_COMM_WORLD, &p2p[t]);
  }
  int bval = rank == 0 ? 4242 : 0;
  int mine = rank + 1;
  int sum = 0;
  MPI_Request coll[3];
  MPI_Ibcast(&bval, 1, MPI_INT, 0, MPI_COMM_WORLD, &coll[0]);
  MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &coll[1]);
  MPI_Ibarrier(MPI_COMM_WORLD, &coll[2]);
  /* Work while they move: Test drives them. */
  volatile double x = 0;
  for (int i = 0; i < 1000; ++i) {
    x += i * 0.5;
    if (i % 100 == 0) {
      int flag = 0;
      MPI_Testall(3, coll, &flag, MPI_STATUSES_IGNORE);
      if (flag) break;
    }
  }
  for (int t = 0; t < ntags; ++t) {
    const int v = 1000 * rank + t;
    MPI_Send(&v, 1, MPI_INT, to, tags[t], MPI_COMM_WORLD);
  }
  MPI_Waitall(ntags, p2p, st);
  MPI_Waitall(3, coll, MPI_STATUSES_IGNORE);
  for (int t = 0; t < ntags; ++t) {
    CHECK(got[t] == 1000 * from + t, "overlap p2p tag %d got %d", tags[t], got[t]);
    CHECK(st[t].MPI_SOURCE == from && st[t].MPI_TAG == tags[t], "overlap p2p status %d/%d",
          st[t].MPI_SOURCE, st[t].MPI_TAG);
  }
  CHECK(bval == 4242, "overlap ibcast %d", bval);
  CHECK(sum == size * (size + 1) / 2, "overlap iallreduce %d", sum);
}

/* Several collectives outstanding on one communicator, completed in another
 * order than they started. */
static void test_outstanding(void) {
  enum { n = 700 };
  int *a = malloc(sizeof(int) * n);
  int *b = malloc(sizeof(int) * n);
  int *g = malloc(sizeof(int) * (size_t)size);
  int *at = malloc(sizeof(int) * (size_t)size);
  int x = rank * 3;
  MPI_Request r[5];
  for (int i = 0; i < n; ++i) a[i] = rank == size - 1 ? val(size - 1, i, 13) : 0;
  MPI_Ibcast(a, n, MPI_INT, size - 1, MPI_COMM_WORLD, &r[0]);
  for (int i = 0; i < n; ++i) b[i] = val(rank, i, 14);
  MPI_Iallreduce(MPI_IN_PLACE, b, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r[1]);
  MPI_Iallgather(&x, 1, MPI_INT, g, 1, MPI_INT, MPI_COMM_WORLD, &r[2]);
  MPI_Ibarrier(MPI_COMM_WORLD, &r[3]);
  MPI_Ialltoall(g, 0, MPI_INT, at, 0, MPI_INT, MPI_COMM_WORLD, &r[4]);
  MPI_Request reversed[5];
  for (int k = 0; k < 5; ++k) reversed[k] = r[4 - k];
  CHECK(MPI_Waitall(5, reversed, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall");
  for (int k = 0; k < 5; ++k) CHECK(reversed[k] == MPI_REQUEST_NULL, "waitall freed %d", k);
  for (int i = 0; i < n; ++i) {
    CHECK(a[i] == val(size - 1, i, 13), "outstanding ibcast [%d]", i);
    int m = 0;
    for (int k = 0; k < size; ++k) m = val(k, i, 14) > m ? val(k, i, 14) : m;
    CHECK(b[i] == m, "outstanding iallreduce max [%d]", i);
  }
  for (int k = 0; k < size; ++k) CHECK(g[k] == 3 * k, "outstanding iallgather %d", k);
  /* Waitany: whichever finishes first. */
  MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
  MPI_Iallreduce(&x, &r[4], 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[1]);
  for (int done = 0; done < 2; ++done) {
    int index = -1;
    MPI_Waitany(2, r, &index, MPI_STATUS_IGNORE);
    CHECK(index == 0 || index == 1, "waitany index %d", index);
  }
  CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "waitany freed");
  free(a);
  free(b);
  free(g);
  free(at);
}

/* Persistent collectives, each started several times with new data. */
static void test_persistent(void) {
  enum { n = 300, rounds = 3 };
  int in[n] = {0}, out[n] = {0};
  MPI_Request r[3];
  int bval = 0;
  int gat[64];
  MPI_Allreduce_init(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r[0]);
  MPI_Bcast_init(&bval, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r[1]);
  MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &r[2]);
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < n; ++i) in[i] = val(rank, i, 20 + round);
    bval = rank == 0 ? 77 + round : -1;
    MPI_Startall(3, r);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    for (int k = 0; k < 3; ++k) CHECK(r[k] != MPI_REQUEST_NULL, "persistent %d freed by wait", k);
    for (int i = 0; i < n; ++i) {
      CHECK(out[i] == sum_of(i, 20 + round, 0, size - 1), "allreduce_init round %d [%d]", round, i);
    }
    CHECK(bval == 77 + round, "bcast_init round %d: %d", round, bval);
  }
  /* A wait on an inactive persistent collective returns at once. */
  CHECK(MPI_Wait(&r[0], MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait inactive");
  for (int k = 0; k < 3; ++k) MPI_Request_free(&r[k]);
  CHECK(r[0] == MPI_REQUEST_NULL, "request_free persistent");
  if (size <= 64) {
    int x = 0;
    MPI_Allgather_init(&x, 1, MPI_INT, gat, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &r[0]);
    for (int round = 0; round < rounds; ++round) {
      x = rank * 10 + round;
      MPI_Start(&r[0]);
      MPI_Wait(&r[0], MPI_STATUS_IGNORE);
      for (int k = 0; k < size; ++k) {
        CHECK(gat[k] == k * 10 + round, "allgather_init round %d [%d]", round, k);
      }
    }
    MPI_Request_free(&r[0]);
  }
}

/* Neighbourhood collectives: a periodic 2-D grid and a distributed graph
 * where rank r hears from r - 1 and r - 2 and talks to r + 1 and r + 2. */
static void test_neighbors(void) {
  int dims[2] = {0, 0};
  const int periods[2] = {1, 1};
  MPI_Dims_create(size, 2, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  int crank = 0;
  MPI_Comm_rank(cart, &crank);
  int nbr[4];
  for (int d = 0; d < 2; ++d) MPI_Cart_shift(cart, d, 1, &nbr[2 * d], &nbr[2 * d + 1]);
  int got[4], sendv[4];
  MPI_Neighbor_allgather(&crank, 1, MPI_INT, got, 1, MPI_INT, cart);
  for (int k = 0; k < 4; ++k) CHECK(got[k] == nbr[k], "cart allgather %d: %d", k, got[k]);
  for (int k = 0; k < 4; ++k) sendv[k] = crank * 100 + k;
  MPI_Request r;
  MPI_Ineighbor_alltoall(sendv, 1, MPI_INT, got, 1, MPI_INT, cart, &r);
  wait_one(&r, "ineighbor_alltoall");
  /* Block k came from nbr[k], which sent it in the opposite direction. */
  for (int k = 0; k < 4; ++k) {
    CHECK(got[k] == nbr[k] * 100 + (k ^ 1), "cart alltoall %d: %d", k, got[k]);
  }
  /* Persistent, started twice. */
  MPI_Neighbor_alltoall_init(sendv, 1, MPI_INT, got, 1, MPI_INT, cart, MPI_INFO_NULL, &r);
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 4; ++k) sendv[k] = crank * 100 + k + round * 10;
    MPI_Start(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    for (int k = 0; k < 4; ++k) {
      CHECK(got[k] == nbr[k] * 100 + (k ^ 1) + round * 10, "cart alltoall_init %d", k);
    }
  }
  MPI_Request_free(&r);
  int counts[4] = {1, 1, 1, 1}, displs[4] = {3, 2, 1, 0};
  MPI_Neighbor_allgatherv(&crank, 1, MPI_INT, got, counts, displs, MPI_INT, cart);
  for (int k = 0; k < 4; ++k) CHECK(got[displs[k]] == nbr[k], "cart allgatherv %d", k);
  MPI_Comm_free(&cart);

  /* A line that does not wrap: the ends' missing neighbours are
   * MPI_PROC_NULL, and their blocks stay as they were. */
  int length = size;
  const int open_ends = 0;
  MPI_Comm line;
  MPI_Cart_create(MPI_COMM_WORLD, 1, &length, &open_ends, 0, &line);
  int lrank = 0;
  MPI_Comm_rank(line, &lrank);
  int ends[2] = {-9, -9};
  MPI_Ineighbor_allgather(&lrank, 1, MPI_INT, ends, 1, MPI_INT, line, &r);
  wait_one(&r, "line ineighbor_allgather");
  CHECK(ends[0] == (lrank > 0 ? lrank - 1 : -9), "line allgather below: %d", ends[0]);
  CHECK(ends[1] == (lrank < size - 1 ? lrank + 1 : -9), "line allgather above: %d", ends[1]);
  MPI_Comm_free(&line);

  MPI_Comm graph;
  const int sources[2] = {(rank - 1 + size) % size, (rank - 2 + 2 * size) % size};
  const int dests[2] = {(rank + 1) % size, (rank + 2) % size};
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, sources, MPI_UNWEIGHTED, 2, dests,
                                 MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph);
  MPI_Ineighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, graph, &r);
  wait_one(&r, "graph ineighbor_allgather");
  for (int k = 0; k < 2; ++k) CHECK(got[k] == sources[k], "graph allgather %d: %d", k, got[k]);
  for (int k = 0; k < 2; ++k) sendv[k] = rank * 100 + k;
  MPI_Neighbor_alltoall(sendv, 1, MPI_INT, got, 1, MPI_INT, graph);
  for (int k = 0; k < 2; ++k) {
    CHECK(got[k] == sources[k] * 100 + k, "graph alltoall %d: %d", k, got[k]);
  }
  int sc[2] = {1, 1};
  int sd[2] = {1, 0};
  int rd[2] = {0, 1};
  MPI_Neighbor_alltoallv(sendv, sc, sd, MPI_INT, got, sc, rd, MPI_INT, graph);
  for (int k = 0; k < 2; ++k) {
    CHECK(got[k] == sources[k] * 100 + (1 - k), "graph alltoallv %d: %d", k, got[k]);
  }
  MPI_Aint sdw[2] = {0, sizeof(int)};
  MPI_Aint rdw[2] = {sizeof(int), 0};
  MPI_Datatype ty[2] = {MPI_INT, MPI_INT};
  MPI_Neighbor_alltoallw(sendv, sc, sdw, ty, got, sc, rdw, ty, graph);
  for (int k = 0; k < 2; ++k) {
    CHECK(got[1 - k] == sources[k] * 100 + k, "graph alltoallw %d: %d", k, got[1 - k]);
  }
  MPI_Comm_free(&graph);
}

static void test_errors(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int x = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  int err = MPI_Ibcast(&x, 1, MPI_INT, size, comm, &r);
  int cls = -1;
  MPI_Error_class(err, &cls);
  CHECK(cls == MPI_ERR_ROOT, "ibcast bad root: class %d", cls);
  CHECK(r == MPI_REQUEST_NULL, "ibcast bad root set the request");
  err = MPI_Ibarrier(comm, NULL);
  MPI_Error_class(err, &cls);
  CHECK(cls == MPI_ERR_ARG, "ibarrier null request: class %d", cls);
  err = MPI_Iallreduce(&x, &x, 1, MPI_INT, MPI_OP_NULL, comm, &r);
  MPI_Error_class(err, &cls);
  CHECK(cls == MPI_ERR_OP, "iallreduce null op: class %d", cls);
  err = MPI_Neighbor_allgather(&x, 1, MPI_INT, &x, 1, MPI_INT, comm);
  MPI_Error_class(err, &cls);
  CHECK(cls == MPI_ERR_TOPOLOGY, "neighbor_allgather without topology: class %d", cls);
  err = MPI_Igather(&x, -1, MPI_INT, &x, 1, MPI_INT, 0, comm, &r);
  MPI_Error_class(err, &cls);
  CHECK(cls == MPI_ERR_COUNT, "igather negative count: class %d", cls);
  err = MPI_Bcast_init(&x, 1, MPI_INT, -5, comm, MPI_INFO_NULL, &r);
  MPI_Error_class(err, &cls);
  CHECK(cls == MPI_ERR_ROOT, "bcast_init bad root: class %d", cls);
  /* The failed calls took no sequence number: a collective still works. */
  x = rank == 0 ? 5 : 0;
  CHECK(MPI_Ibcast(&x, 1, MPI_INT, 0, comm, &r) == MPI_SUCCESS, "ibcast after errors");
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  CHECK(x == 5, "ibcast after errors: %d", x);
  /* Counts that do not match the root's: every other rank is told, deep in
   * the tree too (a rank relays what arrived, or a byte more than it holds),
   * through MPI_Ibcast and a persistent MPI_Bcast_init, from two roots
   * (MPICH's errors/coll/ibcastlength). */
  for (int root = 0; root < size && root < 2; ++root) {
    for (int longer = 0; longer < 2; ++longer) {
      for (int persistent = 0; persistent < 2; ++persistent) {
        int two[2] = {rank == root ? 9 : -1, rank == root ? 10 : -2};
        const int n = (rank == root) == (longer == 1) ? 2 : 1;
        if (persistent) {
          MPI_Bcast_init(two, n, MPI_INT, root, comm, MPI_INFO_NULL, &r);
          for (int start = 0; start < 2; ++start) {
            MPI_Start(&r);
            err = MPI_Wait(&r, MPI_STATUS_IGNORE);
            MPI_Error_class(err, &cls);
            CHECK(cls == (rank == root ? MPI_SUCCESS : MPI_ERR_TRUNCATE),
                  "bcast_init root %d sending %s, start %d: class %d", root,
                  longer ? "more" : "less", start, cls);
          }
          MPI_Request_free(&r);
        } else {
          MPI_Ibcast(two, n, MPI_INT, root, comm, &r);
          err = MPI_Wait(&r, MPI_STATUS_IGNORE);
          MPI_Error_class(err, &cls);
          CHECK(cls == (rank == root ? MPI_SUCCESS : MPI_ERR_TRUNCATE),
                "ibcast root %d sending %s: class %d", root, longer ? "more" : "less", cls);
        }
        CHECK(two[0] == 9, "mismatched ibcast delivered %d", two[0]);
        if (!longer && rank != root) CHECK(two[1] == -2, "a short ibcast wrote %d", two[1]);
      }
    }
  }
  MPI_Comm_free(&comm);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Op affine;
  MPI_Op_create(compose, 0, &affine);
  MPI_Datatype pair = MPI_2INT;
  const int big = (int)(iris_limit("eager_limit") / (int)sizeof(int)) + 100;
  const int counts[] = {0, 1, 37, big};
  for (unsigned c = 0; c < sizeof(counts) / sizeof(counts[0]); ++c) {
    test_barrier_bcast(counts[c]);
    test_reductions(counts[c], affine, pair);
    test_gathers(counts[c]);
  }
  test_derived(5);
  test_derived(big / 2);
  /* A blocking collective makes the node's segment (all ranks on one node):
   * from here Ibcast, Iallreduce, Ireduce, Ibarrier and the uniform Igather,
   * Iscatter, Iallgather and Ialltoall go through it, a large Ibcast
   * read in place with the root's data packed first when it is not one run
   * (device/collectives/node.cpp). The same checks again. */
  MPI_Barrier(MPI_COMM_WORLD);
  for (unsigned c = 0; c < sizeof(counts) / sizeof(counts[0]); ++c) {
    test_barrier_bcast(counts[c]);
    test_reductions(counts[c], affine, pair);
    test_gathers(counts[c]);
  }
  /* Above 256 KiB a large Ireduce's ranks fold a share each (below, the
   * root folds alone). */
  test_reductions(70000, affine, pair);
  test_derived(5);
  test_derived(big / 2);
  test_freed_while_pending();
  test_overlap();
  test_outstanding();
  test_persistent();
  test_neighbors();
  test_errors();
  MPI_Op_free(&affine);
  if (rank == 0 && check_failures == 0) printf("nbc: all checks passed on %d ranks\n", size);
  return finish();
}
