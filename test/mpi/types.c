/* Derived datatypes, at any number of ranks: constructors, extents, names,
 * Pack/Unpack, and messages whose two sides use different layouts with the
 * same type signature (a column of a matrix into a contiguous array, a
 * struct into an indexed layout, the pair types against the structs they
 * stand for), eager and rendezvous sized, and MPI_BOTTOM with absolute
 * addresses. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank;
static int size;

static int partner(void) {
  const int p = rank ^ 1;
  return p < size ? p : rank;
}

static void extents_and_names(void) {
  MPI_Datatype vec;
  MPI_Type_vector(3, 2, 5, MPI_INT, &vec); /* 3 blocks of 2 ints, stride 5 ints */
  MPI_Type_commit(&vec);
  int sz = 0;
  MPI_Aint lb = -1;
  MPI_Aint extent = -1;
  MPI_Type_size(vec, &sz);
  MPI_Type_get_extent(vec, &lb, &extent);
  CHECK(sz == 24 && lb == 0 && extent == (2 * 5 + 2) * 4, "vector size %d extent %ld", sz,
        (long)extent);
  MPI_Datatype resized;
  MPI_Type_create_resized(vec, 0, 5 * 4, &resized);
  MPI_Type_get_extent(resized, &lb, &extent);
  MPI_Aint tlb = -1;
  MPI_Aint textent = -1;
  MPI_Type_get_true_extent(resized, &tlb, &textent);
  CHECK(extent == 20 && tlb == 0 && textent == 48, "resized extent %ld true %ld", (long)extent,
        (long)textent);
  struct item {
    double d;
    char c;
  };
  const int lens[2] = {1, 1};
  const MPI_Aint displs[2] = {offsetof(struct item, d), offsetof(struct item, c)};
  const MPI_Datatype types[2] = {MPI_DOUBLE, MPI_CHAR};
  MPI_Datatype st;
  MPI_Type_create_struct(2, lens, displs, types, &st);
  MPI_Type_get_extent(st, &lb, &extent);
  MPI_Type_size(st, &sz);
  CHECK(extent == (MPI_Aint)sizeof(struct item) && sz == 9, "struct extent %ld size %d",
        (long)extent, sz);
  char name[MPI_MAX_OBJECT_NAME];
  int len = 0;
  MPI_Type_set_name(st, "item");
  MPI_Type_get_name(st, name, &len);
  CHECK(strcmp(name, "item") == 0 && len == 4, "name %s", name);
  MPI_Type_get_name(MPI_DOUBLE, name, &len);
  CHECK(strcmp(name, "MPI_DOUBLE") == 0, "predefined name %s", name);
  MPI_Type_size(MPI_DOUBLE_INT, &sz);
  CHECK(sz == 12, "MPI_DOUBLE_INT size %d", sz);
  MPI_Type_free(&vec);
  MPI_Type_free(&resized);
  MPI_Type_free(&st);
  CHECK(vec == MPI_DATATYPE_NULL, "Type_free left the handle");
}

static void pack_unpack(void) {
  int matrix[4][4];
  for (int i = 0; i < 16; ++i) matrix[i / 4][i % 4] = i;
  MPI_Datatype column;
  MPI_Type_vector(4, 1, 4, MPI_INT, &column);
  MPI_Type_commit(&column);
  char packed[64];
  int position = 0;
  int need = 0;
  MPI_Pack_size(1, column, MPI_COMM_WORLD, &need);
  CHECK(need >= 16, "Pack_size %d", need);
  MPI_Pack(&matrix[0][1], 1, column, packed, sizeof(packed), &position, MPI_COMM_WORLD);
  CHECK(position == 16, "packed %d bytes", position);
  int out[4];
  int at = 0;
  MPI_Unpack(packed, position, &at, out, 4, MPI_INT, MPI_COMM_WORLD);
  CHECK(out[0] == 1 && out[1] == 5 && out[2] == 9 && out[3] == 13, "column %d %d %d %d", out[0],
        out[1], out[2], out[3]);
  int back[4][4];
  memset(back, 0, sizeof(back));
  at = 0;
  MPI_Unpack(packed, position, &at, &back[0][2], 1, column, MPI_COMM_WORLD);
  CHECK(back[0][2] == 1 && back[3][2] == 13 && back[0][1] == 0, "unpacked into a column");
  MPI_Type_free(&column);
}

