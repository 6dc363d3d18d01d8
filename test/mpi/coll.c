/* Collectives, checked at any number of ranks against a serial computation:
 * every rank knows what every rank contributed (a formula of rank and
 * index), so each can compute the expected result locally.
 *
 * This file: Bcast, Reduce, Allreduce, Reduce_scatter(_block), Scan, Exscan,
 * Gather(v), Scatter(v), Allgather(v), Alltoall(v); several roots; counts 0,
 * 1 and large; MPI_IN_PLACE; collectives beside user messages and on a split
 * communicator; and main, which runs every phase. coll_ops.c: every
 * predefined op on every type it allows, MINLOC/MAXLOC ties, a
 * non-commutative user op in rank order and Op_free. coll_errors.c: the
 * error classes of bad arguments under MPI_ERRORS_RETURN. */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

int rank;
int size;

enum { large = 100000 };

static int ival(int r, int i) {
  return (r * 7 + i * 3) % 23 - 11;
}

/* The roots every rooted collective is tried with. */
int roots[3];
static void pick_roots(void) {
  roots[0] = 0;
  roots[1] = size - 1;
  roots[2] = size / 2;
}

static int *ints(size_t n) {
  return malloc((n + 1) * sizeof(int));
}

static void bcast(void) {
  const int counts[] = {0, 1, large};
  for (int k = 0; k < 3; ++k) {
    for (int c = 0; c < 3; ++c) {
      const int root = roots[k];
      const int n = counts[c];
      int *buf = ints(n);
      for (int i = 0; i < n; ++i) buf[i] = rank == root ? ival(root, i) : -999;
      CHECK(MPI_Bcast(buf, n, MPI_INT, root, MPI_COMM_WORLD) == MPI_SUCCESS, "bcast");
      int bad = 0;
      for (int i = 0; i < n; ++i) bad += buf[i] != ival(root, i);
      CHECK(bad == 0, "bcast root %d count %d: %d wrong", root, n, bad);
      free(buf);
    }
  }
}

static long long sum_upto(int ranks, int i) {
  long long s = 0;
  for (int r = 0; r < ranks; ++r) s += ival(r, i);
  return s;
}

