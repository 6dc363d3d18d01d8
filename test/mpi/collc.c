/* The large-count (`_c`) collectives with small counts: every one of them,
 * blocking, nonblocking (MPI_I*_c) and persistent (*_init_c; Bcast_init_c
 * started twice),
 * on MPI_COMM_WORLD (and a periodic ring for the neighbourhood ones), every
 * received int checked and the gaps between blocks left alone; a user op
 * made by MPI_Op_create_c in Reduce_c, Allreduce, Reduce_local_c and the
 * nonblocking and persistent reductions; Reduce_local_c with a predefined
 * op. Argument errors of the `_c` calls are in coll.c.
 *
 * With "huge" (2 ranks; about 4.3 GB of memory on the node): MPI_Bcast_c of
 * 2^31 + 4099 MPI_BYTEs from rank 1, every byte checked on rank 0, which then
 * reduces that buffer into a second one with MPI_Reduce_local_c, with MPI_BOR
 * and then with a user op from MPI_Op_create_c (handed all the elements in
 * one call), every byte of the result checked.
 * With "huge-reduce" (2 ranks; about 11 GB: the reduction keeps partial
 * results beside the buffers): MPI_Iallreduce_c with MPI_BOR (and a type
 * made while it runs) and MPI_Reduce_c
 * with the user op over 2^31 + 4099 MPI_BYTEs in place, then MPI_Alltoallv_c
 * of as many to the other rank; too big for the suite, run by hand. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank, size;
static MPI_Comm ring; /* periodic 1-D Cartesian ring over all ranks */

enum { N = 4, GAP = 3, MARK = -777 };

/* What rank r puts in element i of block b (or of its only block). */
static int value(int r, int b, int i) {
  return r * 1000 + b * 100 + i + 1;
}

/* How a call is made: blocking, nonblocking, persistent. */
enum form { blocking, nonblocking, persistent, forms };
static const char *const form_names[] = {"blocking", "nonblocking", "persistent"};

/* Completes the request a form made: waits for a nonblocking one; starts a
 * persistent one and waits (it stays for another start until freed). */
static void complete(enum form f, MPI_Request *r) {
  if (f == blocking) return;
  if (f == persistent) MPI_Start(r);
  MPI_Wait(r, MPI_STATUS_IGNORE);
}

static void finish_request(enum form f, MPI_Request *r) {
  if (f == persistent) MPI_Request_free(r);
}

static void fill(int *buf, int n, int v) {
  for (int i = 0; i < n; ++i) buf[i] = v;
}

/* --- a user op with an MPI_Count length ---------------------------------- */

static MPI_Count user_elements = 0; /* elements the op has been handed */
static int user_bad_type = 0;

/* A sum that counts the elements it is handed and must see MPI_INT. */
static void sum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *type) {
  if (*type != MPI_INT) ++user_bad_type;
  const int *a = in;
  int *b = inout;
  for (MPI_Count i = 0; i < *len; ++i) b[i] += a[i];
  user_elements += *len;
}

/* --- Bcast ---------------------------------------------------------------- */

