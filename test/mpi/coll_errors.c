/* coll's error classes (coll.c runs them): bad roots, ops, buffers, counts,
 * types and communicators under MPI_ERRORS_RETURN, through the int and the
 * large-count (`_c`) bindings; truncation and mismatched counts, which every
 * rank is told of. */
#include <stdlib.h>

#include "coll.h"

static void expect_class(int err, int want, const char *what) {
  int cls = -1;
  MPI_Error_class(err, &cls);
  CHECK(cls == want, "%s: class %d, expected %d", what, cls, want);
}

/* Every rank makes the same bad call, so none waits for another. */
void errors(void) {
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
  expect_class(MPI_Allreduce(a, b, 1, MPI_WCHAR, MPI_SUM, w), MPI_ERR_OP, "sum on wchar");
  expect_class(MPI_Allreduce(a, b, 1, MPI_CHARACTER, MPI_MAX, w), MPI_ERR_OP, "max on character");
  expect_class(MPI_Allreduce(a, b, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX, w), MPI_ERR_OP,
               "max on complex");
  expect_class(MPI_Allreduce(a, b, 1, MPI_AINT, MPI_MAXLOC, w), MPI_ERR_OP, "maxloc on MPI_AINT");
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
  /* Gatherv where the last rank sends another count than the root takes
   * from it, on either side of where a block on one node turns from the
   * segment to a message (1000 and 70,000 ints): the root is told when the
   * block is longer (and may be when shorter), nobody waits forever, and a
   * matching Gatherv then works. */
  if (size > 1) {
    enum { kSmall = 1000, kBig = 70000 };
    int *block = malloc(kBig * sizeof(int));
    int *all = malloc((size_t)size * kBig * sizeof(int));
    int counts[64], displs[64];
    for (int longer = 0; longer < 2; ++longer) {
      const int expected = longer ? kSmall : kBig, sent = longer ? kBig : kSmall;
      for (int r = 0; r < size && r < 64; ++r) {
        counts[r] = r == size - 1 ? expected : 1;
        displs[r] = r * kBig;
      }
      for (int i = 0; i < kBig; ++i) block[i] = rank;
      const int err = MPI_Gatherv(block, rank == size - 1 ? sent : 1, MPI_INT, all, counts, displs,
                                  MPI_INT, 0, w);
      int cls = MPI_SUCCESS;
      MPI_Error_class(err, &cls);
      if (rank == 0 && longer) {
        CHECK(cls == MPI_ERR_TRUNCATE, "gatherv of a longer block: class %d", cls);
      } else if (rank == 0) {
        CHECK(cls == MPI_ERR_TRUNCATE || cls == MPI_SUCCESS, "gatherv of a shorter block: class %d",
              cls);
      } else {
        CHECK(cls == MPI_SUCCESS, "gatherv with the root's counts off: class %d", cls);
      }
    }
    for (int r = 0; r < size && r < 64; ++r) counts[r] = r == size - 1 ? kBig : 1;
    for (int i = 0; i < size * kBig; ++i) all[i] = -1;
    expect_class(MPI_Gatherv(block, rank == size - 1 ? kBig : 1, MPI_INT, all, counts, displs,
                             MPI_INT, 0, w),
                 MPI_SUCCESS, "gatherv after a mismatch");
    if (rank == 0) {
      CHECK(all[0] == 0 && all[(size - 1) * kBig] == size - 1 &&
                all[(size - 1) * kBig + kBig - 1] == size - 1,
            "gatherv after a mismatch: %d %d", all[0], all[(size - 1) * kBig]);
    }
    /* Scatterv the other way: the root's block for the last rank is
     * longer or shorter than that rank takes. The last rank is told when
     * its block is longer (and may be when shorter), nobody waits forever,
     * and a matching Scatterv then works. */
    for (int longer = 0; longer < 2; ++longer) {
      const int expected = longer ? kSmall : kBig, sent = longer ? kBig : kSmall;
      for (int r = 0; r < size && r < 64; ++r) {
        counts[r] = r == size - 1 ? sent : 1;
        displs[r] = r * kBig;
      }
      for (int i = 0; i < size * kBig; ++i) all[i] = i / kBig;
      const int err = MPI_Scatterv(all, counts, displs, MPI_INT, block,
                                   rank == size - 1 ? expected : 1, MPI_INT, 0, w);
      int cls = MPI_SUCCESS;
      MPI_Error_class(err, &cls);
      if (rank == size - 1 && longer) {
        CHECK(cls == MPI_ERR_TRUNCATE, "scatterv of a longer block: class %d", cls);
      } else if (rank == size - 1) {
        CHECK(cls == MPI_ERR_TRUNCATE || cls == MPI_SUCCESS,
              "scatterv of a shorter block: class %d", cls);
      } else {
        CHECK(cls == MPI_SUCCESS, "scatterv with one rank's count off: class %d", cls);
      }
    }
    for (int r = 0; r < size && r < 64; ++r) counts[r] = r == size - 1 ? kBig : 1;
    for (int i = 0; i < kBig; ++i) block[i] = -1;
    expect_class(MPI_Scatterv(all, counts, displs, MPI_INT, block, rank == size - 1 ? kBig : 1,
                              MPI_INT, 0, w),
                 MPI_SUCCESS, "scatterv after a mismatch");
    CHECK(block[0] == rank && (rank != size - 1 || block[kBig - 1] == rank),
          "scatterv after a mismatch: %d", block[0]);
    /* Alltoallv where the last rank's block for rank 0 is longer or shorter
     * than rank 0 takes: through the node segment, rank 0 posts its receive
     * of a block too large for a slot (24 KB: past a slot, read in place
     * from 32 KiB) before the others' runs are in, and must withdraw it
     * when the block came through the slot after all; a 280 KB block is
     * read where it lies, and one longer than taken must be refused before
     * it is read. Rank 0 is told when the block is longer (and may be when
     * shorter), nobody waits forever, and a matching Alltoallv then works.
     * The same through MPI_Ialltoallv (passes 6-11), whose polls post and
     * withdraw such a receive too. */
    int *sent_to = malloc((size_t)size * kBig * sizeof(int));
    int vcounts[64], rcounts[64];
    for (int pass = 0; pass < 12; ++pass) {
      const int nonblocking = pass >= 6;
      const int big = pass % 6 < 3 ? 6000 : kBig;
      const int longer = pass % 3 == 0, matching = pass % 3 == 2;
      const int expected = matching ? big : longer ? kSmall : big;
      const int sent = matching ? big : longer ? big : kSmall;
      for (int r = 0; r < size && r < 64; ++r) {
        vcounts[r] = rank == size - 1 && r == 0 ? sent : 1;
        rcounts[r] = rank == 0 && r == size - 1 ? expected : 1;
        displs[r] = r * kBig;
      }
      for (int i = 0; i < size * kBig; ++i) {
        sent_to[i] = rank * 1000 + i / kBig;
        all[i] = -1;
      }
      int err = MPI_SUCCESS;
      if (nonblocking) {
        MPI_Request q = MPI_REQUEST_NULL;
        err =
            MPI_Ialltoallv(sent_to, vcounts, displs, MPI_INT, all, rcounts, displs, MPI_INT, w, &q);
        if (err == MPI_SUCCESS) err = MPI_Wait(&q, MPI_STATUS_IGNORE);
      } else {
        err = MPI_Alltoallv(sent_to, vcounts, displs, MPI_INT, all, rcounts, displs, MPI_INT, w);
      }
      int cls = MPI_SUCCESS;
      MPI_Error_class(err, &cls);
      if (matching) {
        CHECK(cls == MPI_SUCCESS, "alltoallv after a mismatch (pass %d): class %d", pass, cls);
        for (int r = 0; r < size && cls == MPI_SUCCESS; ++r) {
          const int last = displs[r] + rcounts[r] - 1;
          CHECK(all[displs[r]] == r * 1000 + rank && all[last] == r * 1000 + rank,
                "alltoallv after a mismatch: from %d got %d..%d", r, all[displs[r]], all[last]);
        }
      } else if (rank == 0 && longer) {
        CHECK(cls == MPI_ERR_TRUNCATE, "alltoallv of a longer block (pass %d): class %d", pass,
              cls);
      } else if (rank == 0) {
        CHECK(cls == MPI_ERR_TRUNCATE || cls == MPI_SUCCESS,
              "alltoallv of a shorter block (pass %d): class %d", pass, cls);
      } else {
        CHECK(cls == MPI_SUCCESS, "alltoallv with one pair's counts off (pass %d): class %d", pass,
              cls);
      }
      /* After a nonblocking mismatch of 24 KB blocks, two matching
       * Ialltoallv of them: the second has the mismatch's tag (the tags
       * alternate by step), so a receive the mismatch left posted would
       * take its block and leave its own receive waiting for ever. */
      if (nonblocking && !matching && big == 6000) {
        for (int r = 0; r < size && r < 64; ++r) {
          vcounts[r] = rank == size - 1 && r == 0 ? big : 1;
          rcounts[r] = rank == 0 && r == size - 1 ? big : 1;
        }
        for (int again = 0; again < 2; ++again) {
          for (int i = 0; i < size * kBig; ++i) all[i] = -1;
          MPI_Request q = MPI_REQUEST_NULL;
          MPI_Ialltoallv(sent_to, vcounts, displs, MPI_INT, all, rcounts, displs, MPI_INT, w, &q);
          const int waited = MPI_Wait(&q, MPI_STATUS_IGNORE);
          const int last = displs[size - 1] + rcounts[size - 1] - 1;
          CHECK(
              waited == MPI_SUCCESS && (rank != 0 || (all[displs[size - 1]] == (size - 1) * 1000 &&
                                                      all[last] == (size - 1) * 1000)),
              "ialltoallv %d after a mismatch (pass %d): code %d", again, pass, waited);
        }
      }
    }
    free(sent_to);
    free(block);
    free(all);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* The same checks through the large-count (`_c`) bindings, and what only
 * they can get wrong: counts and array entries past an int, negative counts
 * below INT_MIN, a strided type counted past 2^31-1. Every rank makes the
 * same bad call. */
static void sum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *type) {
  (void)in, (void)inout, (void)len, (void)type;
}

void errors_c(void) {
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

/* This file's failed checks, for main (coll.c). */
int coll_errors_failures(void) {
  (void)finish; /* check.h's: coll.c's main calls it */
  return check_failures;
}
