/* Collectives, checked at any number of ranks against a serial computation:
 * every rank knows what every rank contributed (a formula of rank and
 * index), so each can compute the expected result locally.
 *
 * Bcast, Reduce, Allreduce, Reduce_scatter_block, Scan, Exscan, Gather(v),
 * Scatter(v), Allgather(v), Alltoall(v); several roots; counts 0, 1 and
 * large; MPI_IN_PLACE; every predefined op on every type it allows;
 * MINLOC/MAXLOC ties; a non-commutative user op in rank order; Op_free; and
 * the error classes of bad arguments under MPI_ERRORS_RETURN. */
#include <complex.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank;
static int size;

enum { large = 100000 };

static int ival(int r, int i) {
  return (r * 7 + i * 3) % 23 - 11;
}

/* The roots every rooted collective is tried with. */
static int roots[3];
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
  const int counts[] = {0, 1, large / 4};
  for (int c = 0; c < 3; ++c) {
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
  const int bigs[] = {0, 5, large / 8};
  int counts[8], displs[8];
  for (int b = 0; b < 3; ++b) {
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
  const int bigs[] = {0, 4, large / 16};
  for (int b = 0; b < 3; ++b) {
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
    for (int j = 0; j < rat; ++j) in[j] = -1;
    MPI_Alltoallv(out, scounts, sdispls, MPI_INT, in, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
    int bad = 0;
    for (int s = 0; s < size; ++s) {
      for (int i = 0; i < rcounts[s]; ++i) bad += in[rdispls[s] + i] != gval(s * 8 + rank, i);
    }
    CHECK(bad == 0, "alltoallv big %d: %d wrong", bigs[b], bad);
    /* In place: the same counts both ways (rank s sends vcount(s + d) to d,
     * d sends vcount(d + s) back: equal). */
    for (int d = 0; d < size; ++d) {
      for (int i = 0; i < rcounts[d]; ++i) in[rdispls[d] + i] = gval(rank * 8 + d, i);
    }
    MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, in, rcounts, rdispls, MPI_INT,
                  MPI_COMM_WORLD);
    bad = 0;
    for (int s = 0; s < size; ++s) {
      for (int i = 0; i < rcounts[s]; ++i) bad += in[rdispls[s] + i] != gval(s * 8 + rank, i);
    }
    CHECK(bad == 0, "in-place alltoallv big %d: %d wrong", bigs[b], bad);
    free(out);
    free(in);
  }
}

/* --- every predefined op on every type it allows -------------------------- */

enum { ne = 7 };

static int is_logical(MPI_Op op) {
  return op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR;
}

/* What rank r contributes at index i to a reduction with op: small values,
 * so that no sum or product overflows even the narrowest type. */
static long long contribution(MPI_Op op, int r, int i, int is_signed) {
  if (op == MPI_PROD) return 1 + ((r + i) % 4 == 0) + (is_signed && (r + i) % 5 == 1 ? -2 : 0);
  if (is_logical(op)) return (r + i) % 3 == 0 ? 0 : r + 1;
  if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) return 0x41 | (1 << ((r + i) % 6));
  return (r * 7 + i * 5) % 13 - (is_signed ? 6 : 0);
}

static long long combine(MPI_Op op, long long a, long long b) {
  if (op == MPI_MAX) return a > b ? a : b;
  if (op == MPI_MIN) return a < b ? a : b;
  if (op == MPI_SUM) return a + b;
  if (op == MPI_PROD) return a * b;
  if (op == MPI_LAND) return a && b;
  if (op == MPI_LOR) return a || b;
  if (op == MPI_LXOR) return !a != !b;
  if (op == MPI_BAND) return a & b;
  if (op == MPI_BOR) return a | b;
  return a ^ b;
}

static long long expected(MPI_Op op, int ranks, int i, int is_signed) {
  long long acc = contribution(op, 0, i, is_signed);
  for (int r = 1; r < ranks; ++r) acc = combine(op, acc, contribution(op, r, i, is_signed));
  return acc;
}

static const MPI_Op integer_ops[] = {MPI_MAX, MPI_MIN,  MPI_SUM,  MPI_PROD, MPI_LAND,
                                     MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR,  MPI_BXOR};

/* Allreduce, Reduce to the last rank and Scan of one integer type with every
 * op it takes (logical ones only when `logical`). */