static void reduce_and_allreduce(void) {
  const int counts[] = {0, 1, large};
  for (int c = 0; c < 3; ++c) {
    const int n = counts[c];
    int *in = ints(n);
    int *out = ints(n);
    for (int i = 0; i < n; ++i) in[i] = ival(rank, i);
    for (int k = 0; k < 3; ++k) {
      const int root = roots[k];
      for (int i = 0; i < n; ++i) out[i] = -1;
      MPI_Reduce(in, out, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
      int bad = 0;
      for (int i = 0; rank == root && i < n; ++i) bad += out[i] != sum_upto(size, i);
      CHECK(bad == 0, "reduce root %d count %d: %d wrong", root, n, bad);
      /* In place at root: the input is in the receive buffer. */
      for (int i = 0; i < n; ++i) out[i] = ival(rank, i);
      MPI_Reduce(rank == root ? MPI_IN_PLACE : out, rank == root ? out : NULL, n, MPI_INT, MPI_SUM,
                 root, MPI_COMM_WORLD);
      bad = 0;
      for (int i = 0; rank == root && i < n; ++i) bad += out[i] != sum_upto(size, i);
      CHECK(bad == 0, "in-place reduce root %d count %d: %d wrong", root, n, bad);
    }
    MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != sum_upto(size, i);
    CHECK(bad == 0, "allreduce count %d: %d wrong", n, bad);
    memcpy(out, in, (size_t)n * sizeof(int));
    MPI_Allreduce(MPI_IN_PLACE, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != sum_upto(size, i);
    CHECK(bad == 0, "in-place allreduce count %d: %d wrong", n, bad);
    free(in);
    free(out);
  }
}

static void scans(void) {
  const int counts[] = {0, 1, large};
  for (int c = 0; c < 3; ++c) {
    const int n = counts[c];
    int *in = ints(n);
    int *out = ints(n);
    for (int i = 0; i < n; ++i) in[i] = ival(rank, i);
    MPI_Scan(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != sum_upto(rank + 1, i);
    CHECK(bad == 0, "scan count %d: %d wrong", n, bad);
    memcpy(out, in, (size_t)n * sizeof(int));
    MPI_Scan(MPI_IN_PLACE, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != sum_upto(rank + 1, i);
    CHECK(bad == 0, "in-place scan count %d: %d wrong", n, bad);
    for (int i = 0; i < n; ++i) out[i] = -5;
    MPI_Exscan(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; rank > 0 && i < n; ++i) bad += out[i] != sum_upto(rank, i);
    CHECK(bad == 0, "exscan count %d: %d wrong", n, bad);
    memcpy(out, in, (size_t)n * sizeof(int));
    MPI_Exscan(MPI_IN_PLACE, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; rank > 0 && i < n; ++i) bad += out[i] != sum_upto(rank, i);
    CHECK(bad == 0, "in-place exscan count %d: %d wrong", n, bad);
    free(in);
    free(out);
  }
}

static void reduce_scatter_block(void) {
  const int counts[] = {0, 1, large / 8};
  for (int c = 0; c < 3; ++c) {
    const int n = counts[c];
    const int total = n * size;
    int *in = ints(total);
    int *out = ints(n);
    for (int i = 0; i < total; ++i) in[i] = ival(rank, i);
    MPI_Reduce_scatter_block(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != sum_upto(size, rank * n + i);
    CHECK(bad == 0, "reduce_scatter_block count %d: %d wrong", n, bad);
    MPI_Reduce_scatter_block(MPI_IN_PLACE, in, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; i < n; ++i) bad += in[i] != sum_upto(size, rank * n + i);
    CHECK(bad == 0, "in-place reduce_scatter_block count %d: %d wrong", n, bad);
    free(in);
    free(out);
  }
}

/* Reduce_scatter: rank r gets vcount(r, big) elements, in rank order. */
static int vcount(int r, int big);
static void reduce_scatter(void) {
  const int bigs[] = {0, 3, large / 8};
  for (int b = 0; b < 3; ++b) {
    int counts[8] = {0};
    int total = 0, first = 0;
    for (int r = 0; r < size; ++r) {
      counts[r] = vcount(r, bigs[b]);
      if (r < rank) first += counts[r];
      total += counts[r];
    }
    int *in = ints(total);
    int *out = ints(counts[rank]);
    for (int i = 0; i < total; ++i) in[i] = ival(rank, i);
    MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < counts[rank]; ++i) bad += out[i] != sum_upto(size, first + i);
    CHECK(bad == 0, "reduce_scatter big %d: %d wrong", bigs[b], bad);
    MPI_Reduce_scatter(MPI_IN_PLACE, in, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; i < counts[rank]; ++i) bad += in[i] != sum_upto(size, first + i);
    CHECK(bad == 0, "in-place reduce_scatter big %d: %d wrong", bigs[b], bad);
    free(in);
    free(out);
  }
}

static int gval(int r, int i) {
  return r * 1000003 + i;
}

static void gather_scatter(void) {
  /* 70,000 ints: a block above 256 KiB, which a Gather on one node sends
   * as messages all at once rather than through the segment. */
  const int counts[] = {0, 1, large / 4, 70000};
  for (int c = 0; c < 4; ++c) {
    const int n = counts[c];
    const size_t all = (size_t)n * (size_t)size;
    int *mine = ints(n);
    int *every = ints(all);
    for (int k = 0; k < 3; ++k) {
      const int root = roots[k];
      for (int i = 0; i < n; ++i) mine[i] = gval(rank, i);
      for (size_t j = 0; j < all; ++j) every[j] = -1;
      MPI_Gather(mine, n, MPI_INT, every, n, MPI_INT, root, MPI_COMM_WORLD);
      int bad = 0;
      for (size_t j = 0; rank == root && j < all; ++j) bad += every[j] != gval(j / n, j % n);
      CHECK(bad == 0, "gather root %d count %d: %d wrong", root, n, bad);
      /* In place at root: root's block is already in place. */
      for (size_t j = 0; j < all; ++j) every[j] = -1;
      for (int i = 0; rank == root && i < n; ++i) every[(size_t)root * n + i] = gval(root, i);
      MPI_Gather(rank == root ? MPI_IN_PLACE : mine, n, MPI_INT, every, n, MPI_INT, root,
                 MPI_COMM_WORLD);
      bad = 0;
      for (size_t j = 0; rank == root && j < all; ++j) bad += every[j] != gval(j / n, j % n);
      CHECK(bad == 0, "in-place gather root %d count %d: %d wrong", root, n, bad);
      /* Scatter what root gathered back out. */
      for (int i = 0; i < n; ++i) mine[i] = -1;
      MPI_Scatter(every, n, MPI_INT, mine, n, MPI_INT, root, MPI_COMM_WORLD);
      bad = 0;
      for (int i = 0; i < n; ++i) bad += mine[i] != gval(rank, i);
      CHECK(bad == 0, "scatter root %d count %d: %d wrong", root, n, bad);
      for (int i = 0; i < n; ++i) mine[i] = -1;
      MPI_Scatter(every, n, MPI_INT, rank == root ? MPI_IN_PLACE : mine, n, MPI_INT, root,
                  MPI_COMM_WORLD);
      bad = 0;
      for (int i = 0; rank != root && i < n; ++i) bad += mine[i] != gval(rank, i);
      CHECK(bad == 0, "in-place scatter root %d count %d: %d wrong", root, n, bad);
    }
    free(mine);
    free(every);
  }
}

static void allgather_alltoall(void) {
  const int counts[] = {0, 1, large / 8};
  for (int c = 0; c < 3; ++c) {
    const int n = counts[c];
    const size_t all = (size_t)n * (size_t)size;
    int *mine = ints(all);
    int *every = ints(all);
    for (int i = 0; i < n; ++i) mine[i] = gval(rank, i);
    MPI_Allgather(mine, n, MPI_INT, every, n, MPI_INT, MPI_COMM_WORLD);
    int bad = 0;
    for (size_t j = 0; j < all; ++j) bad += every[j] != gval(j / n, j % n);
    CHECK(bad == 0, "allgather count %d: %d wrong", n, bad);
    for (size_t j = 0; j < all; ++j) every[j] = j / n == (size_t)rank ? gval(rank, j % n) : -1;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, every, n, MPI_INT, MPI_COMM_WORLD);
    bad = 0;
    for (size_t j = 0; j < all; ++j) bad += every[j] != gval(j / n, j % n);
    CHECK(bad == 0, "in-place allgather count %d: %d wrong", n, bad);
    /* Alltoall: block d of rank s holds gval(s, d * n + i); rank d gets it as
     * its block s. */
    for (size_t j = 0; j < all; ++j) mine[j] = gval(rank, (int)j);
    MPI_Alltoall(mine, n, MPI_INT, every, n, MPI_INT, MPI_COMM_WORLD);
    bad = 0;
    for (size_t j = 0; j < all; ++j) bad += every[j] != gval(j / n, rank * n + j % n);
    CHECK(bad == 0, "alltoall count %d: %d wrong", n, bad);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, mine, n, MPI_INT, MPI_COMM_WORLD);
    bad = 0;
    for (size_t j = 0; j < all; ++j) bad += mine[j] != gval(j / n, rank * n + j % n);
    CHECK(bad == 0, "in-place alltoall count %d: %d wrong", n, bad);
    free(mine);
    free(every);
  }
}

/* The v-variants: rank r's block has vcount(r) elements, at displacement
 * vdispl(r) (gaps between blocks stay untouched). */
static int vcount(int r, int big) {
  return r % 3 == 1 ? big : r % 3;
}

static void layout(int big, int *counts, int *displs) {
  int at = 3;
  for (int r = 0; r < size; ++r) {
    counts[r] = vcount(r, big);
    displs[r] = at;
    at += counts[r] + 2;
  }
}

static int layout_total(const int *counts, const int *displs) {
  return displs[size - 1] + counts[size - 1] + 2;
}

static int check_layout(const int *buf, const int *counts, const int *displs, const char *what) {
  int bad = 0;
  int next = 0;
  for (int r = 0; r < size; ++r) {
    for (; next < displs[r]; ++next) bad += buf[next] != -1;
    for (int i = 0; i < counts[r]; ++i, ++next) bad += buf[next] != gval(r, i);
  }
  CHECK(bad == 0, "%s: %d wrong", what, bad);
  return bad;
}

static void vector_variants(void) {
  /* 400 KB blocks go to a Gatherv root on one node as messages, the rest
   * through the node segment (in its slots, or read in place). */
  const int bigs[] = {0, 5, large / 8, large};
  int counts[8], displs[8];
  for (int b = 0; b < 4; ++b) {
    layout(bigs[b], counts, displs);
    const int total = layout_total(counts, displs);
    const int n = counts[rank];
    int *mine = ints(n);
    int *every = ints(total);
    for (int k = 0; k < 3; ++k) {
      const int root = roots[k];
      for (int i = 0; i < n; ++i) mine[i] = gval(rank, i);
      for (int j = 0; j < total; ++j) every[j] = -1;
      MPI_Gatherv(mine, n, MPI_INT, every, counts, displs, MPI_INT, root, MPI_COMM_WORLD);
      if (rank == root) check_layout(every, counts, displs, "gatherv");
      for (int i = 0; i < n; ++i) mine[i] = -1;
      MPI_Scatterv(every, counts, displs, MPI_INT, mine, n, MPI_INT, root, MPI_COMM_WORLD);
      int bad = 0;
      for (int i = 0; i < n; ++i) bad += mine[i] != gval(rank, i);
      CHECK(bad == 0, "scatterv root %d: %d wrong", root, bad);
      MPI_Scatterv(every, counts, displs, MPI_INT, rank == root ? MPI_IN_PLACE : mine, n, MPI_INT,
                   root, MPI_COMM_WORLD);
      MPI_Gatherv(rank == root ? MPI_IN_PLACE : mine, n, MPI_INT, every, counts, displs, MPI_INT,
                  root, MPI_COMM_WORLD);
      if (rank == root) check_layout(every, counts, displs, "in-place gatherv");
      /* Nonblocking (through the node segment's steps too: a block past a
       * slot as a message), two at once (the second into a copy, waited
       * for first), and persistent, started twice; in place at the root. */
      int *every2 = ints(total);
      for (int kind = 0; kind < 3; ++kind) {
        for (int start = 0; start < (kind == 2 ? 2 : 1); ++start) {
          for (int j = 0; j < total; ++j) every[j] = every2[j] = -1;
          if (rank == root) {
            for (int i = 0; i < n; ++i)
              every[displs[rank] + i] = every2[displs[rank] + i] = gval(rank, i);
          }
          const void *from = rank == root ? MPI_IN_PLACE : mine;
          MPI_Request r[2];
          static MPI_Request persistent = MPI_REQUEST_NULL;
          if (kind < 2) {
            MPI_Igatherv(from, n, MPI_INT, every, counts, displs, MPI_INT, root, MPI_COMM_WORLD,
                         &r[0]);
            if (kind == 1) {
              MPI_Igatherv(from, n, MPI_INT, every2, counts, displs, MPI_INT, root, MPI_COMM_WORLD,
                           &r[1]);
              MPI_Wait(&r[1], MPI_STATUS_IGNORE);
            }
            MPI_Wait(&r[0], MPI_STATUS_IGNORE);
          } else {
            if (start == 0) {
              MPI_Gatherv_init(from, n, MPI_INT, every, counts, displs, MPI_INT, root,
                               MPI_COMM_WORLD, MPI_INFO_NULL, &persistent);
            }
            MPI_Start(&persistent);
            MPI_Wait(&persistent, MPI_STATUS_IGNORE);
            if (start == 1) MPI_Request_free(&persistent);
          }
          if (rank == root) {
            check_layout(every, counts, displs,
                         kind == 0   ? "igatherv"
                         : kind == 1 ? "two igatherv"
                                     : "gatherv_init");
            if (kind == 1) check_layout(every2, counts, displs, "the second of two igatherv");
          }
        }
      }
      free(every2);
      /* Iscatterv the same ways from the layout the root holds now (its
       * persistent form in place at the root). */
      int *mine2 = ints(n);
      for (int kind = 0; kind < 3; ++kind) {
        for (int start = 0; start < (kind == 2 ? 2 : 1); ++start) {
          for (int i = 0; i < n; ++i) mine[i] = mine2[i] = -1;
          void *into = kind == 2 && rank == root ? MPI_IN_PLACE : mine;
          MPI_Request r[2];
          static MPI_Request persistent = MPI_REQUEST_NULL;
          if (kind < 2) {
            MPI_Iscatterv(every, counts, displs, MPI_INT, into, n, MPI_INT, root, MPI_COMM_WORLD,
                          &r[0]);
            if (kind == 1) {
              MPI_Iscatterv(every, counts, displs, MPI_INT, mine2, n, MPI_INT, root, MPI_COMM_WORLD,
                            &r[1]);
              MPI_Wait(&r[1], MPI_STATUS_IGNORE);
            }
            MPI_Wait(&r[0], MPI_STATUS_IGNORE);
          } else {
            if (start == 0) {
              MPI_Scatterv_init(every, counts, displs, MPI_INT, into, n, MPI_INT, root,
                                MPI_COMM_WORLD, MPI_INFO_NULL, &persistent);
            }
            MPI_Start(&persistent);
            MPI_Wait(&persistent, MPI_STATUS_IGNORE);
            if (start == 1) MPI_Request_free(&persistent);
          }
          int bad = 0;
          for (int i = 0; i < n && into != MPI_IN_PLACE; ++i) {
            bad += mine[i] != gval(rank, i);
            bad += kind == 1 && mine2[i] != gval(rank, i);
          }
          CHECK(bad == 0, "%s root %d, %d ints: %d wrong",
                kind == 0   ? "iscatterv"
                : kind == 1 ? "two iscatterv"
                            : "scatterv_init",
                root, n, bad);
        }
      }
      free(mine2);
      for (int i = 0; i < n; ++i) mine[i] = gval(rank, i);
    }
    for (int j = 0; j < total; ++j) every[j] = -1;
    MPI_Allgatherv(mine, n, MPI_INT, every, counts, displs, MPI_INT, MPI_COMM_WORLD);
    check_layout(every, counts, displs, "allgatherv");
    for (int j = 0; j < total; ++j) every[j] = -1;
    for (int i = 0; i < n; ++i) every[displs[rank] + i] = gval(rank, i);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, every, counts, displs, MPI_INT,
                   MPI_COMM_WORLD);
    check_layout(every, counts, displs, "in-place allgatherv");
    free(mine);
    free(every);
  }
}

/* Alltoallv: rank s sends vcount(s + d) elements to rank d; block d of s
 * holds gval(s * 8 + d, i). */
static void alltoallv(void) {
  /* large / 2: 200 KB blocks, read where they lie on one node. */
  const int bigs[] = {0, 4, large / 16, large / 2};
  for (int b = 0; b < 4; ++b) {
    int scounts[8], sdispls[8], rcounts[8], rdispls[8];
    int sat = 1, rat = 2;
    for (int d = 0; d < size; ++d) {
      scounts[d] = vcount(rank + d, bigs[b]);
      sdispls[d] = sat;
      sat += scounts[d] + 1;
      rcounts[d] = vcount(d + rank, bigs[b]);
      rdispls[d] = rat;
      rat += rcounts[d] + 3;
    }
    int *out = ints(sat);
    int *in = ints(rat);
    for (int d = 0; d < size; ++d) {
      for (int i = 0; i < scounts[d]; ++i) out[sdispls[d] + i] = gval(rank * 8 + d, i);
    }
    /* Blocking, nonblocking (through the node segment's steps too: blocks
     * past a slot read in place or as messages), two nonblocking at once (the second
     * into a copy, waited for first), and persistent, started twice. */
    const char *kinds[4] = {"alltoallv", "ialltoallv", "two ialltoallv", "alltoallv_init"};
    int *in2 = ints(rat);
    for (int kind = 0; kind < 4; ++kind) {
      for (int in_place = 0; in_place < 2; ++in_place) {
        for (int start = 0; start < (kind == 3 ? 2 : 1); ++start) {
          /* In place: the same counts both ways (rank s sends vcount(s + d)
           * to d, d sends vcount(d + s) back: equal). */
          for (int j = 0; j < rat; ++j) in[j] = in2[j] = -1;
          if (in_place) {
            for (int d = 0; d < size; ++d) {
              for (int i = 0; i < rcounts[d]; ++i) {
                in[rdispls[d] + i] = in2[rdispls[d] + i] = gval(rank * 8 + d, i);
              }
            }
          }
          const void *from = in_place ? MPI_IN_PLACE : out;
          const void *from2 = in_place ? MPI_IN_PLACE : out;
          MPI_Request r[2];
          static MPI_Request persistent = MPI_REQUEST_NULL;
          if (kind == 0) {
            MPI_Alltoallv(from, scounts, sdispls, MPI_INT, in, rcounts, rdispls, MPI_INT,
                          MPI_COMM_WORLD);
          } else if (kind < 3) {
            MPI_Ialltoallv(from, scounts, sdispls, MPI_INT, in, rcounts, rdispls, MPI_INT,
                           MPI_COMM_WORLD, &r[0]);
            if (kind == 2) {
              MPI_Ialltoallv(from2, scounts, sdispls, MPI_INT, in2, rcounts, rdispls, MPI_INT,
                             MPI_COMM_WORLD, &r[1]);
              MPI_Wait(&r[1], MPI_STATUS_IGNORE);
            }
            MPI_Wait(&r[0], MPI_STATUS_IGNORE);
          } else {
            if (start == 0) {
              MPI_Alltoallv_init(from, scounts, sdispls, MPI_INT, in, rcounts, rdispls, MPI_INT,
                                 MPI_COMM_WORLD, MPI_INFO_NULL, &persistent);
            }
            MPI_Start(&persistent);
            MPI_Wait(&persistent, MPI_STATUS_IGNORE);
            if (start == 1) MPI_Request_free(&persistent);
          }
          int bad = 0;
          for (int s = 0; s < size; ++s) {
            for (int i = 0; i < rcounts[s]; ++i) {
              bad += in[rdispls[s] + i] != gval(s * 8 + rank, i);
              if (kind == 2) bad += in2[rdispls[s] + i] != gval(s * 8 + rank, i);
            }
          }
          CHECK(bad == 0, "%s%s big %d (start %d): %d wrong", in_place ? "in-place " : "",
                kinds[kind], bigs[b], start, bad);
        }
      }
    }
    free(in2);
    free(out);
    free(in);
  }
}

/* Alltoallv of 200 KB blocks (read where they lie on one node) with a
 * gapped type on one side: an int every 8 bytes. Received into gaps, a
 * block read in place is unpacked; sent from gaps, it goes as a message. */
static void alltoallv_gapped(void) {
  const int big = large / 2;
  MPI_Datatype gapped;
  MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &gapped);
  MPI_Type_commit(&gapped);
  for (int side = 0; side < 2; ++side) {
    const MPI_Datatype stype = side == 0 ? MPI_INT : gapped;
    const MPI_Datatype rtype = side == 0 ? gapped : MPI_INT;
    const int sstride = side == 0 ? 1 : 2, rstride = side == 0 ? 2 : 1;
    int scounts[8], sdispls[8], rcounts[8], rdispls[8];
    int sat = 0, rat = 0;
    for (int d = 0; d < size; ++d) {
      scounts[d] = vcount(rank + d, big);
      sdispls[d] = sat;
      sat += scounts[d] + 1;
      rcounts[d] = vcount(d + rank, big);
      rdispls[d] = rat;
      rat += rcounts[d] + 1;
    }
    int *out = ints(sat * sstride);
    int *in = ints(rat * rstride);
    for (int d = 0; d < size; ++d) {
      for (int i = 0; i < scounts[d]; ++i) {
        out[(sdispls[d] + i) * sstride] = gval(rank * 8 + d, i);
      }
    }
    for (int j = 0; j < rat * rstride; ++j) in[j] = -1;
    MPI_Alltoallv(out, scounts, sdispls, stype, in, rcounts, rdispls, rtype, MPI_COMM_WORLD);
    int bad = 0, gaps = 0;
    for (int s = 0; s < size; ++s) {
      for (int i = 0; i < rcounts[s]; ++i) {
        bad += in[(rdispls[s] + i) * rstride] != gval(s * 8 + rank, i);
        if (rstride == 2) gaps += in[(rdispls[s] + i) * 2 + 1] != -1;
      }
    }
    CHECK(bad == 0 && gaps == 0, "gapped alltoallv (side %d): %d wrong, %d gaps written", side, bad,
          gaps);
    free(out);
    free(in);
  }
  MPI_Type_free(&gapped);
}

