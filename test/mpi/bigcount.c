/* Large counts (the MPI-4 `_c` bindings).
 *
 * Without arguments: every `_c` call with small counts between neighbours,
 * counts past 2^31-1 that need no memory (type sizes, Pack_size_c, a status
 * of 3e9 elements), and the MPI_ERR_COUNT of counts Iris cannot describe.
 *
 * With "huge" (2 ranks; about 4.3 GB of memory on the node): rank 0 sends
 * 2^31 + 4099 MPI_BYTE elements with MPI_Isend_c and rank 1 receives them
 * with MPI_Recv_c, every byte checked; then 2^27 + 257 elements of a 16-byte
 * type (MPI_C_DOUBLE_COMPLEX: past 2^31 bytes), in the same buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank, size;

static void small_counts(void) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double out[100], in[100];
  for (int i = 0; i < 100; ++i) out[i] = rank + i * 0.5;
  MPI_Status st;
  MPI_Request req;
  MPI_Count n = -1;

  MPI_Sendrecv_c(out, 100, MPI_DOUBLE, right, 1, in, 100, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &st);
  MPI_Get_count_c(&st, MPI_DOUBLE, &n);
  CHECK(n == 100 && in[99] == left + 49.5, "Sendrecv_c: count %lld in[99] %g", (long long)n,
        in[99]);

  MPI_Irecv_c(in, 100, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req);
  MPI_Send_c(out, 60, MPI_DOUBLE, right, 2, MPI_COMM_WORLD);
  MPI_Wait(&req, &st);
  MPI_Get_elements_c(&st, MPI_DOUBLE, &n);
  CHECK(n == 60, "Send_c/Irecv_c: elements %lld", (long long)n);

  MPI_Request reqs[2];
  MPI_Isend_c(out, 7, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, &reqs[0]);
  MPI_Recv_init_c(in, 7, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &reqs[1]);
  MPI_Start(&reqs[1]);
  MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
  MPI_Request_free(&reqs[1]);
  CHECK(in[6] == left + 3.0, "Isend_c/Recv_init_c: %g", in[6]);

  MPI_Ssend_init_c(out, 5, MPI_DOUBLE, right, 4, MPI_COMM_WORLD, &reqs[0]);
  MPI_Irecv_c(in, 5, MPI_DOUBLE, left, 4, MPI_COMM_WORLD, &reqs[1]);
  MPI_Start(&reqs[0]);
  MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
  MPI_Request_free(&reqs[0]);
  CHECK(in[4] == left + 2.0, "Ssend_init_c: %g", in[4]);

  double buf[10];
  for (int i = 0; i < 10; ++i) buf[i] = rank;
  MPI_Sendrecv_replace_c(buf, 10, MPI_DOUBLE, right, 5, left, 5, MPI_COMM_WORLD, &st);
  CHECK(buf[9] == left, "Sendrecv_replace_c: %g", buf[9]);
  MPI_Isendrecv_c(out, 3, MPI_DOUBLE, right, 6, in, 3, MPI_DOUBLE, left, 6, MPI_COMM_WORLD, &req);
  MPI_Wait(&req, &st);
  CHECK(in[2] == left + 1.0, "Isendrecv_c: %g", in[2]);

  static char space[1 << 14];
  MPI_Buffer_attach_c(space, sizeof(space));
  MPI_Bsend_c(out, 10, MPI_DOUBLE, right, 7, MPI_COMM_WORLD);
  MPI_Message msg;
  MPI_Mprobe(left, 7, MPI_COMM_WORLD, &msg, &st);
  MPI_Mrecv_c(in, 10, MPI_DOUBLE, &msg, &st);
  CHECK(in[9] == left + 4.5, "Bsend_c/Mrecv_c: %g", in[9]);
  void *back = NULL;
  MPI_Count back_size = 0;
  MPI_Buffer_detach_c(&back, &back_size);
  CHECK(back == space && back_size == (MPI_Count)sizeof(space), "Buffer_detach_c %lld",
        (long long)back_size);

  /* Datatype calls. */
  MPI_Datatype t;
  MPI_Count lb = -1, extent = -1, tsize = -1;
  const MPI_Count lens[2] = {2, 3}, displs[2] = {0, 40};
  MPI_Type_create_hindexed_c(2, lens, displs, MPI_INT, &t);
  MPI_Type_get_extent_c(t, &lb, &extent);
  MPI_Type_size_c(t, &tsize);
  CHECK(lb == 0 && extent == 52 && tsize == 20, "hindexed_c: lb %lld extent %lld size %lld",
        (long long)lb, (long long)extent, (long long)tsize);
  MPI_Type_free(&t);
  MPI_Type_vector_c(3, 2, 4, MPI_INT, &t);
  MPI_Type_get_true_extent_c(t, &lb, &extent);
  CHECK(extent == 40, "vector_c true extent %lld", (long long)extent);
  MPI_Type_commit(&t);
  int grid[12], packed[6], back_grid[12];
  for (int i = 0; i < 12; ++i) grid[i] = i;
  MPI_Count pos = 0;
  MPI_Pack_c(grid, 1, t, packed, sizeof(packed), &pos, MPI_COMM_WORLD);
  CHECK(pos == 24 && packed[2] == 4 && packed[5] == 9, "Pack_c: pos %lld", (long long)pos);
  memset(back_grid, 0, sizeof(back_grid));
  pos = 0;
  MPI_Unpack_c(packed, sizeof(packed), &pos, back_grid, 1, t, MPI_COMM_WORLD);
  CHECK(back_grid[9] == 9 && back_grid[2] == 0, "Unpack_c");
  MPI_Type_free(&t);

  /* Counts past 2^31-1 that need no memory. */
  const MPI_Count huge = 3000000000LL;
  MPI_Type_contiguous_c(huge, MPI_C_DOUBLE_COMPLEX, &t);
  MPI_Type_size_c(t, &tsize);
  MPI_Type_get_extent_c(t, &lb, &extent);
  CHECK(tsize == huge * 16 && extent == huge * 16, "contiguous_c(3e9) size %lld extent %lld",
        (long long)tsize, (long long)extent);
  int small_size = 0;
  MPI_Type_size(t, &small_size);
  CHECK(small_size == MPI_UNDEFINED, "Type_size of 48e9 bytes: %d", small_size);
  /* Its envelope is the call that made it, with the count as a large one;
   * the int forms cannot say it. */
  MPI_Count ni = -1, na = -1, nc = -1, nd = -1, counts[1] = {0};
  int combiner = -1, ints[1];
  MPI_Aint aints[1];
  MPI_Datatype inner = MPI_DATATYPE_NULL;
  MPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &combiner);
  CHECK(combiner == MPI_COMBINER_CONTIGUOUS && ni == 0 && na == 0 && nc == 1 && nd == 1,
        "contiguous_c(3e9) envelope: combiner %d, %lld %lld %lld %lld", combiner, (long long)ni,
        (long long)na, (long long)nc, (long long)nd);
  MPI_Type_get_contents_c(t, 1, 1, 1, 1, ints, aints, counts, &inner);
  CHECK(counts[0] == huge && inner == MPI_C_DOUBLE_COMPLEX, "contiguous_c(3e9) contents: %lld",
        (long long)counts[0]);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int ni_int = 0, na_int = 0, nd_int = 0;
  int too_large = MPI_Type_get_envelope(t, &ni_int, &na_int, &nd_int, &combiner);
  int err_class = -1;
  MPI_Error_class(too_large, &err_class);
  CHECK(err_class == MPI_ERR_VALUE_TOO_LARGE, "int envelope of contiguous_c(3e9): %d", err_class);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Type_free(&t);
  MPI_Count psize = 0;
  MPI_Pack_size_c(huge, MPI_INT, MPI_COMM_WORLD, &psize);
  CHECK(psize == huge * 4, "Pack_size_c %lld", (long long)psize);
  MPI_Status_set_elements_c(&st, MPI_INT, huge);
  MPI_Get_count_c(&st, MPI_INT, &n);
  int small = 0;
  MPI_Get_count(&st, MPI_INT, &small);
  CHECK(n == huge && small == MPI_UNDEFINED, "count of 3e9 elements: %lld, int %d", (long long)n,
        small);

  /* What Iris cannot describe is MPI_ERR_COUNT. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Datatype gappy;
  MPI_Type_vector(2, 1, 2, MPI_INT, &gappy);
  MPI_Type_commit(&gappy);
  int err = MPI_Send_c(grid, huge, gappy, right, 9, MPI_COMM_WORLD);
  CHECK(err == MPI_ERR_COUNT, "Send_c of 3e9 strided elements: %d", err);
  /* A vector of 3e9 blocks is described in constant space; an indexed
   * type of 3e9 blocks would need arrays of 3e9 entries. */
  err = MPI_Type_vector_c(huge, 1, 2, MPI_INT, &t);
  MPI_Count vsize = -1, tlb = -1, textent = -1;
  MPI_Type_size_c(t, &vsize);
  MPI_Type_get_extent_c(t, &tlb, &textent);
  CHECK(err == MPI_SUCCESS && vsize == huge * 4 && tlb == 0 && textent == (huge - 1) * 8 + 4,
        "Type_vector_c(3e9): %d, size %lld extent %lld", err, (long long)vsize, (long long)textent);
  MPI_Type_free(&t);
  const MPI_Count one[1] = {1};
  err = MPI_Type_indexed_c(huge, one, one, MPI_INT, &t);
  CHECK(err == MPI_ERR_COUNT, "Type_indexed_c(3e9): %d", err);
  err = MPI_Send_c(grid, -1, MPI_INT, right, 9, MPI_COMM_WORLD);
  CHECK(err == MPI_ERR_COUNT, "Send_c of -1: %d", err);
  MPI_Type_free(&gappy);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static uint8_t pattern(MPI_Count i) {
  return (uint8_t)((i * 2654435761u) >> 13 ^ (i >> 24));
}