#define INTEGER_OPS(FN, T, TYPE, SIGNED, LOGICAL)                                 \
  static void FN(void) {                                                          \
    for (unsigned k = 0; k < sizeof(integer_ops) / sizeof(integer_ops[0]); ++k) { \
      const MPI_Op op = integer_ops[k];                                           \
      if (!(LOGICAL) && is_logical(op)) continue;                                 \
      T in[ne], all[ne], root[ne], scan[ne];                                      \
      for (int i = 0; i < ne; ++i) in[i] = (T)contribution(op, rank, i, SIGNED);  \
      MPI_Allreduce(in, all, ne, TYPE, op, MPI_COMM_WORLD);                       \
      MPI_Reduce(in, root, ne, TYPE, op, size - 1, MPI_COMM_WORLD);               \
      MPI_Scan(in, scan, ne, TYPE, op, MPI_COMM_WORLD);                           \
      int bad = 0;                                                                \
      for (int i = 0; i < ne; ++i) {                                              \
        bad += all[i] != (T)expected(op, size, i, SIGNED);                        \
        bad += rank == size - 1 && root[i] != (T)expected(op, size, i, SIGNED);   \
        bad += scan[i] != (T)expected(op, rank + 1, i, SIGNED);                   \
      }                                                                           \
      CHECK(bad == 0, "%s with op %d: %d wrong", #TYPE, k, bad);                  \
    }                                                                             \
  }

INTEGER_OPS(ops_signed_char, signed char, MPI_SIGNED_CHAR, 1, 1)
INTEGER_OPS(ops_unsigned_char, unsigned char, MPI_UNSIGNED_CHAR, 0, 1)
INTEGER_OPS(ops_short, short, MPI_SHORT, 1, 1)
INTEGER_OPS(ops_unsigned_short, unsigned short, MPI_UNSIGNED_SHORT, 0, 1)
INTEGER_OPS(ops_int, int, MPI_INT, 1, 1)
INTEGER_OPS(ops_unsigned, unsigned, MPI_UNSIGNED, 0, 1)
INTEGER_OPS(ops_long, long, MPI_LONG, 1, 1)
INTEGER_OPS(ops_unsigned_long, unsigned long, MPI_UNSIGNED_LONG, 0, 1)
INTEGER_OPS(ops_long_long, long long, MPI_LONG_LONG, 1, 1)
INTEGER_OPS(ops_unsigned_long_long, unsigned long long, MPI_UNSIGNED_LONG_LONG, 0, 1)
INTEGER_OPS(ops_int8, int8_t, MPI_INT8_T, 1, 1)
INTEGER_OPS(ops_int16, int16_t, MPI_INT16_T, 1, 1)
INTEGER_OPS(ops_int32, int32_t, MPI_INT32_T, 1, 1)
INTEGER_OPS(ops_int64, int64_t, MPI_INT64_T, 1, 1)
INTEGER_OPS(ops_uint8, uint8_t, MPI_UINT8_T, 0, 1)
INTEGER_OPS(ops_uint16, uint16_t, MPI_UINT16_T, 0, 1)
INTEGER_OPS(ops_uint32, uint32_t, MPI_UINT32_T, 0, 1)
INTEGER_OPS(ops_uint64, uint64_t, MPI_UINT64_T, 0, 1)
INTEGER_OPS(ops_aint, MPI_Aint, MPI_AINT, 1, 0)
INTEGER_OPS(ops_offset, MPI_Offset, MPI_OFFSET, 1, 0)
INTEGER_OPS(ops_count, MPI_Count, MPI_COUNT, 1, 0)

static const MPI_Op float_ops[] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD};