/* Alltoallw, each peer's block of its own type: rank s sends to an even
 * rank d plain ints and to an odd one an int every 8 bytes (gapped), and
 * receives from a rank s with s % 3 == 0 into plain ints, from the others
 * into gapped ones; byte displacements. Block d of s holds
 * gval(s * 8 + d, i), vcount(s + d) of them, from none to 400 KB (past
 * the node segment's slots: read in place or as messages). Then in place
 * (the receive layout both ways), every gap still untouched. */
static void alltoallw(void) {
  MPI_Datatype gapped;
  MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &gapped);
  MPI_Type_commit(&gapped);
  const int bigs[] = {0, 5, large / 16, large};
  for (int b = 0; b < 4; ++b) {
    int scounts[8], sdispls[8], rcounts[8], rdispls[8], sstride[8], rstride[8];
    MPI_Datatype stypes[8], rtypes[8];
    int sat = 1, rat = 3; /* in ints */
    for (int d = 0; d < size; ++d) {
      sstride[d] = d % 2 == 0 ? 1 : 2;
      stypes[d] = d % 2 == 0 ? MPI_INT : gapped;
      scounts[d] = vcount(rank + d, bigs[b]);
      sdispls[d] = sat * (int)sizeof(int);
      sat += scounts[d] * sstride[d] + 1;
      rstride[d] = d % 3 == 0 ? 1 : 2;
      rtypes[d] = d % 3 == 0 ? MPI_INT : gapped;
      rcounts[d] = vcount(d + rank, bigs[b]);
      rdispls[d] = rat * (int)sizeof(int);
      rat += rcounts[d] * rstride[d] + 2;
    }
    int *out = ints(sat);
    int *in = ints(rat);
    for (int j = 0; j < sat; ++j) out[j] = -2;
    for (int d = 0; d < size; ++d) {
      for (int i = 0; i < scounts[d]; ++i) {
        out[sdispls[d] / (int)sizeof(int) + i * sstride[d]] = gval(rank * 8 + d, i);
      }
    }
    for (int pass = 0; pass < 2; ++pass) {
      for (int j = 0; j < rat; ++j) in[j] = -1;
      if (pass == 1) { /* in place: what goes to d lies where d's block comes */
        for (int d = 0; d < size; ++d) {
          for (int i = 0; i < rcounts[d]; ++i) {
            in[rdispls[d] / (int)sizeof(int) + i * rstride[d]] = gval(rank * 8 + d, i);
          }
        }
        MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, in, rcounts, rdispls, rtypes, MPI_COMM_WORLD);
      } else {
        MPI_Alltoallw(out, scounts, sdispls, stypes, in, rcounts, rdispls, rtypes, MPI_COMM_WORLD);
      }
      int bad = 0, gaps = 0, expected_gaps = 0;
      for (int j = 0; j < rat; ++j) gaps += in[j] == -1;
      for (int s = 0; s < size; ++s) {
        for (int i = 0; i < rcounts[s]; ++i) {
          bad += in[rdispls[s] / (int)sizeof(int) + i * rstride[s]] != gval(s * 8 + rank, i);
        }
        expected_gaps += rcounts[s] * (rstride[s] - 1) + 2;
      }
      expected_gaps += 3;
      CHECK(bad == 0 && gaps == expected_gaps,
            "%salltoallw big %d: %d wrong, %d of %d gaps untouched", pass ? "in-place " : "",
            bigs[b], bad, gaps, expected_gaps);
    }
    free(out);
    free(in);
  }
  MPI_Type_free(&gapped);
}