static void different_layouts(void) {
  /* Send a column of an n x n matrix (vector type), receive it into a
   * contiguous array and back into a row: eager and rendezvous sizes. */
  const int p = partner();
  const int sizes[] = {8, 600};
  for (int k = 0; k < 2; ++k) {
    const int n = sizes[k];
    double *m = malloc(sizeof(double) * (size_t)n * (size_t)n);
    for (int i = 0; i < n * n; ++i) m[i] = rank * 1e6 + i;
    MPI_Datatype column;
    MPI_Type_vector(n, 1, n, MPI_DOUBLE, &column);
    MPI_Type_commit(&column);
    double *col = malloc(sizeof(double) * (size_t)n);
    MPI_Sendrecv(&m[2], 1, column, p, 1, col, n, MPI_DOUBLE, p, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += col[i] != p * 1e6 + i * n + 2;
    CHECK(bad == 0, "column of %dx%d: %d wrong", n, n, bad);
    /* Contiguous out, strided in, nonblocking. */
    MPI_Request r[2];
    MPI_Status st;
    double *into = calloc((size_t)n * (size_t)n, sizeof(double));
    MPI_Irecv(&into[3], 1, column, p, 2, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(col, n, MPI_DOUBLE, p, 2, MPI_COMM_WORLD, &r[1]);
    MPI_Wait(&r[1], MPI_STATUS_IGNORE);
    MPI_Wait(&r[0], &st);
    int count = -1;
    MPI_Get_count(&st, column, &count);
    int elements = -1;
    MPI_Get_elements(&st, MPI_DOUBLE, &elements);
    CHECK(count == 1 && elements == n, "count %d elements %d", count, elements);
    bad = 0;
    for (int i = 0; i < n; ++i) bad += into[i * n + 3] != rank * 1e6 + i * n + 2;
    CHECK(bad == 0, "strided receive of %d: %d wrong", n, bad);
    free(into);
    free(col);
    free(m);
    MPI_Type_free(&column);
  }
}

static void struct_and_bottom(void) {
  /* A struct type built from absolute addresses, sent from MPI_BOTTOM, and
   * received into an indexed layout of ints. */
  const int p = partner();
  int a = 100 + rank;
  int b[2] = {200 + rank, 300 + rank};
  MPI_Aint addr[2];
  MPI_Get_address(&a, &addr[0]);
  MPI_Get_address(b, &addr[1]);
  const int lens[2] = {1, 2};
  const MPI_Datatype types[2] = {MPI_INT, MPI_INT};
  MPI_Datatype abs_type;
  MPI_Type_create_struct(2, lens, addr, types, &abs_type);
  MPI_Type_commit(&abs_type);
  int spread[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const int blens[2] = {2, 1};
  const int displs[2] = {1, 6};
  MPI_Datatype idx;
  MPI_Type_indexed(2, blens, displs, MPI_INT, &idx);
  MPI_Type_commit(&idx);
  MPI_Sendrecv(MPI_BOTTOM, 1, abs_type, p, 3, spread, 1, idx, p, 3, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  CHECK(spread[1] == 100 + p && spread[2] == 200 + p && spread[6] == 300 + p && spread[0] == 0 &&
            spread[3] == 0,
        "indexed got %d %d %d", spread[1], spread[2], spread[6]);
  MPI_Type_free(&abs_type);
  MPI_Type_free(&idx);
}

static void freed_receive_still_unpacks(void) {
  /* A strided receive whose request is freed at once: the data must still
   * land in the user's layout. The partner's second message, sent after the
   * first, proves the first has been matched and completed. */
  const int p = partner();
  int spread[6] = {0, 0, 0, 0, 0, 0};
  MPI_Datatype every_other;
  MPI_Type_vector(3, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);
  MPI_Request r;
  MPI_Irecv(spread, 1, every_other, p, 30, MPI_COMM_WORLD, &r);
  MPI_Request_free(&r);
  MPI_Type_free(&every_other); /* legal while the receive is pending */
  MPI_Barrier(MPI_COMM_WORLD);
  const int three[3] = {7, 8, 9};
  MPI_Send(three, 3, MPI_INT, p, 30, MPI_COMM_WORLD);
  /* Sendrecv, not Send then Recv: a standard send may wait for its match
   * (rendezvous when credits run short), and both partners send here. */
  int done = 0;
  int echo = 0;
  MPI_Sendrecv(&done, 1, MPI_INT, p, 31, &echo, 1, MPI_INT, p, 31, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  CHECK(spread[0] == 7 && spread[2] == 8 && spread[4] == 9 && spread[1] == 0,
        "freed strided receive gave %d %d %d", spread[0], spread[2], spread[4]);
}

/* The pair types (MINLOC/MAXLOC) have the signature {value, int}: a
 * struct of a double and an int on one side and MPI_DOUBLE_INT on the
 * other match both ways, counts and elements included, and so do
 * MPI_SHORT_INT and a packed {short, int} layout without padding. */
static void pairs_match_their_structs(void) {
  struct di {
    double d;
    int i;
  } pairs[2] = {{-1, -1}, {-1, -1}};
  MPI_Datatype two_di; /* {double, int, double, int} at their struct places */
  const int blocks[4] = {1, 1, 1, 1};
  const MPI_Aint displs[4] = {0, offsetof(struct di, i), sizeof(struct di),
                              sizeof(struct di) + offsetof(struct di, i)};
  const MPI_Datatype types[4] = {MPI_DOUBLE, MPI_INT, MPI_DOUBLE, MPI_INT};
  MPI_Type_create_struct(4, blocks, displs, types, &two_di);
  MPI_Type_commit(&two_di);
  const int to = (rank + 1) % size, from = (rank + size - 1) % size;
  struct di out[2] = {{rank + 0.5, rank}, {rank + 0.25, -rank}};
  MPI_Status st;
  MPI_Sendrecv(out, 1, two_di, to, 7, pairs, 2, MPI_DOUBLE_INT, from, 7, MPI_COMM_WORLD, &st);
  int count = -1, elements = -1;
  MPI_Get_count(&st, MPI_DOUBLE_INT, &count);
  MPI_Get_elements(&st, MPI_DOUBLE_INT, &elements);
  CHECK(count == 2 && elements == 4, "struct into MPI_DOUBLE_INT: count %d elements %d", count,
        elements);
  CHECK(pairs[0].d == from + 0.5 && pairs[0].i == from && pairs[1].d == from + 0.25 &&
            pairs[1].i == -from,
        "struct into MPI_DOUBLE_INT: {%g, %d} {%g, %d}", pairs[0].d, pairs[0].i, pairs[1].d,
        pairs[1].i);
  struct di back[2] = {{-1, -1}, {-1, -1}};
  MPI_Sendrecv(out, 2, MPI_DOUBLE_INT, to, 8, back, 1, two_di, from, 8, MPI_COMM_WORLD, &st);
  MPI_Get_count(&st, two_di, &count);
  CHECK(count == 1 && back[1].d == from + 0.25 && back[1].i == -from,
        "MPI_DOUBLE_INT into struct: count %d, {%g, %d}", count, back[1].d, back[1].i);
  MPI_Type_free(&two_di);

  /* Three {short, int} pairs against a byte layout with no padding. */
  struct {
    short s;
    int i;
  } si[3] = {{(short)rank, 10 * rank}, {(short)(rank + 1), 11}, {(short)(rank + 2), -3}};
  char packed[3 * 6];
  memset(packed, 0x5a, sizeof(packed));
  MPI_Datatype tight;
  const int one[2] = {1, 1};
  const MPI_Aint tight_displs[2] = {0, 2};
  const MPI_Datatype tight_types[2] = {MPI_SHORT, MPI_INT};
  MPI_Datatype tight1;
  MPI_Type_create_struct(2, one, tight_displs, tight_types, &tight1);
  MPI_Type_create_resized(tight1, 0, 6, &tight);
  MPI_Type_commit(&tight);
  MPI_Sendrecv(si, 3, MPI_SHORT_INT, to, 9, packed, 3, tight, from, 9, MPI_COMM_WORLD, &st);
  MPI_Get_count(&st, tight, &count);
  short s2 = 0;
  int i2 = 0;
  memcpy(&s2, packed + 12, sizeof(s2));
  memcpy(&i2, packed + 14, sizeof(i2));
  CHECK(count == 3 && s2 == from + 2 && i2 == -3,
        "MPI_SHORT_INT into {short, int}: count %d, {%d, %d}", count, s2, i2);
  MPI_Type_free(&tight1);
  MPI_Type_free(&tight);
}

static void errors(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Datatype t;
  MPI_Type_contiguous(4, MPI_INT, &t);
  int v[4] = {0, 0, 0, 0};
  int cls = -1;
  MPI_Error_class(MPI_Send(v, 1, t, rank, 0, MPI_COMM_WORLD), &cls);
  CHECK(cls == MPI_ERR_TYPE, "sending with an uncommitted type gave %d", cls);
  MPI_Datatype d = MPI_INT;
  MPI_Error_class(MPI_Type_free(&d), &cls);
  CHECK(cls == MPI_ERR_TYPE, "freeing MPI_INT gave %d", cls);
  MPI_Error_class(MPI_Type_contiguous(-1, MPI_INT, &d), &cls);
  CHECK(cls == MPI_ERR_COUNT, "negative count gave %d", cls);
  MPI_Type_free(&t);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* Types made and freed in a loop are reclaimed, their handles reused: a
 * resized struct (whose envelope keeps a private copy of the struct) made
 * and freed 2,000 times gets a handle among the first few the loop used.
 * Before, each round kept the copy's handle and object for good, and
 * creating a type grew slower as the table filled. */
static void freed_types_reclaimed(void) {
  int blocks[3] = {1, 1, 5};
  MPI_Aint displs[3] = {0, 8, 16};
  MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
  MPI_Datatype first = MPI_DATATYPE_NULL, last = MPI_DATATYPE_NULL;
  for (int i = 0; i < 2000; ++i) {
    MPI_Datatype s, r;
    MPI_Type_create_struct(3, blocks, displs, types, &s);
    MPI_Type_create_resized(s, 0, 24, &r);
    MPI_Type_commit(&r);
    if (i == 0) first = r;
    last = r;
    MPI_Type_free(&s);
    MPI_Type_free(&r);
  }
  /* A handle is kind << 27 | index (include/README.md, "Handles"): 16 new
   * types find the slots the loop gave back, not the end of a table grown
   * by 2,000 copies nobody could free. */
  const unsigned index_mask = (1u << 27) - 1;
  MPI_Datatype more[16];
  unsigned highest = 0;
  for (int i = 0; i < 16; ++i) {
    MPI_Type_contiguous(i + 1, MPI_INT, &more[i]);
    const unsigned index = (unsigned)more[i] & index_mask;
    if (index > highest) highest = index;
  }
  CHECK(highest <= ((unsigned)first & index_mask) + 32,
        "after 2,000 types made and freed, a new type's handle index is %u (the loop's first %u)",
        highest, (unsigned)first & index_mask);
  CHECK(((unsigned)last & index_mask) <= ((unsigned)first & index_mask) + 8,
        "the 2000th resized struct's handle 0x%x, the first's 0x%x", (unsigned)last,
        (unsigned)first);
  for (int i = 0; i < 16; ++i) MPI_Type_free(&more[i]);
  /* A freed type still serves what was posted with it. */
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  int in[2] = {0, 0}, out[2] = {rank, -rank};
  MPI_Request req;
  MPI_Irecv(in, 1, pair, 0, 5, MPI_COMM_SELF, &req);
  MPI_Type_free(&pair);
  MPI_Send(out, 2, MPI_INT, 0, 5, MPI_COMM_SELF);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(in[0] == rank && in[1] == -rank, "through a freed type: %d %d", in[0], in[1]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  void (*const phases[])(void) = {extents_and_names,           pack_unpack,
                                  different_layouts,           struct_and_bottom,
                                  freed_receive_still_unpacks, pairs_match_their_structs,
                                  freed_types_reclaimed,       errors};
  for (unsigned i = 0; i < sizeof(phases) / sizeof(phases[0]); ++i) {
    phases[i]();
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 0 && check_failures == 0) printf("types: all checks passed on %d ranks\n", size);
  return finish();
}