static void bcast(enum form f) {
  const int root = size - 1;
  int buf[N];
  MPI_Request r = MPI_REQUEST_NULL;
  for (int round = 0; round < (f == persistent ? 2 : 1); ++round) {
    for (int i = 0; i < N; ++i) buf[i] = rank == root ? value(root, round, i) : MARK;
    if (f == blocking) {
      MPI_Bcast_c(buf, N, MPI_INT, root, MPI_COMM_WORLD);
    } else if (f == nonblocking) {
      MPI_Ibcast_c(buf, N, MPI_INT, root, MPI_COMM_WORLD, &r);
    } else if (round == 0) {
      MPI_Bcast_init_c(buf, N, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    }
    complete(f, &r);
    for (int i = 0; i < N; ++i) {
      CHECK(buf[i] == value(root, round, i), "bcast %s round %d [%d] = %d", form_names[f], round, i,
            buf[i]);
    }
  }
  finish_request(f, &r);
}

/* --- Gather, Gatherv, Scatter, Scatterv ----------------------------------- */

static void gather(enum form f, int vector) {
  const int root = size / 2;
  int mine[N + 1];
  int *all = malloc(sizeof(int) * (size_t)size * (N + 1 + GAP));
  MPI_Count counts[8];
  MPI_Aint displs[8];
  for (int i = 0; i < size; ++i) {
    counts[i] = vector ? i % (N + 1) : N; /* rank 0 sends nothing in Gatherv */
    displs[i] = (MPI_Aint)i * (N + 1 + GAP) + 1;
  }
  const MPI_Count stride = vector ? 0 : N;
  MPI_Request r = MPI_REQUEST_NULL;
  for (int i = 0; i < N + 1; ++i) mine[i] = value(rank, 0, i);
  fill(all, size * (N + 1 + GAP), MARK);
  const MPI_Count sendcount = vector ? counts[rank] : N;
  if (!vector) {
    if (f == blocking) {
      MPI_Gather_c(mine, sendcount, MPI_INT, all, N, MPI_INT, root, MPI_COMM_WORLD);
    } else if (f == nonblocking) {
      MPI_Igather_c(mine, sendcount, MPI_INT, all, N, MPI_INT, root, MPI_COMM_WORLD, &r);
    } else {
      MPI_Gather_init_c(mine, sendcount, MPI_INT, all, N, MPI_INT, root, MPI_COMM_WORLD,
                        MPI_INFO_NULL, &r);
    }
  } else if (f == blocking) {
    MPI_Gatherv_c(mine, sendcount, MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD);
  } else if (f == nonblocking) {
    MPI_Igatherv_c(mine, sendcount, MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD,
                   &r);
  } else {
    MPI_Gatherv_init_c(mine, sendcount, MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &r);
  }
  complete(f, &r);
  finish_request(f, &r);
  if (rank == root) {
    for (int b = 0; b < size; ++b) {
      const MPI_Count at = vector ? displs[b] : b * stride;
      for (MPI_Count i = 0; i < counts[b]; ++i) {
        CHECK(all[at + i] == value(b, 0, (int)i), "%s %s block %d [%lld] = %d",
              vector ? "gatherv" : "gather", form_names[f], b, (long long)i, all[at + i]);
      }
      if (vector) {
        CHECK(all[at - 1] == MARK && all[at + counts[b]] == MARK, "gatherv %s gap of block %d",
              form_names[f], b);
      }
    }
  } else {
    for (int i = 0; i < size * (N + 1 + GAP); ++i) {
      CHECK(all[i] == MARK, "gather %s wrote a non-root's buffer", form_names[f]);
    }
  }
  free(all);
}

static void scatter(enum form f, int vector) {
  const int root = size - 1;
  int *all = malloc(sizeof(int) * (size_t)size * (N + 1 + GAP));
  int mine[N + 2];
  MPI_Count counts[8];
  MPI_Aint displs[8];
  for (int i = 0; i < size; ++i) {
    counts[i] = vector ? (i + 1) % (N + 1) : N;
    displs[i] = (MPI_Aint)(size - 1 - i) * (N + 1 + GAP); /* blocks in reverse order */
  }
  for (int b = 0; b < size; ++b) {
    for (int i = 0; i < N + 1 + GAP; ++i) {
      const MPI_Count at = vector ? displs[b] + i : (MPI_Count)b * N + i;
      if (at < size * (N + 1 + GAP)) all[at] = value(root, b, i);
    }
  }
  if (!vector) {
    for (int b = 0; b < size; ++b) {
      for (int i = 0; i < N; ++i) all[b * N + i] = value(root, b, i);
    }
  }
  fill(mine, N + 2, MARK);
  const MPI_Count recvcount = vector ? counts[rank] : N;
  MPI_Request r = MPI_REQUEST_NULL;
  if (!vector) {
    if (f == blocking) {
      MPI_Scatter_c(all, N, MPI_INT, mine, recvcount, MPI_INT, root, MPI_COMM_WORLD);
    } else if (f == nonblocking) {
      MPI_Iscatter_c(all, N, MPI_INT, mine, recvcount, MPI_INT, root, MPI_COMM_WORLD, &r);
    } else {
      MPI_Scatter_init_c(all, N, MPI_INT, mine, recvcount, MPI_INT, root, MPI_COMM_WORLD,
                         MPI_INFO_NULL, &r);
    }
  } else if (f == blocking) {
    MPI_Scatterv_c(all, counts, displs, MPI_INT, mine, recvcount, MPI_INT, root, MPI_COMM_WORLD);
  } else if (f == nonblocking) {
    MPI_Iscatterv_c(all, counts, displs, MPI_INT, mine, recvcount, MPI_INT, root, MPI_COMM_WORLD,
                    &r);
  } else {
    MPI_Scatterv_init_c(all, counts, displs, MPI_INT, mine, recvcount, MPI_INT, root,
                        MPI_COMM_WORLD, MPI_INFO_NULL, &r);
  }
  complete(f, &r);
  finish_request(f, &r);
  for (int i = 0; i < N + 2; ++i) {
    const int want = i < recvcount ? value(root, rank, i) : MARK;
    CHECK(mine[i] == want, "%s %s [%d] = %d, expected %d", vector ? "scatterv" : "scatter",
          form_names[f], i, mine[i], want);
  }
  free(all);
}

/* --- Allgather(v), Alltoall(v,w) ------------------------------------------ */

static void allgather(enum form f, int vector) {
  int mine[N];
  int all[8 * (N + GAP)];
  MPI_Count counts[8];
  MPI_Aint displs[8];
  for (int i = 0; i < size; ++i) {
    counts[i] = vector ? 1 + i % N : N;
    displs[i] = (MPI_Aint)i * (N + GAP) + GAP;
  }
  for (int i = 0; i < N; ++i) mine[i] = value(rank, 0, i);
  fill(all, 8 * (N + GAP), MARK);
  MPI_Request r = MPI_REQUEST_NULL;
  const MPI_Count sendcount = counts[rank];
  if (!vector) {
    if (f == blocking) {
      MPI_Allgather_c(mine, N, MPI_INT, all, N, MPI_INT, MPI_COMM_WORLD);
    } else if (f == nonblocking) {
      MPI_Iallgather_c(mine, N, MPI_INT, all, N, MPI_INT, MPI_COMM_WORLD, &r);
    } else {
      MPI_Allgather_init_c(mine, N, MPI_INT, all, N, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    }
  } else if (f == blocking) {
    MPI_Allgatherv_c(mine, sendcount, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
  } else if (f == nonblocking) {
    MPI_Iallgatherv_c(mine, sendcount, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD, &r);
  } else {
    MPI_Allgatherv_init_c(mine, sendcount, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &r);
  }
  complete(f, &r);
  finish_request(f, &r);
  for (int b = 0; b < size; ++b) {
    const MPI_Aint at = vector ? displs[b] : (MPI_Aint)b * N;
    for (MPI_Count i = 0; i < counts[b]; ++i) {
      CHECK(all[at + i] == value(b, 0, (int)i), "%s %s block %d [%lld] = %d",
            vector ? "allgatherv" : "allgather", form_names[f], b, (long long)i, all[at + i]);
    }
    if (vector) CHECK(all[at - 1] == MARK, "allgatherv %s gap before %d", form_names[f], b);
  }
}

/* kind: 0 alltoall, 1 alltoallv, 2 alltoallw; 3 and 4 are alltoallv and
 * alltoallw from MPI_BOTTOM with absolute addresses as displacements (past
 * 2^31-1 on a 64-bit machine: Iris's v-variant then goes the w way). */
static void alltoall(enum form f, int kind) {
  int out[8 * (N + GAP)];
  int in[8 * (N + GAP)];
  MPI_Count scounts[8], rcounts[8];
  MPI_Aint sdispls[8], rdispls[8];
  MPI_Datatype types[8];
  const MPI_Aint sbase = (MPI_Aint)(uintptr_t)out, rbase = (MPI_Aint)(uintptr_t)in;
  const MPI_Aint unit = sizeof(int);
  for (int i = 0; i < size; ++i) {
    /* Rank r sends (r + i) % N + 1 ints to rank i. */
    scounts[i] = kind == 0 ? N : (rank + i) % N + 1;
    rcounts[i] = kind == 0 ? N : (i + rank) % N + 1;
    const MPI_Aint so = (MPI_Aint)i * (N + GAP), ro = (MPI_Aint)i * (N + GAP) + 1;
    sdispls[i] = kind == 1   ? so
                 : kind == 2 ? so * unit
                 : kind == 3 ? sbase / unit + so
                             : sbase + so * unit;
    rdispls[i] = kind == 1   ? ro
                 : kind == 2 ? ro * unit
                 : kind == 3 ? rbase / unit + ro
                             : rbase + ro * unit;
    types[i] = MPI_INT;
  }
  void *sb = kind >= 3 ? MPI_BOTTOM : out, *rb = kind >= 3 ? MPI_BOTTOM : in;
  CHECK(kind < 3 || sbase % unit == 0, "an int array at an odd address");
  for (int b = 0; b < size; ++b) {
    for (int i = 0; i < N + GAP; ++i) out[b * (N + GAP) + i] = value(rank, b, i);
  }
  if (kind == 0) {
    for (int b = 0; b < size; ++b) {
      for (int i = 0; i < N; ++i) out[b * N + i] = value(rank, b, i);
    }
  }
  fill(in, 8 * (N + GAP), MARK);
  MPI_Request r = MPI_REQUEST_NULL;
  const MPI_Comm c = MPI_COMM_WORLD;
  const MPI_Info info = MPI_INFO_NULL;
  if (kind == 0) {
    if (f == blocking) MPI_Alltoall_c(out, N, MPI_INT, in, N, MPI_INT, c);
    if (f == nonblocking) MPI_Ialltoall_c(out, N, MPI_INT, in, N, MPI_INT, c, &r);
    if (f == persistent) MPI_Alltoall_init_c(out, N, MPI_INT, in, N, MPI_INT, c, info, &r);
  } else if (kind == 1 || kind == 3) {
    if (f == blocking) {
      MPI_Alltoallv_c(sb, scounts, sdispls, MPI_INT, rb, rcounts, rdispls, MPI_INT, c);
    }
    if (f == nonblocking) {
      MPI_Ialltoallv_c(sb, scounts, sdispls, MPI_INT, rb, rcounts, rdispls, MPI_INT, c, &r);
    }
    if (f == persistent) {
      MPI_Alltoallv_init_c(sb, scounts, sdispls, MPI_INT, rb, rcounts, rdispls, MPI_INT, c, info,
                           &r);
    }
  } else {
    if (f == blocking) MPI_Alltoallw_c(sb, scounts, sdispls, types, rb, rcounts, rdispls, types, c);
    if (f == nonblocking) {
      MPI_Ialltoallw_c(sb, scounts, sdispls, types, rb, rcounts, rdispls, types, c, &r);
    }
    if (f == persistent) {
      MPI_Alltoallw_init_c(sb, scounts, sdispls, types, rb, rcounts, rdispls, types, c, info, &r);
    }
  }
  complete(f, &r);
  finish_request(f, &r);
  static const char *const names[] = {"alltoall", "alltoallv", "alltoallw",
                                      "alltoallv from MPI_BOTTOM", "alltoallw from MPI_BOTTOM"};
  for (int b = 0; b < size; ++b) {
    const MPI_Aint at = kind == 0 ? (MPI_Aint)b * N : (MPI_Aint)b * (N + GAP) + 1;
    for (MPI_Count i = 0; i < rcounts[b]; ++i) {
      CHECK(in[at + i] == value(b, rank, (int)i), "%s %s from %d [%lld] = %d", names[kind],
            form_names[f], b, (long long)i, in[at + i]);
    }
    if (kind != 0) {
      CHECK(in[at - 1] == MARK && in[at + rcounts[b]] == MARK, "%s %s gaps of block %d",
            names[kind], form_names[f], b);
    }
  }
}

/* --- reductions ------------------------------------------------------------ */

/* The sum over ranks of value(r, 0, i). */
static int sum_of(int i, int ranks) {
  int s = 0;
  for (int r = 0; r < ranks; ++r) s += value(r, 0, i);
  return s;
}

static void reductions(enum form f, MPI_Op user) {
  const int root = 1 % size;
  int in[8 * N], out[8 * N];
  for (int i = 0; i < 8 * N; ++i) in[i] = value(rank, 0, i);
  const MPI_Comm c = MPI_COMM_WORLD;
  const MPI_Info info = MPI_INFO_NULL;
  MPI_Request r = MPI_REQUEST_NULL;
  const char *fn = form_names[f];

  /* Reduce_c with the user op. */
  fill(out, 8 * N, MARK);
  const MPI_Count before = user_elements;
  if (f == blocking) MPI_Reduce_c(in, out, N, MPI_INT, user, root, c);
  if (f == nonblocking) MPI_Ireduce_c(in, out, N, MPI_INT, user, root, c, &r);
  if (f == persistent) MPI_Reduce_init_c(in, out, N, MPI_INT, user, root, c, info, &r);
  complete(f, &r);
  finish_request(f, &r);
  for (int i = 0; i < N; ++i) {
    const int want = rank == root ? sum_of(i, size) : MARK;
    CHECK(out[i] == want, "reduce_c %s [%d] = %d, expected %d", fn, i, out[i], want);
  }
  CHECK(rank != root || size == 1 || user_elements > before,
        "reduce_c %s: the root never called the user op", fn);
  CHECK(out[N] == MARK, "reduce_c %s wrote past the count", fn);

  /* Allreduce_c with MPI_SUM, in place. */
  memcpy(out, in, sizeof(in));
  if (f == blocking) MPI_Allreduce_c(MPI_IN_PLACE, out, N, MPI_INT, MPI_SUM, c);
  if (f == nonblocking) MPI_Iallreduce_c(MPI_IN_PLACE, out, N, MPI_INT, MPI_SUM, c, &r);
  if (f == persistent) {
    MPI_Allreduce_init_c(MPI_IN_PLACE, out, N, MPI_INT, MPI_SUM, c, info, &r);
  }
  complete(f, &r);
  finish_request(f, &r);
  for (int i = 0; i < N; ++i) {
    CHECK(out[i] == sum_of(i, size), "allreduce_c %s [%d] = %d", fn, i, out[i]);
  }
  CHECK(out[N] == value(rank, 0, N), "allreduce_c %s wrote past the count", fn);

  /* Reduce_scatter_block_c with the user op: block b of the sum to rank b. */
  fill(out, 8 * N, MARK);
  if (f == blocking) MPI_Reduce_scatter_block_c(in, out, 2, MPI_INT, user, c);
  if (f == nonblocking) MPI_Ireduce_scatter_block_c(in, out, 2, MPI_INT, user, c, &r);
  if (f == persistent) MPI_Reduce_scatter_block_init_c(in, out, 2, MPI_INT, user, c, info, &r);
  complete(f, &r);
  finish_request(f, &r);
  for (int i = 0; i < 2; ++i) {
    CHECK(out[i] == sum_of(rank * 2 + i, size), "reduce_scatter_block_c %s [%d] = %d", fn, i,
          out[i]);
  }
  CHECK(out[2] == MARK, "reduce_scatter_block_c %s wrote past its block", fn);

  /* Reduce_scatter_c: rank b gets b % 3 elements, after the blocks ahead. */
  MPI_Count counts[8];
  int first = 0, mine_at = 0;
  for (int b = 0; b < size; ++b) {
    counts[b] = b % 3;
    if (b == rank) mine_at = first;
    first += b % 3;
  }
  fill(out, 8 * N, MARK);
  if (f == blocking) MPI_Reduce_scatter_c(in, out, counts, MPI_INT, MPI_SUM, c);
  if (f == nonblocking) MPI_Ireduce_scatter_c(in, out, counts, MPI_INT, MPI_SUM, c, &r);
  if (f == persistent) MPI_Reduce_scatter_init_c(in, out, counts, MPI_INT, MPI_SUM, c, info, &r);
  complete(f, &r);
  finish_request(f, &r);
  for (int i = 0; i < rank % 3; ++i) {
    CHECK(out[i] == sum_of(mine_at + i, size), "reduce_scatter_c %s [%d] = %d", fn, i, out[i]);
  }
  CHECK(out[rank % 3] == MARK, "reduce_scatter_c %s wrote past its block", fn);

  /* Scan_c with the user op, Exscan_c with MPI_SUM. */
  fill(out, 8 * N, MARK);
  if (f == blocking) MPI_Scan_c(in, out, N, MPI_INT, user, c);
  if (f == nonblocking) MPI_Iscan_c(in, out, N, MPI_INT, user, c, &r);
  if (f == persistent) MPI_Scan_init_c(in, out, N, MPI_INT, user, c, info, &r);
  complete(f, &r);
  finish_request(f, &r);
  for (int i = 0; i < N; ++i) {
    CHECK(out[i] == sum_of(i, rank + 1), "scan_c %s [%d] = %d", fn, i, out[i]);
  }
  fill(out, 8 * N, MARK);
  if (f == blocking) MPI_Exscan_c(in, out, N, MPI_INT, MPI_SUM, c);
  if (f == nonblocking) MPI_Iexscan_c(in, out, N, MPI_INT, MPI_SUM, c, &r);
  if (f == persistent) MPI_Exscan_init_c(in, out, N, MPI_INT, MPI_SUM, c, info, &r);
  complete(f, &r);
  finish_request(f, &r);
  for (int i = 0; rank > 0 && i < N; ++i) {
    CHECK(out[i] == sum_of(i, rank), "exscan_c %s [%d] = %d", fn, i, out[i]);
  }
  CHECK(out[N] == MARK, "exscan_c %s wrote past the count", fn);
}

/* The op from MPI_Op_create_c in the int bindings and in Reduce_local_c;
 * Reduce_local_c with a predefined op. */
static void user_op_everywhere(MPI_Op user) {
  int in[N], out[N];
  for (int i = 0; i < N; ++i) in[i] = value(rank, 0, i);
  MPI_Allreduce(in, out, N, MPI_INT, user, MPI_COMM_WORLD);
  for (int i = 0; i < N; ++i) CHECK(out[i] == sum_of(i, size), "allreduce with op_create_c");
  MPI_Request r;
  MPI_Iallreduce(in, out, 2, MPI_INT, user, MPI_COMM_WORLD, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  CHECK(out[1] == sum_of(1, size), "iallreduce with op_create_c: %d", out[1]);

  const MPI_Count before = user_elements;
  for (int i = 0; i < N; ++i) out[i] = 10 * i;
  MPI_Reduce_local_c(in, out, 3, MPI_INT, user);
  for (int i = 0; i < 3; ++i) CHECK(out[i] == 10 * i + in[i], "reduce_local_c user [%d]", i);
  CHECK(out[3] == 30, "reduce_local_c past the count");
  CHECK(user_elements - before == 3, "reduce_local_c handed the op %lld elements",
        (long long)(user_elements - before));

  unsigned char a[5] = {0x01, 0x02, 0x04, 0x08, 0x10}, b[5] = {0x10, 0x20, 0x40, 0x80, 0x01};
  MPI_Reduce_local_c(a, b, 4, MPI_BYTE, MPI_BOR);
  CHECK(b[0] == 0x11 && b[1] == 0x22 && b[2] == 0x44 && b[3] == 0x88 && b[4] == 0x01,
        "reduce_local_c bor: %x %x %x %x %x", b[0], b[1], b[2], b[3], b[4]);
  CHECK(user_bad_type == 0, "the user op saw %d calls with a type other than MPI_INT",
        user_bad_type);
}

/* --- neighbourhood collectives on the ring --------------------------------- */

/* kind: 0 allgather, 1 allgatherv, 2 alltoall, 3 alltoallv, 4 alltoallw,
 * 5 and 6 alltoallv and alltoallw from MPI_BOTTOM.
 * On the ring, neighbour 0 is rank - 1 and neighbour 1 is rank + 1. */
static void neighbors(enum form f, int kind) {
  const int below = (rank + size - 1) % size, above = (rank + 1) % size;
  int out[2 * (N + GAP)], in[2 * (N + GAP) + 1];
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < N + GAP; ++i) out[b * (N + GAP) + i] = value(rank, b, i);
  }
  fill(in, 2 * (N + GAP) + 1, MARK);
  MPI_Count rcounts[2] = {2, 3}, scounts[2] = {3, 2}; /* what goes up is 2, down 3 */
  MPI_Aint rdispls[2] = {1, N + GAP}, sdispls[2] = {0, N + GAP};
  MPI_Aint rbytes[2] = {4, 4 * (N + GAP)}, sbytes[2] = {0, 4 * (N + GAP)};
  MPI_Datatype types[2] = {MPI_INT, MPI_INT};
  MPI_Count gcounts[2] = {N, N};
  MPI_Aint gdispls[2] = {N + GAP, 1}; /* blocks in reverse order */
  /* Kinds 5 and 6: alltoallv and alltoallw from MPI_BOTTOM, with absolute
   * addresses as displacements (past 2^31-1: the v form goes the w way). */
  const int bottom = kind >= 5, k = bottom ? kind - 2 : kind;
  void *sb = bottom ? MPI_BOTTOM : out, *rb = bottom ? MPI_BOTTOM : in;
  const MPI_Aint sbase = (MPI_Aint)(uintptr_t)out, rbase = (MPI_Aint)(uintptr_t)in;
  MPI_Aint sv[2], rv[2], sw[2], rw[2];
  for (int j = 0; j < 2; ++j) {
    sv[j] = bottom ? sbase / 4 + sdispls[j] : sdispls[j];
    rv[j] = bottom ? rbase / 4 + rdispls[j] : rdispls[j];
    sw[j] = bottom ? sbase + sbytes[j] : sbytes[j];
    rw[j] = bottom ? rbase + rbytes[j] : rbytes[j];
  }
  MPI_Request r = MPI_REQUEST_NULL;
  const MPI_Comm c = ring;
  const MPI_Info info = MPI_INFO_NULL;
  switch (k) {
    case 0:
      if (f == blocking) MPI_Neighbor_allgather_c(out, N, MPI_INT, in, N, MPI_INT, c);
      if (f == nonblocking) MPI_Ineighbor_allgather_c(out, N, MPI_INT, in, N, MPI_INT, c, &r);
      if (f == persistent) {
        MPI_Neighbor_allgather_init_c(out, N, MPI_INT, in, N, MPI_INT, c, info, &r);
      }
      break;
    case 1:
      if (f == blocking) {
        MPI_Neighbor_allgatherv_c(out, N, MPI_INT, in, gcounts, gdispls, MPI_INT, c);
      }
      if (f == nonblocking) {
        MPI_Ineighbor_allgatherv_c(out, N, MPI_INT, in, gcounts, gdispls, MPI_INT, c, &r);
      }
      if (f == persistent) {
        MPI_Neighbor_allgatherv_init_c(out, N, MPI_INT, in, gcounts, gdispls, MPI_INT, c, info, &r);
      }
      break;
    case 2:
      if (f == blocking) MPI_Neighbor_alltoall_c(out, N + GAP, MPI_INT, in, N + GAP, MPI_INT, c);
      if (f == nonblocking) {
        MPI_Ineighbor_alltoall_c(out, N + GAP, MPI_INT, in, N + GAP, MPI_INT, c, &r);
      }
      if (f == persistent) {
        MPI_Neighbor_alltoall_init_c(out, N + GAP, MPI_INT, in, N + GAP, MPI_INT, c, info, &r);
      }
      break;
    case 3:
      if (f == blocking) {
        MPI_Neighbor_alltoallv_c(sb, scounts, sv, MPI_INT, rb, rcounts, rv, MPI_INT, c);
      }
      if (f == nonblocking) {
        MPI_Ineighbor_alltoallv_c(sb, scounts, sv, MPI_INT, rb, rcounts, rv, MPI_INT, c, &r);
      }
      if (f == persistent) {
        MPI_Neighbor_alltoallv_init_c(sb, scounts, sv, MPI_INT, rb, rcounts, rv, MPI_INT, c, info,
                                      &r);
      }
      break;
    default:
      if (f == blocking) {
        MPI_Neighbor_alltoallw_c(sb, scounts, sw, types, rb, rcounts, rw, types, c);
      }
      if (f == nonblocking) {
        MPI_Ineighbor_alltoallw_c(sb, scounts, sw, types, rb, rcounts, rw, types, c, &r);
      }
      if (f == persistent) {
        MPI_Neighbor_alltoallw_init_c(sb, scounts, sw, types, rb, rcounts, rw, types, c, info, &r);
      }
      break;
  }
  complete(f, &r);
  finish_request(f, &r);
  static const char *const names[] = {"neighbor_allgather",
                                      "neighbor_allgatherv",
                                      "neighbor_alltoall",
                                      "neighbor_alltoallv",
                                      "neighbor_alltoallw",
                                      "neighbor_alltoallv from MPI_BOTTOM",
                                      "neighbor_alltoallw from MPI_BOTTOM"};
  const char *fn = form_names[f];
  int want[2 * (N + GAP) + 1];
  fill(want, 2 * (N + GAP) + 1, MARK);
  if (kind == 0) {
    for (int i = 0; i < N; ++i) {
      want[i] = value(below, 0, i);
      want[N + i] = value(above, 0, i);
    }
  } else if (kind == 1) {
    for (int i = 0; i < N; ++i) {
      want[gdispls[0] + i] = value(below, 0, i);
      want[gdispls[1] + i] = value(above, 0, i);
    }
  } else if (kind == 2) {
    /* Block 0 comes from below (its block 1, sent up), block 1 from above. */
    for (int i = 0; i < N + GAP; ++i) {
      want[i] = value(below, 1, i);
      want[N + GAP + i] = value(above, 0, i);
    }
  } else {
    for (int i = 0; i < rcounts[0]; ++i) want[rdispls[0] + i] = value(below, 1, i);
    for (int i = 0; i < rcounts[1]; ++i) want[rdispls[1] + i] = value(above, 0, i);
  }
  for (int i = 0; i < 2 * (N + GAP) + 1; ++i) {
    CHECK(in[i] == want[i], "%s %s [%d] = %d, expected %d", names[kind], fn, i, in[i], want[i]);
  }
}

/* --- past 2^31 elements ----------------------------------------------------- */

static const MPI_Count huge_n = (1LL << 31) + 4099;

static uint8_t pattern(MPI_Count i) {
  return (uint8_t)((i * 2654435761u) >> 13 ^ (i >> 24));
}

static uint8_t other(MPI_Count i) {
  return (uint8_t)(i * 7 + (i >> 20));
}

static MPI_Count xor_calls = 0, xor_longest = 0;

static void xor_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *type) {
  (void)type;
  const uint8_t *a = in;
  uint8_t *b = inout;
  for (MPI_Count i = 0; i < *len; ++i) b[i] ^= a[i];
  ++xor_calls;
  if (*len > xor_longest) xor_longest = *len;
}

/* Counts the bytes of buf[0..n) that differ from want(i); reports the first. */
static void check_bytes(const uint8_t *buf, MPI_Count n, uint8_t (*want)(MPI_Count),
                        const char *what) {
  MPI_Count wrong = 0, first = -1;
  for (MPI_Count i = 0; i < n; ++i) {
    if (buf[i] != want(i) && wrong++ == 0) first = i;
  }
  CHECK(wrong == 0, "%s: %lld of %lld bytes differ, the first at %lld", what, (long long)wrong,
        (long long)n, (long long)first);
}

static uint8_t or_of(MPI_Count i) {
  return pattern(i) | other(i);
}

static uint8_t or_xor(MPI_Count i) {
  return (uint8_t)((pattern(i) | other(i)) ^ pattern(i));
}

static void huge_bcast(void) {
  uint8_t *a = malloc((size_t)huge_n);
  CHECK(a != NULL, "cannot allocate %lld bytes", (long long)huge_n);
  if (a == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  if (rank == 1) {
    for (MPI_Count i = 0; i < huge_n; ++i) a[i] = pattern(i);
  } else {
    memset(a, 0, (size_t)huge_n);
  }
  MPI_Bcast_c(a, huge_n, MPI_BYTE, 1, MPI_COMM_WORLD);
  if (rank == 1) {
    free(a);
    return;
  }
  check_bytes(a, huge_n, pattern, "bcast_c");
  uint8_t *b = malloc((size_t)huge_n);
  CHECK(b != NULL, "cannot allocate a second %lld bytes", (long long)huge_n);
  if (b == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  for (MPI_Count i = 0; i < huge_n; ++i) b[i] = other(i);
  MPI_Reduce_local_c(a, b, huge_n, MPI_BYTE, MPI_BOR);
  MPI_Op op = MPI_OP_NULL;
  MPI_Op_create_c(xor_c, 1, &op);
  MPI_Reduce_local_c(a, b, huge_n, MPI_BYTE, op);
  MPI_Op_free(&op);
  check_bytes(b, huge_n, or_xor, "reduce_local_c bor, then the user op");
  CHECK(xor_calls == 1 && xor_longest == huge_n, "the user op ran %lld times, at most %lld",
        (long long)xor_calls, (long long)xor_longest);
  free(b);
  free(a);
}

/* MPI_Alltoallv_c with a block past 2^31 to the other rank (the v-variant
 * going the w way): rank 0 sends pattern, rank 1 other. */
static void huge_alltoallv(void) {
  uint8_t *out = malloc((size_t)huge_n), *in = malloc((size_t)huge_n);
  CHECK(out != NULL && in != NULL, "cannot allocate 2 x %lld bytes", (long long)huge_n);
  if (out == NULL || in == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  for (MPI_Count i = 0; i < huge_n; ++i) out[i] = rank == 0 ? pattern(i) : other(i);
  memset(in, 0, (size_t)huge_n);
  MPI_Count counts[2] = {0, 0};
  MPI_Aint displs[2] = {0, 0};
  counts[1 - rank] = huge_n;
  MPI_Alltoallv_c(out, counts, displs, MPI_BYTE, in, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
  check_bytes(in, huge_n, rank == 0 ? other : pattern, "alltoallv_c");
  free(out);
  free(in);
}

/* Rank 0 contributes pattern, rank 1 other; both in place. */
static void huge_reduce(void) {
  uint8_t *buf = malloc((size_t)huge_n);
  CHECK(buf != NULL, "cannot allocate %lld bytes", (long long)huge_n);
  if (buf == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  for (MPI_Count i = 0; i < huge_n; ++i) buf[i] = rank == 0 ? pattern(i) : other(i);
  /* Nonblocking, with types made while it runs: the call's temporary types
   * are gone by then, and their handles are the new types'. */
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Iallreduce_c(MPI_IN_PLACE, buf, huge_n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD, &r);
  MPI_Datatype t[8];
  for (int i = 0; i < 8; ++i) {
    MPI_Type_contiguous(3, MPI_INT, &t[i]);
    MPI_Type_commit(&t[i]);
  }
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  for (int i = 0; i < 8; ++i) MPI_Type_free(&t[i]);
  check_bytes(buf, huge_n, or_of, "iallreduce_c bor");
  for (MPI_Count i = 0; i < huge_n; ++i) buf[i] = rank == 0 ? pattern(i) : other(i);
  MPI_Op op = MPI_OP_NULL;
  MPI_Op_create_c(xor_c, 1, &op);
  MPI_Reduce_c(rank == 0 ? MPI_IN_PLACE : buf, buf, huge_n, MPI_BYTE, op, 0, MPI_COMM_WORLD);
  MPI_Op_free(&op);
  if (rank == 0) {
    MPI_Count wrong = 0;
    for (MPI_Count i = 0; i < huge_n; ++i) wrong += buf[i] != (uint8_t)(pattern(i) ^ other(i));
    CHECK(wrong == 0, "reduce_c user op: %lld bytes differ", (long long)wrong);
    CHECK(xor_longest == huge_n, "the user op's longest call: %lld", (long long)xor_longest);
  }
  free(buf);
  huge_alltoallv();
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 8) {
    if (rank == 0) fprintf(stderr, "collc: at most 8 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (argc > 1 && (strcmp(argv[1], "huge") == 0 || strcmp(argv[1], "huge-reduce") == 0)) {
    CHECK(size == 2, "%s runs at 2 ranks", argv[1]);
    if (size == 2 && strcmp(argv[1], "huge") == 0) huge_bcast();
    if (size == 2 && strcmp(argv[1], "huge-reduce") == 0) huge_reduce();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && check_failures == 0) printf("collc: all checks passed on %d ranks\n", size);
    return finish();
  }
  const int dims[1] = {size}, periods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  MPI_Op user = MPI_OP_NULL;
  CHECK(MPI_Op_create_c(sum_c, 1, &user) == MPI_SUCCESS && user != MPI_OP_NULL, "op_create_c");
  for (int f = 0; f < forms; ++f) {
    bcast((enum form)f);
    for (int v = 0; v < 2; ++v) {
      gather((enum form)f, v);
      scatter((enum form)f, v);
      allgather((enum form)f, v);
    }
    for (int k = 0; k < 5; ++k) alltoall((enum form)f, k);
    reductions((enum form)f, user);
    for (int k = 0; k < 7; ++k) neighbors((enum form)f, k);
  }
  user_op_everywhere(user);
  MPI_Op_free(&user);
  MPI_Comm_free(&ring);
  if (rank == 0 && check_failures == 0) printf("collc: all checks passed on %d ranks\n", size);
  return finish();
}