/* Zero counts accept any pointer: one empty allocation passed as both
 * buffers (as bindings pass an empty array), or NULL, is no overlap. */
static void empty_buffers(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int zeros[8] = {0}, displs[8] = {0};
  MPI_Datatype types[8];
  for (int i = 0; i < 8; ++i) types[i] = MPI_INT;
  char *empty = malloc(1); /* a valid pointer to no element */
  void *bufs[] = {empty, NULL};
  for (int k = 0; k < 2; ++k) {
    void *buf = bufs[k];
    int err = MPI_Alltoallv(buf, zeros, displs, MPI_INT, buf, zeros, displs, MPI_INT, comm);
    CHECK(err == MPI_SUCCESS, "alltoallv of nothing (%s): error %d", k ? "NULL" : "empty", err);
    MPI_Request req;
    err = MPI_Ialltoallv(buf, zeros, displs, MPI_INT, buf, zeros, displs, MPI_INT, comm, &req);
    if (err == MPI_SUCCESS) err = MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(err == MPI_SUCCESS, "ialltoallv of nothing (%s): error %d", k ? "NULL" : "empty", err);
    err = MPI_Alltoallw(buf, zeros, displs, types, buf, zeros, displs, types, comm);
    CHECK(err == MPI_SUCCESS, "alltoallw of nothing (%s): error %d", k ? "NULL" : "empty", err);
    err = MPI_Allgatherv(buf, 0, MPI_INT, buf, zeros, displs, MPI_INT, comm);
    CHECK(err == MPI_SUCCESS, "allgatherv of nothing (%s): error %d", k ? "NULL" : "empty", err);
  }
  free(empty);
  MPI_Comm_free(&comm);
}