/* `buf` holds n * elem bytes. */
static void huge_message(uint8_t *buf, MPI_Count n, MPI_Datatype type, int elem) {
  const size_t bytes = (size_t)n * (size_t)elem;
  if (rank == 0) {
    for (size_t i = 0; i < bytes; ++i) buf[i] = pattern((MPI_Count)i);
    MPI_Request req;
    MPI_Isend_c(buf, n, type, 1, 1, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    memset(buf, 0, bytes);
    MPI_Status st;
    MPI_Recv_c(buf, n, type, 0, 1, MPI_COMM_WORLD, &st);
    MPI_Count got = -1;
    MPI_Get_count_c(&st, type, &got);
    CHECK(got == n, "received %lld elements of %lld", (long long)got, (long long)n);
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < bytes; ++i) {
      if (buf[i] != pattern((MPI_Count)i) && wrong++ == 0) first = i;
    }
    CHECK(wrong == 0, "%zu of %zu bytes differ, the first at %zu", wrong, bytes, first);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 1 && strcmp(argv[1], "huge") == 0) {
    CHECK(size == 2, "huge runs at 2 ranks");
    /* One buffer for both messages: on a virtual machine the first touch
     * of a page can cost as much as the rest of the test (7 s for 2 GiB
     * here), and the receiver zeroes it before each message anyway. */
    const MPI_Count bytes = ((1LL << 27) + 257) * 16;
    uint8_t *buf = malloc((size_t)bytes);
    CHECK(buf != NULL, "cannot allocate %lld bytes", (long long)bytes);
    if (buf == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    huge_message(buf, (1LL << 31) + 4099, MPI_BYTE, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    huge_message(buf, (1LL << 27) + 257, MPI_C_DOUBLE_COMPLEX, 16);
    free(buf);
  } else {
    small_counts();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) printf("bigcount: all checks passed on %d ranks\n", size);
  return finish();
}