/* Small integers: every sum and product is exact in any floating type. */
#define FLOAT_OPS(FN, T, TYPE)                                              \
  static void FN(void) {                                                    \
    for (unsigned k = 0; k < 4; ++k) {                                      \
      const MPI_Op op = float_ops[k];                                       \
      T in[ne], all[ne], root[ne];                                          \
      for (int i = 0; i < ne; ++i) in[i] = (T)contribution(op, rank, i, 1); \
      MPI_Allreduce(in, all, ne, TYPE, op, MPI_COMM_WORLD);                 \
      MPI_Reduce(in, root, ne, TYPE, op, size / 2, MPI_COMM_WORLD);         \
      int bad = 0;                                                          \
      for (int i = 0; i < ne; ++i) {                                        \
        bad += all[i] != (T)expected(op, size, i, 1);                       \
        bad += rank == size / 2 && root[i] != (T)expected(op, size, i, 1);  \
      }                                                                     \
      CHECK(bad == 0, "%s with op %d: %d wrong", #TYPE, k, bad);            \
    }                                                                       \
  }

FLOAT_OPS(ops_float, float, MPI_FLOAT)
FLOAT_OPS(ops_double, double, MPI_DOUBLE)
FLOAT_OPS(ops_long_double, long double, MPI_LONG_DOUBLE)

/* Gaussian integers: sums and products stay exact. */
#define COMPLEX_OPS(FN, T, TYPE)                                                              \
  static void FN(void) {                                                                      \
    for (int k = 0; k < 2; ++k) {                                                             \
      const MPI_Op op = k == 0 ? MPI_SUM : MPI_PROD;                                          \
      T in[ne], all[ne];                                                                      \
      for (int i = 0; i < ne; ++i) in[i] = (T)((rank + i) % 2 + 1) + (T)((rank * i) % 3) * I; \
      MPI_Allreduce(in, all, ne, TYPE, op, MPI_COMM_WORLD);                                   \
      int bad = 0;                                                                            \
      for (int i = 0; i < ne; ++i) {                                                          \
        double complex want = k == 0 ? 0 : 1;                                                 \
        for (int r = 0; r < size; ++r) {                                                      \
          const double complex v = (double)((r + i) % 2 + 1) + (double)((r * i) % 3) * I;     \
          want = k == 0 ? want + v : want * v;                                                \
        }                                                                                     \
        bad += creal(all[i]) != creal(want) || cimag(all[i]) != cimag(want);                  \
      }                                                                                       \
      CHECK(bad == 0, "%s with op %d: %d wrong", #TYPE, k, bad);                              \
    }                                                                                         \
  }

COMPLEX_OPS(ops_float_complex, float complex, MPI_C_FLOAT_COMPLEX)
COMPLEX_OPS(ops_double_complex, double complex, MPI_C_DOUBLE_COMPLEX)
COMPLEX_OPS(ops_long_double_complex, long double complex, MPI_C_LONG_DOUBLE_COMPLEX)

static void ops_bool_and_byte(void) {
  const MPI_Op logical[] = {MPI_LAND, MPI_LOR, MPI_LXOR};
  const MPI_Op bitwise[] = {MPI_BAND, MPI_BOR, MPI_BXOR};
  for (int k = 0; k < 3; ++k) {
    bool in[ne], all[ne];
    unsigned char bin[ne], ball[ne];
    for (int i = 0; i < ne; ++i) {
      in[i] = contribution(logical[k], rank, i, 0) != 0;
      bin[i] = (unsigned char)contribution(bitwise[k], rank, i, 0);
    }
    MPI_Allreduce(in, all, ne, MPI_C_BOOL, logical[k], MPI_COMM_WORLD);
    MPI_Allreduce(bin, ball, ne, MPI_BYTE, bitwise[k], MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < ne; ++i) {
      bad += all[i] != (expected(logical[k], size, i, 0) != 0);
      bad += ball[i] != (unsigned char)expected(bitwise[k], size, i, 0);
    }
    CHECK(bad == 0, "bool/byte op %d: %d wrong", k, bad);
  }
}

/* MINLOC/MAXLOC: values tie across ranks; the lowest index must win. The
 * index runs against the rank in every other element, so that the winner
 * of a tie is not simply the lowest rank. */
static int loc_value(int r, int i) {
  return (r + i) % 3;
}
static int loc_index(int r, int i) {
  return i % 2 == 0 ? r : 100 - r;
}

static void expected_loc(int i, int want_max, int *value, int *index) {
  *value = loc_value(0, i);
  *index = loc_index(0, i);
  for (int r = 1; r < size; ++r) {
    const int v = loc_value(r, i);
    const int x = loc_index(r, i);
    if ((want_max ? v > *value : v < *value) || (v == *value && x < *index)) {
      *value = v;
      *index = x;
    }
  }
}

#define LOC_OPS(FN, V, TYPE)                                                        \
  static void FN(void) {                                                            \
    struct pair {                                                                   \
      V value;                                                                      \
      int index;                                                                    \
    } in[ne], out[ne];                                                              \
    for (int k = 0; k < 2; ++k) {                                                   \
      const MPI_Op op = k == 0 ? MPI_MAXLOC : MPI_MINLOC;                           \
      for (int i = 0; i < ne; ++i) {                                                \
        in[i].value = (V)loc_value(rank, i);                                        \
        in[i].index = loc_index(rank, i);                                           \
      }                                                                             \
      MPI_Allreduce(in, out, ne, TYPE, op, MPI_COMM_WORLD);                         \
      int bad = 0;                                                                  \
      for (int i = 0; i < ne; ++i) {                                                \
        int v, x;                                                                   \
        expected_loc(i, k == 0, &v, &x);                                            \
        bad += out[i].value != (V)v || out[i].index != x;                           \
      }                                                                             \
      CHECK(bad == 0, "%s %s: %d wrong", #TYPE, k == 0 ? "maxloc" : "minloc", bad); \
    }                                                                               \
  }

LOC_OPS(loc_float_int, float, MPI_FLOAT_INT)
LOC_OPS(loc_double_int, double, MPI_DOUBLE_INT)
LOC_OPS(loc_long_int, long, MPI_LONG_INT)
LOC_OPS(loc_2int, int, MPI_2INT)
LOC_OPS(loc_short_int, short, MPI_SHORT_INT)
LOC_OPS(loc_long_double_int, long double, MPI_LONG_DOUBLE_INT)

/* MPI_REPLACE (x o y = y) yields the last rank's value, MPI_NO_OP (x o y =
 * x) the first rank's. */
static void replace_and_no_op(void) {
  int in[3] = {rank, rank * 2, -rank};
  int out[3];
  MPI_Allreduce(in, out, 3, MPI_INT, MPI_REPLACE, MPI_COMM_WORLD);
  CHECK(out[0] == size - 1 && out[1] == 2 * (size - 1), "replace gave %d %d", out[0], out[1]);
  MPI_Allreduce(in, out, 3, MPI_INT, MPI_NO_OP, MPI_COMM_WORLD);
  CHECK(out[0] == 0 && out[1] == 0 && out[2] == 0, "no_op gave %d %d", out[0], out[1]);
}

/* --- a non-commutative user op: 2x2 integer matrix products -------------- */

static void matmul(void *invec, void *inoutvec, int *len, MPI_Datatype *type) {
  CHECK(*type == MPI_INT && *len % 4 == 0, "user op called with len %d", *len);
  const int *a = invec;
  int *b = inoutvec;
  for (int m = 0; m + 4 <= *len; m += 4) {
    const int c0 = a[m] * b[m] + a[m + 1] * b[m + 2];
    const int c1 = a[m] * b[m + 1] + a[m + 1] * b[m + 3];
    const int c2 = a[m + 2] * b[m] + a[m + 3] * b[m + 2];
    const int c3 = a[m + 2] * b[m + 1] + a[m + 3] * b[m + 3];
    b[m] = c0, b[m + 1] = c1, b[m + 2] = c2, b[m + 3] = c3;
  }
}

/* Matrix j of rank r: shears that do not commute with each other. */
static void matrix_of(int r, int j, int *m) {
  const int a = (r + j) % 3 + 1;
  m[0] = 1, m[1] = r % 2 == 0 ? a : 0, m[2] = r % 2 == 0 ? 0 : a, m[3] = 1;
}

/* The product M_first .. M_last (ranks in order) of matrix j. */
static void product(int first, int last, int j, int *out) {
  out[0] = 1, out[1] = 0, out[2] = 0, out[3] = 1;
  for (int r = last; r >= first; --r) {
    int m[4];
    matrix_of(r, j, m);
    int len = 4;
    MPI_Datatype t = MPI_INT;
    matmul(m, out, &len, &t); /* out = M_r * out */
  }
}

static int same_matrices(const int *got, int first, int last, int n) {
  int bad = 0;
  for (int j = 0; j < n; ++j) {
    int want[4];
    product(first, last, j, want);
    for (int e = 0; e < 4; ++e) bad += got[4 * j + e] != want[e];
  }
  return bad;
}

static void user_op(void) {
  MPI_Op op = MPI_OP_NULL;
  CHECK(MPI_Op_create(matmul, 0, &op) == MPI_SUCCESS && op != MPI_OP_NULL, "op_create");
  int commute = -1;
  MPI_Op_commutative(op, &commute);
  CHECK(commute == 0, "user op commutative = %d", commute);
  MPI_Op_commutative(MPI_SUM, &commute);
  CHECK(commute == 1, "MPI_SUM commutative = %d", commute);
  enum { nm = 5 };
  int in[4 * nm * 8], out[4 * nm * 8];
  for (int j = 0; j < nm * 8; ++j) matrix_of(rank, j, in + 4 * j);
  for (int k = 0; k < 3; ++k) {
    MPI_Reduce(in, out, 4 * nm, MPI_INT, op, roots[k], MPI_COMM_WORLD);
    if (rank == roots[k]) {
      CHECK(same_matrices(out, 0, size - 1, nm) == 0, "user-op reduce to %d", roots[k]);
    }
  }
  MPI_Allreduce(in, out, 4 * nm, MPI_INT, op, MPI_COMM_WORLD);
  CHECK(same_matrices(out, 0, size - 1, nm) == 0, "user-op allreduce out of rank order");
  MPI_Scan(in, out, 4 * nm, MPI_INT, op, MPI_COMM_WORLD);
  CHECK(same_matrices(out, 0, rank, nm) == 0, "user-op scan out of rank order");
  MPI_Exscan(in, out, 4 * nm, MPI_INT, op, MPI_COMM_WORLD);
  if (rank > 0) CHECK(same_matrices(out, 0, rank - 1, nm) == 0, "user-op exscan");
  MPI_Reduce_scatter_block(in, out, 4, MPI_INT, op, MPI_COMM_WORLD);
  int want[4];
  product(0, size - 1, rank, want);
  CHECK(memcmp(out, want, sizeof(want)) == 0, "user-op reduce_scatter_block");
  CHECK(MPI_Op_free(&op) == MPI_SUCCESS && op == MPI_OP_NULL, "op_free");
}

/* --- error classes under MPI_ERRORS_RETURN ------------------------------- */

static void expect_class(int err, int want, const char *what) {
  int cls = -1;
  MPI_Error_class(err, &cls);
  CHECK(cls == want, "%s: class %d, expected %d", what, cls, want);
}

/* Every rank makes the same bad call, so none waits for another. */
static void errors(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int a[4] = {1, 2, 3, 4};
  int b[4 * 8];
  double d[2] = {1, 2};
  const MPI_Comm w = MPI_COMM_WORLD;
  expect_class(MPI_Bcast(a, 1, MPI_INT, size, w), MPI_ERR_ROOT, "bcast root = size");
  expect_class(MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, -1, w), MPI_ERR_ROOT, "reduce root -1");
  expect_class(MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, size + 2, w), MPI_ERR_ROOT, "gather root");
  expect_class(MPI_Scatterv(a, NULL, NULL, MPI_INT, b, 1, MPI_INT, -4, w), MPI_ERR_ROOT,
               "scatterv root");
  expect_class(MPI_Allreduce(a, b, 1, MPI_INT, MPI_OP_NULL, w), MPI_ERR_OP, "MPI_OP_NULL");
  expect_class(MPI_Allreduce(a, b, 1, MPI_INT, (MPI_Op)0x4000ffff, w), MPI_ERR_OP, "bad op");
  expect_class(MPI_Allreduce(d, d + 1, 1, MPI_DOUBLE, MPI_BAND, w), MPI_ERR_OP, "band on double");
  expect_class(MPI_Allreduce(d, d + 1, 1, MPI_DOUBLE, MPI_LAND, w), MPI_ERR_OP, "land on double");
  expect_class(MPI_Allreduce(a, b, 1, MPI_INT, MPI_MAXLOC, w), MPI_ERR_OP, "maxloc on int");
  expect_class(MPI_Allreduce(a, b, 1, MPI_C_BOOL, MPI_SUM, w), MPI_ERR_OP, "sum on bool");
  expect_class(MPI_Allreduce(a, b, 1, MPI_CHAR, MPI_SUM, w), MPI_ERR_OP, "sum on char");
  expect_class(MPI_Allreduce(a, b, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX, w), MPI_ERR_OP,
               "max on complex");
  expect_class(MPI_Allreduce(a, b, 1, MPI_AINT, MPI_LOR, w), MPI_ERR_OP, "lor on MPI_AINT");
  expect_class(MPI_Reduce_scatter_block(a, b, 1, MPI_BYTE, MPI_SUM, w), MPI_ERR_OP, "sum on byte");
  expect_class(MPI_Scan(a, b, 1, MPI_FLOAT_INT, MPI_PROD, w), MPI_ERR_OP, "prod on float_int");
  expect_class(MPI_Allreduce(a, a, 2, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER, "aliased buffers");
  expect_class(MPI_Allreduce(a, a + 1, 2, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER,
               "overlapping buffers");
  expect_class(MPI_Allgather(b, 1, MPI_INT, b, 1, MPI_INT, w), MPI_ERR_BUFFER, "aliased allgather");
  /* The calls that did not check (MPICH's errors/coll/noalias2 and 3): the
   * rooted ones at the root only, which must fail before waiting for
   * anyone; the others on every rank. */
  {
    int counts[8], displs[8];
    MPI_Datatype types[8];
    for (int i = 0; i < 8; ++i) counts[i] = 1, displs[i] = i, types[i] = MPI_INT;
    MPI_Request r = MPI_REQUEST_NULL;
    if (rank == 0) {
      expect_class(MPI_Gatherv(b, 1, MPI_INT, b, counts, displs, MPI_INT, 0, w), MPI_ERR_BUFFER,
                   "aliased gatherv");
      expect_class(MPI_Scatterv(b, counts, displs, MPI_INT, b, 1, MPI_INT, 0, w), MPI_ERR_BUFFER,
                   "aliased scatterv");
      expect_class(MPI_Igather(b, 1, MPI_INT, b, 1, MPI_INT, 0, w, &r), MPI_ERR_BUFFER,
                   "aliased igather");
      expect_class(MPI_Iscatterv(b, counts, displs, MPI_INT, b, 1, MPI_INT, 0, w, &r),
                   MPI_ERR_BUFFER, "aliased iscatterv");
    }
    expect_class(MPI_Iallgather(&b[rank], 1, MPI_INT, b, 1, MPI_INT, w, &r), MPI_ERR_BUFFER,
                 "iallgather from its own block");
    expect_class(MPI_Ialltoall(b, 1, MPI_INT, b, 1, MPI_INT, w, &r), MPI_ERR_BUFFER,
                 "aliased ialltoall");
    expect_class(MPI_Ialltoallv(b, counts, displs, MPI_INT, b, counts, displs, MPI_INT, w, &r),
                 MPI_ERR_BUFFER, "aliased ialltoallv");
    expect_class(MPI_Alltoallw(b, counts, displs, types, b, counts, displs, types, w),
                 MPI_ERR_BUFFER, "aliased alltoallw");
    CHECK(r == MPI_REQUEST_NULL, "an aliased nonblocking call made a request");
  }
  expect_class(MPI_Alltoall(a, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, w), MPI_ERR_BUFFER,
               "in-place receive buffer");
  expect_class(MPI_Bcast(a, -1, MPI_INT, 0, w), MPI_ERR_COUNT, "bcast count -1");
  expect_class(MPI_Allreduce(a, b, -2, MPI_INT, MPI_SUM, w), MPI_ERR_COUNT, "allreduce count");
  expect_class(MPI_Bcast(a, 1, MPI_DATATYPE_NULL, 0, w), MPI_ERR_TYPE, "bcast datatype null");
  expect_class(MPI_Allgather(a, 1, MPI_INT, b, 1, MPI_DATATYPE_NULL, w), MPI_ERR_TYPE,
               "allgather recvtype");
  expect_class(MPI_Bcast(NULL, 3, MPI_INT, 0, w), MPI_ERR_BUFFER, "bcast NULL buffer");
  expect_class(MPI_Bcast(a, 1, MPI_INT, 0, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_COMM_NULL");
  expect_class(MPI_Allgatherv(a, 1, MPI_INT, b, NULL, NULL, MPI_INT, w), MPI_ERR_ARG,
               "allgatherv NULL counts");
  int counts[8] = {1, 1, 1, 1, 1, 1, 1, 1}, displs[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  counts[size - 1] = -1;
  expect_class(MPI_Allgatherv(a, 1, MPI_INT, b, counts, displs, MPI_INT, w), MPI_ERR_COUNT,
               "allgatherv negative count");
  MPI_Op sum = MPI_SUM;
  expect_class(MPI_Op_free(&sum), MPI_ERR_OP, "freeing MPI_SUM");
  MPI_Op null = MPI_OP_NULL;
  expect_class(MPI_Op_free(&null), MPI_ERR_OP, "freeing MPI_OP_NULL");
  expect_class(MPI_Reduce_local(a, b, 1, MPI_DOUBLE, MPI_BXOR), MPI_ERR_OP, "reduce_local");
  int inout[2] = {10, 20};
  CHECK(MPI_Reduce_local(a, inout, 2, MPI_INT, MPI_SUM) == MPI_SUCCESS && inout[0] == 11 &&
            inout[1] == 22,
        "reduce_local gave %d %d", inout[0], inout[1]);
  /* MPI_IN_PLACE was read as the address -1 (a crash); aliases were summed. */
  expect_class(MPI_Reduce_local(MPI_IN_PLACE, inout, 2, MPI_INT, MPI_SUM), MPI_ERR_BUFFER,
               "reduce_local in place");
  expect_class(MPI_Reduce_local(inout, MPI_IN_PLACE, 2, MPI_INT, MPI_SUM), MPI_ERR_BUFFER,
               "reduce_local inout in place");
  expect_class(MPI_Reduce_local(inout, inout, 2, MPI_INT, MPI_SUM), MPI_ERR_BUFFER,
               "reduce_local aliased");
  CHECK(inout[0] == 11 && inout[1] == 22, "reduce_local errors changed %d %d", inout[0], inout[1]);
  /* Root sends two ints where the others expect one: every other rank sees
   * the truncation (a truncated rank passes on one byte more than it holds,
   * so that the ranks below it in the tree are told too). */
  int two[2] = {5, 6};
  expect_class(MPI_Bcast(two, rank == 0 ? 2 : 1, MPI_INT, 0, w),
               rank == 0 ? MPI_SUCCESS : MPI_ERR_TRUNCATE, "bcast with mismatched counts");
  CHECK(two[0] == 5, "truncated bcast delivered %d", two[0]);
  /* And the other way: the root sends one int where the others expect two;
   * every other rank is told (MPICH's errors/coll/bcastlength), also with a
   * root that is not rank 0. */
  for (int root = 0; root < size && root < 2; ++root) {
    two[0] = rank == root ? 7 : -1;
    expect_class(MPI_Bcast(two, rank == root ? 1 : 2, MPI_INT, root, w),
                 rank == root ? MPI_SUCCESS : MPI_ERR_TRUNCATE, "bcast of fewer than expected");
    CHECK(two[0] == 7, "short bcast delivered %d", two[0]);
  }
  /* Allreduce with counts that differ between ranks: every rank is told,
   * none waits forever (MPICH's errors/coll/allreducelength, which hangs
   * MPICH too), in both directions; then a matching one works. */
  for (int longer = 0; longer < 2 && size > 1; ++longer) {
    int in[2] = {1, 1};
    int out[2] = {0, 0};
    const int n = (rank == 0) == (longer == 1) ? 2 : 1;
    expect_class(MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, w), MPI_ERR_TRUNCATE,
                 "allreduce with mismatched counts");
  }
  int one = 1;
  int total = 0;
  expect_class(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, w), MPI_SUCCESS,
               "allreduce after a mismatch");
  CHECK(total == size, "allreduce after a mismatch: %d", total);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* The same checks through the large-count (`_c`) bindings, and what only
 * they can get wrong: counts and array entries past an int, negative counts
 * below INT_MIN, a strided type counted past 2^31-1. Every rank makes the
 * same bad call. */
static void sum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *type) {
  (void)in, (void)inout, (void)len, (void)type;
}

static void errors_c(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int a[4] = {1, 2, 3, 4};
  int b[4 * 8];
  const MPI_Comm w = MPI_COMM_WORLD;
  const MPI_Count big = 3000000000LL;
  MPI_Request r = MPI_REQUEST_NULL;
  expect_class(MPI_Bcast_c(a, 1, MPI_INT, size, w), MPI_ERR_ROOT, "bcast_c root = size");
  expect_class(MPI_Ibcast_c(a, 1, MPI_INT, -3, w, &r), MPI_ERR_ROOT, "ibcast_c root -3");
  expect_class(MPI_Reduce_c(a, b, 1, MPI_INT, MPI_SUM, size, w), MPI_ERR_ROOT, "reduce_c root");
  expect_class(MPI_Gather_init_c(a, 1, MPI_INT, b, 1, MPI_INT, -1, w, MPI_INFO_NULL, &r),
               MPI_ERR_ROOT, "gather_init_c root");
  expect_class(MPI_Bcast_c(a, -1, MPI_INT, 0, w), MPI_ERR_COUNT, "bcast_c count -1");
  expect_class(MPI_Bcast_c(a, -big, MPI_INT, 0, w), MPI_ERR_COUNT, "bcast_c count -3e9");
  expect_class(MPI_Allreduce_c(a, b, -2, MPI_INT, MPI_SUM, w), MPI_ERR_COUNT, "allreduce_c count");
  expect_class(MPI_Allreduce_c(a, b, 1, MPI_INT, MPI_OP_NULL, w), MPI_ERR_OP, "allreduce_c op");
  expect_class(MPI_Iallreduce_c(a, b, 1, MPI_DOUBLE, MPI_BAND, w, &r), MPI_ERR_OP,
               "iallreduce_c band on double");
  /* A count past an int keeps the op check of the type it counts. */
  expect_class(MPI_Reduce_local_c(a, b, big, MPI_BYTE, MPI_SUM), MPI_ERR_OP,
               "reduce_local_c sum on 3e9 bytes");
  expect_class(MPI_Reduce_local_c(a, b, 1, MPI_INT, (MPI_Op)0x4000ffff), MPI_ERR_OP,
               "reduce_local_c bad op");
  expect_class(MPI_Allreduce_c(a, a, 2, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER, "allreduce_c alias");
  expect_class(MPI_Bcast_c(a, 1, MPI_DATATYPE_NULL, 0, w), MPI_ERR_TYPE, "bcast_c type null");
  expect_class(MPI_Bcast_c(a, big, (MPI_Datatype)12345, 0, w), MPI_ERR_TYPE,
               "bcast_c 3e9 of a garbage type");
  expect_class(MPI_Scatter_c(a, 1, MPI_INT, b, 1, MPI_DATATYPE_NULL, 0, w), MPI_ERR_TYPE,
               "scatter_c recvtype");
  expect_class(MPI_Bcast_c(NULL, 3, MPI_INT, 0, w), MPI_ERR_BUFFER, "bcast_c NULL buffer");
  expect_class(MPI_Bcast_c(a, 1, MPI_INT, 0, MPI_COMM_NULL), MPI_ERR_COMM, "bcast_c comm null");
  expect_class(MPI_Ibcast_c(a, 1, MPI_INT, 0, w, NULL), MPI_ERR_ARG, "ibcast_c NULL request");
  MPI_Datatype strided = MPI_DATATYPE_NULL;
  MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  expect_class(MPI_Bcast_c(a, big, strided, 0, w), MPI_ERR_COUNT, "bcast_c 3e9 strided");
  MPI_Type_free(&strided);
  MPI_Count counts[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  MPI_Aint displs[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  expect_class(MPI_Allgatherv_c(a, 1, MPI_INT, b, NULL, displs, MPI_INT, w), MPI_ERR_ARG,
               "allgatherv_c NULL counts");
  counts[size - 1] = -1;
  expect_class(MPI_Allgatherv_c(a, 1, MPI_INT, b, counts, displs, MPI_INT, w), MPI_ERR_COUNT,
               "allgatherv_c negative count");
  counts[size - 1] = big;
  expect_class(MPI_Iallgatherv_c(a, 1, MPI_INT, b, counts, displs, MPI_INT, w, &r), MPI_ERR_COUNT,
               "iallgatherv_c count past an int");
  counts[size - 1] = 1;
  displs[0] = (MPI_Aint)1 << 40;
  expect_class(MPI_Allgatherv_c(a, 1, MPI_INT, b, counts, displs, MPI_INT, w), MPI_ERR_COUNT,
               "allgatherv_c displacement past an int");
  displs[0] = (MPI_Aint)1 << 62; /* 2^64 bytes of ints */
  expect_class(MPI_Alltoallv_c(a, counts, displs, MPI_INT, b, counts, displs, MPI_INT, w),
               MPI_ERR_ARG, "alltoallv_c displacement overflowing in bytes");
  displs[0] = 0;
  expect_class(MPI_Reduce_scatter_c(a, b, NULL, MPI_INT, MPI_SUM, w), MPI_ERR_ARG,
               "reduce_scatter_c NULL counts");
  expect_class(MPI_Neighbor_allgather_c(a, 1, MPI_INT, b, 1, MPI_INT, w), MPI_ERR_TOPOLOGY,
               "neighbor_allgather_c without a topology");
  MPI_Op op = MPI_OP_NULL;
  expect_class(MPI_Op_create_c(NULL, 1, &op), MPI_ERR_ARG, "op_create_c NULL function");
  expect_class(MPI_Op_create_c(sum_c, 1, NULL), MPI_ERR_ARG, "op_create_c NULL op");
  /* A good call still works after all that. */
  int x = rank + 1;
  CHECK(MPI_Allreduce_c(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, w) == MPI_SUCCESS &&
            x == size * (size + 1) / 2,
        "allreduce_c after the errors gave %d", x);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
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
  ops_signed_char();
  ops_unsigned_char();
  ops_short();
  ops_unsigned_short();
  ops_int();
  ops_unsigned();
  ops_long();
  ops_unsigned_long();
  ops_long_long();
  ops_unsigned_long_long();
  ops_int8();
  ops_int16();
  ops_int32();
  ops_int64();
  ops_uint8();
  ops_uint16();
  ops_uint32();
  ops_uint64();
  ops_aint();
  ops_offset();
  ops_count();
  ops_float();
  ops_double();
  ops_long_double();
  ops_float_complex();
  ops_double_complex();
  ops_long_double_complex();
  ops_bool_and_byte();
  loc_float_int();
  loc_double_int();
  loc_long_int();
  loc_2int();
  loc_short_int();
  loc_long_double_int();
  replace_and_no_op();
  user_op();
  errors();
  errors_c();
  isolation_and_subcommunicators();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) printf("coll: all checks passed on %d ranks\n", size);
  return finish();
}