/* Collectives never match user messages, whatever their tags, and work on
 * a communicator made by MPI_Comm_split. */
static void isolation_and_subcommunicators(void) {
  int user = -1;
  MPI_Request r;
  MPI_Irecv(&user, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r);
  int x = rank + 1, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(y == size * (size + 1) / 2, "allreduce beside a wildcard receive gave %d", y);
  const int mine = 4242 + rank;
  MPI_Send(&mine, 1, MPI_INT, (rank + 1) % size, 101, MPI_COMM_WORLD);
  MPI_Status st;
  MPI_Wait(&r, &st);
  CHECK(user == 4242 + (rank - 1 + size) % size && st.MPI_TAG == 101, "user message %d", user);

  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
  int hsize = 0, hrank = 0;
  MPI_Comm_size(half, &hsize);
  MPI_Comm_rank(half, &hrank);
  int gathered[8];
  MPI_Allgather(&rank, 1, MPI_INT, gathered, 1, MPI_INT, half);
  int bad = 0;
  for (int i = 0; i < hsize; ++i) {
    /* keys -rank: the half's rank 0 is its highest world rank */
    const int top = (size - 1) - ((size - 1) % 2 != rank % 2);
    bad += gathered[i] != top - 2 * i;
  }
  CHECK(bad == 0, "allgather on a split communicator");
  int sum = 0;
  MPI_Reduce(&rank, &sum, 1, MPI_INT, MPI_SUM, hsize - 1, half);
  if (hrank == hsize - 1) {
    int want = 0;
    for (int i = 0; i < hsize; ++i) want += gathered[i];
    CHECK(sum == want, "reduce on a split communicator gave %d", sum);
  }
  MPI_Comm_free(&half);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  pick_roots();
  bcast();
  reduce_and_allreduce();
  scans();
  reduce_scatter_block();
  reduce_scatter();
  gather_scatter();
  allgather_alltoall();
  vector_variants();
  alltoallv();
  alltoallv_gapped();
  alltoallw();
  empty_buffers();
  predefined_ops();
  user_op();
  errors();
  errors_c();
  isolation_and_subcommunicators();
  MPI_Barrier(MPI_COMM_WORLD);
  check_failures += coll_ops_failures() + coll_errors_failures();
  if (rank == 0 && check_failures == 0) printf("coll: all checks passed on %d ranks\n", size);
  return finish();
}
