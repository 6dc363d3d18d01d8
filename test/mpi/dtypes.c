/* Datatype constructors and representations: external32 bytes checked
 * against hand-written ones (and back; long double types as IEEE quad), envelopes and contents of
 * every combiner (inner types freed first), subarray and darray type maps checked against reference
 * loops in both orders, a subarray sent between ranks, the f90 types, the error classes of bad
 * arguments, MPI-1's MPI_LB and MPI_UB markers, and the _c constructors' blocks past 2^31-1. */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "check.h"

static int rank, size;

static void external32(void) {
  struct item {
    int i;
    short s;
    long l;
    double d;
    float f;
    float complex z;
  } in = {0x01020304, -2, 5, 1.0, -2.5f, 1.0f + 2.0f * I}, out;
  const int lens[6] = {1, 1, 1, 1, 1, 1};
  const MPI_Aint displs[6] = {offsetof(struct item, i), offsetof(struct item, s),
                              offsetof(struct item, l), offsetof(struct item, d),
                              offsetof(struct item, f), offsetof(struct item, z)};
  const MPI_Datatype types[6] = {MPI_INT,    MPI_SHORT, MPI_LONG,
                                 MPI_DOUBLE, MPI_FLOAT, MPI_C_FLOAT_COMPLEX};
  MPI_Datatype t;
  MPI_Type_create_struct(6, lens, displs, types, &t);
  MPI_Type_commit(&t);
  const unsigned char want[] = {0x01, 0x02, 0x03, 0x04, 0xff, 0xfe, 0x00, 0x00, 0x00, 0x05,
                                0x3f, 0xf0, 0,    0,    0,    0,    0,    0,    0xc0, 0x20,
                                0x00, 0x00, 0x3f, 0x80, 0,    0,    0x40, 0x00, 0x00, 0x00};
  MPI_Aint bytes = 0;
  MPI_Pack_external_size("external32", 1, t, &bytes);
  CHECK(bytes == (MPI_Aint)sizeof(want), "external32 size %ld, want %zu", (long)bytes,
        sizeof(want));
  unsigned char buf[128];
  MPI_Aint pos = 0;
  MPI_Pack_external("external32", &in, 1, t, buf, sizeof(buf), &pos);
  CHECK(pos == (MPI_Aint)sizeof(want) && memcmp(buf, want, sizeof(want)) == 0,
        "external32 bytes differ (position %ld)", (long)pos);
  memset(&out, 0, sizeof(out));
  pos = 0;
  MPI_Unpack_external("external32", buf, sizeof(buf), &pos, &out, 1, t);
  CHECK(out.i == in.i && out.s == in.s && out.l == in.l && out.d == in.d && out.f == in.f &&
            out.z == in.z,
        "external32 round trip");
  MPI_Type_free(&t);

  /* A pair type loses its padding; a strided vector packs what it picks. */
  struct {
    double v;
    int k;
  } pair = {1.0, 7};
  MPI_Pack_external_size("external32", 1, MPI_DOUBLE_INT, &bytes);
  CHECK(bytes == 12, "MPI_DOUBLE_INT external32 size %ld", (long)bytes);
  pos = 0;
  MPI_Pack_external("external32", &pair, 1, MPI_DOUBLE_INT, buf, sizeof(buf), &pos);
  const unsigned char want_pair[12] = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
  CHECK(memcmp(buf, want_pair, 12) == 0, "MPI_DOUBLE_INT bytes");
  int grid[6] = {1, 2, 3, 4, 5, 6}, back[6] = {0};
  MPI_Datatype v;
  MPI_Type_vector(3, 1, 2, MPI_INT, &v);
  MPI_Type_commit(&v);
  pos = 0;
  MPI_Pack_external_c("external32", grid, 1, v, buf, sizeof(buf), (MPI_Count *)&pos);
  const unsigned char want_v[12] = {0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 5};
  CHECK(pos == 12 && memcmp(buf, want_v, 12) == 0, "vector external32 bytes");
  pos = 0;
  MPI_Unpack_external("external32", buf, 12, &pos, back, 1, v);
  CHECK(back[0] == 1 && back[1] == 0 && back[4] == 5, "vector external32 unpack");
  MPI_Type_free(&v);

  /* Long double types are IEEE quad in external32 (16 bytes, big-endian):
   * 1.0 and -2.5 by hand, as a complex pair and in MPI_LONG_DOUBLE_INT;
   * then values that must come back as they were. */
  const long double ld[2] = {1.0L, -2.5L};
  const unsigned char want_ld[32] = {0x3f, 0xff, 0,    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                     0xc0, 0x00, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  int err = MPI_Pack_external_size("external32", 2, MPI_LONG_DOUBLE, &bytes);
  CHECK(err == MPI_SUCCESS && bytes == 32, "MPI_LONG_DOUBLE external32 size: %d, %ld", err,
        (long)bytes);
  pos = 0;
  err = MPI_Pack_external("external32", ld, 2, MPI_LONG_DOUBLE, buf, sizeof(buf), &pos);
  CHECK(err == MPI_SUCCESS && pos == 32 && memcmp(buf, want_ld, 32) == 0,
        "MPI_LONG_DOUBLE external32 bytes: %d", err);
  long double complex lz = 1.0L - 2.5L * I, lz_back = 0;
  pos = 0;
  MPI_Pack_external("external32", &lz, 1, MPI_C_LONG_DOUBLE_COMPLEX, buf, sizeof(buf), &pos);
  CHECK(pos == 32 && memcmp(buf, want_ld, 32) == 0, "long double complex external32 bytes");
  pos = 0;
  MPI_Unpack_external("external32", buf, 32, &pos, &lz_back, 1, MPI_C_LONG_DOUBLE_COMPLEX);
  CHECK(lz_back == lz, "long double complex external32 round trip");
  struct {
    long double v;
    int k;
  } ldpair = {-2.5L, 9}, ldpair_back = {0, 0};
  MPI_Pack_external_size("external32", 1, MPI_LONG_DOUBLE_INT, &bytes);
  CHECK(bytes == 20, "MPI_LONG_DOUBLE_INT external32 size %ld", (long)bytes);
  pos = 0;
  MPI_Pack_external("external32", &ldpair, 1, MPI_LONG_DOUBLE_INT, buf, sizeof(buf), &pos);
  CHECK(pos == 20 && memcmp(buf, want_ld + 16, 16) == 0 && buf[19] == 9,
        "MPI_LONG_DOUBLE_INT external32 bytes");
  pos = 0;
  MPI_Unpack_external("external32", buf, 20, &pos, &ldpair_back, 1, MPI_LONG_DOUBLE_INT);
  CHECK(ldpair_back.v == -2.5L && ldpair_back.k == 9, "MPI_LONG_DOUBLE_INT round trip");
  const long double odd[6] = {1.0L / 3, -0.0L, LDBL_MAX, LDBL_TRUE_MIN, LDBL_MIN, INFINITY};
  long double odd_back[6] = {0};
  pos = 0;
  MPI_Pack_external("external32", odd, 6, MPI_LONG_DOUBLE, buf, sizeof(buf), &pos);
  CHECK(pos == 96, "6 long doubles: %ld bytes", (long)pos);
  pos = 0;
  MPI_Unpack_external("external32", buf, 96, &pos, odd_back, 6, MPI_LONG_DOUBLE);
  for (int k = 0; k < 6; ++k) {
    CHECK(odd_back[k] == odd[k] && signbit(odd_back[k]) == signbit(odd[k]),
          "long double %d back as %Lg, not %Lg", k, odd_back[k], odd[k]);
  }

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  long big = 1L << 40;
  pos = 0;
  err = MPI_Pack_external("external32", &big, 1, MPI_LONG, buf, sizeof(buf), &pos);
  CHECK(err == MPI_ERR_CONVERSION, "a long past 2^31 in external32: %d", err);
  err = MPI_Pack_external("native", grid, 1, MPI_INT, buf, sizeof(buf), &pos);
  CHECK(err == MPI_ERR_UNSUPPORTED_DATAREP, "datarep native: %d", err);
  pos = 0;
  err = MPI_Pack_external("external32", grid, 6, MPI_INT, buf, 8, &pos);
  CHECK(err == MPI_ERR_TRUNCATE, "external32 into 8 bytes: %d", err);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void envelopes(void) {
  int ni, na, nd, comb;
  MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &comb);
  CHECK(comb == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "MPI_INT envelope");
  MPI_Datatype v, s, r, d;
  MPI_Type_vector(3, 2, 5, MPI_DOUBLE, &v);
  const int lens[2] = {1, 4};
  const MPI_Aint displs[2] = {0, 200};
  const MPI_Datatype types[2] = {v, MPI_INT};
  MPI_Type_create_struct(2, lens, displs, types, &s);
  MPI_Type_free(&v); /* the struct's record keeps its own copy */
  MPI_Type_get_envelope(s, &ni, &na, &nd, &comb);
  CHECK(comb == MPI_COMBINER_STRUCT && ni == 3 && na == 2 && nd == 2, "struct envelope %d %d %d %d",
        comb, ni, na, nd);
  int ints[3];
  MPI_Aint aints[2];
  MPI_Datatype inner[2];
  MPI_Type_get_contents(s, 3, 2, 2, ints, aints, inner);
  CHECK(ints[0] == 2 && ints[1] == 1 && ints[2] == 4 && aints[1] == 200 && inner[1] == MPI_INT,
        "struct contents");
  MPI_Type_get_envelope(inner[0], &ni, &na, &nd, &comb);
  CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && nd == 1, "inner vector envelope %d", comb);
  int vi[3];
  MPI_Datatype vt;
  MPI_Type_get_contents(inner[0], 3, 0, 1, vi, NULL, &vt);
  CHECK(vi[0] == 3 && vi[1] == 2 && vi[2] == 5 && vt == MPI_DOUBLE, "vector contents");
  int sz = 0;
  MPI_Type_size(inner[0], &sz);
  CHECK(sz == 48, "inner vector size %d", sz);
  MPI_Type_free(&inner[0]);
  MPI_Type_create_resized(s, -4, 400, &r);
  MPI_Type_get_envelope(r, &ni, &na, &nd, &comb);
  MPI_Type_get_contents(r, 0, 2, 1, NULL, aints, inner);
  CHECK(comb == MPI_COMBINER_RESIZED && aints[0] == -4 && aints[1] == 400, "resized contents");
  MPI_Type_free(&inner[0]);
  MPI_Type_dup(r, &d);
  MPI_Type_get_envelope(d, &ni, &na, &nd, &comb);
  CHECK(comb == MPI_COMBINER_DUP && nd == 1, "dup envelope %d", comb);
  MPI_Type_free(&d);
  MPI_Type_free(&r);
  MPI_Type_free(&s);

  const int sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 1};
  MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &s);
  int si[8];
  MPI_Type_get_envelope(s, &ni, &na, &nd, &comb);
  MPI_Type_get_contents(s, 8, 0, 1, si, NULL, inner);
  CHECK(comb == MPI_COMBINER_SUBARRAY && ni == 8 && si[0] == 2 && si[3] == 2 && si[6] == 1 &&
            si[7] == MPI_ORDER_C && inner[0] == MPI_INT,
        "subarray contents");
  MPI_Type_free(&s);
  MPI_Type_create_f90_real(10, MPI_UNDEFINED, &r);
  MPI_Type_size(r, &sz);
  MPI_Type_get_envelope(r, &ni, &na, &nd, &comb);
  MPI_Type_get_contents(r, 2, 0, 0, si, NULL, NULL);
  CHECK(sz == 8 && comb == MPI_COMBINER_F90_REAL && si[0] == 10 && si[1] == MPI_UNDEFINED,
        "f90_real(10): size %d combiner %d", sz, comb);
  MPI_Datatype r2, n;
  MPI_Type_create_f90_real(10, MPI_UNDEFINED, &r2);
  CHECK(r2 == r, "f90_real twice gives one handle");
  MPI_Type_create_f90_integer(3, &n);
  MPI_Type_size(n, &sz);
  CHECK(sz == 2, "f90_integer(3) size %d", sz);
  MPI_Type_create_f90_complex(6, 30, &n);
  MPI_Type_size(n, &sz);
  CHECK(sz == 8, "f90_complex(6, 30) size %d", sz);

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int err = MPI_Type_get_contents(MPI_INT, 0, 0, 0, NULL, NULL, NULL);
  CHECK(err == MPI_ERR_ARG, "contents of a named type: %d", err);
  err = MPI_Type_create_f90_integer(40, &n);
  CHECK(err == MPI_ERR_ARG, "f90_integer(40): %d", err);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* Packs `type` over a global array of ints 0..n-1 and compares with the
 * indices `want`. */
static void expect_picks(MPI_Datatype type, int n, const int *want, int count, const char *what) {
  int global[256], packed[256];
  for (int i = 0; i < n; ++i) global[i] = i;
  int psize = 0, pos = 0;
  MPI_Type_commit(&type);
  MPI_Pack_size(1, type, MPI_COMM_WORLD, &psize);
  CHECK(psize == count * (int)sizeof(int), "%s: %d packed bytes, want %d", what, psize,
        count * (int)sizeof(int));
  if (psize != count * (int)sizeof(int)) return;
  MPI_Pack(global, 1, type, packed, sizeof(packed), &pos, MPI_COMM_WORLD);
  for (int k = 0; k < count; ++k) {
    CHECK(packed[k] == want[k], "%s: element %d is %d, want %d", what, k, packed[k], want[k]);
  }
  MPI_Aint lb, extent;
  MPI_Type_get_extent(type, &lb, &extent);
  CHECK(lb == 0 && extent == n * (MPI_Aint)sizeof(int), "%s: lb %ld extent %ld", what, (long)lb,
        (long)extent);
}

static void arrays(void) {
  /* A 2x3 block at (1, 1) of a 4x5 array, in both orders. */
  const int sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 1};
  int want[64], k = 0;
  MPI_Datatype t;
  for (int i = 1; i < 3; ++i) {
    for (int j = 1; j < 4; ++j) want[k++] = i * 5 + j;
  }
  MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t);
  expect_picks(t, 20, want, k, "subarray C");
  MPI_Type_free(&t);
  k = 0;
  for (int j = 1; j < 4; ++j) {   /* dimension 1 is the slowest in Fortran order */
    for (int i = 1; i < 3; ++i) { /* dimension 0 of size 4 varies fastest */
      want[k++] = i + j * 4;
    }
  }
  MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &t);
  expect_picks(t, 20, want, k, "subarray Fortran");
  MPI_Type_free(&t);

  /* 6x8 over a 2x2 grid: rows in blocks, columns cyclic(2); every rank of
   * the grid, whatever this job's size. */
  const int gsizes[2] = {6, 8}, distribs[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
            dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, psizes[2] = {2, 2};
  for (int r = 0; r < 4; ++r) {
    const int pr = r / 2, pc = r % 2;
    k = 0;
    for (int i = pr * 3; i < pr * 3 + 3; ++i) {
      for (int j = 0; j < 8; ++j) {
        if ((j / 2) % 2 == pc) want[k++] = i * 8 + j;
      }
    }
    MPI_Type_create_darray(4, r, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &t);
    expect_picks(t, 48, want, k, "darray C");
    MPI_Type_free(&t);
    k = 0;
    for (int j = 0; j < 8; ++j) {
      if ((j / 2) % 2 != pc) continue;
      for (int i = pr * 3; i < pr * 3 + 3; ++i) want[k++] = i + j * 6;
    }
    MPI_Type_create_darray(4, r, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_FORTRAN, MPI_INT,
                           &t);
    expect_picks(t, 48, want, k, "darray Fortran");
    MPI_Type_free(&t);
  }

  /* A subarray sent to the next rank, received as plain ints. */
  int global[20], got[6];
  for (int i = 0; i < 20; ++i) global[i] = rank * 100 + i;
  MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t);
  MPI_Type_commit(&t);
  const int left = (rank + size - 1) % size;
  MPI_Sendrecv(global, 1, t, (rank + 1) % size, 5, got, 6, MPI_INT, left, 5, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  CHECK(got[0] == left * 100 + 6 && got[5] == left * 100 + 13, "subarray message %d %d", got[0],
        got[5]);
  MPI_Type_free(&t);

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int bad_starts[2] = {3, 0};
  int err = MPI_Type_create_subarray(2, sizes, subs, bad_starts, MPI_ORDER_C, MPI_INT, &t);
  CHECK(err == MPI_ERR_ARG, "subarray past the edge: %d", err);
  err = MPI_Type_create_subarray(2, sizes, subs, starts, 99, MPI_INT, &t);
  CHECK(err == MPI_ERR_ARG, "subarray order 99: %d", err);
  err = MPI_Type_create_darray(3, 0, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &t);
  CHECK(err == MPI_ERR_ARG, "darray on a grid of 4 for size 3: %d", err);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* MPI_BOTTOM with types of absolute addresses in the newer calls. */
static void bottom(void) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int a = rank, ra = -1, ra2 = -1;
  double b = rank + 0.5, rb = -1, rb2 = -1;
  MPI_Aint where[2];
  const int lens[2] = {1, 1};
  const MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
  MPI_Datatype out, in, in2;
  MPI_Get_address(&a, &where[0]);
  MPI_Get_address(&b, &where[1]);
  MPI_Type_create_struct(2, lens, where, types, &out);
  MPI_Get_address(&ra, &where[0]);
  MPI_Get_address(&rb, &where[1]);
  MPI_Type_create_struct(2, lens, where, types, &in);
  MPI_Get_address(&ra2, &where[0]);
  MPI_Get_address(&rb2, &where[1]);
  MPI_Type_create_struct(2, lens, where, types, &in2);
  MPI_Type_commit(&out);
  MPI_Type_commit(&in);
  MPI_Type_commit(&in2);
  MPI_Request req;
  MPI_Isendrecv(MPI_BOTTOM, 1, out, right, 6, MPI_BOTTOM, 1, in, left, 6, MPI_COMM_WORLD, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(ra == left && rb == left + 0.5, "Isendrecv at MPI_BOTTOM: %d %g", ra, rb);
  MPI_Send_c(MPI_BOTTOM, 1, out, right, 7, MPI_COMM_WORLD);
  MPI_Recv_c(MPI_BOTTOM, 1, in2, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK(ra2 == left && rb2 == left + 0.5, "Send_c at MPI_BOTTOM: %d %g", ra2, rb2);
  unsigned char buf[32];
  MPI_Aint pos = 0;
  MPI_Pack_external("external32", MPI_BOTTOM, 1, out, buf, sizeof(buf), &pos);
  ra = -1;
  pos = 0;
  MPI_Unpack_external("external32", buf, sizeof(buf), &pos, MPI_BOTTOM, 1, in);
  CHECK(pos == 12 && ra == rank && rb == rank + 0.5, "external32 at MPI_BOTTOM: %d", ra);
  MPI_Type_free(&out);
  MPI_Type_free(&in);
  MPI_Type_free(&in2);
}

/* MPI-1's MPI_LB and MPI_UB (include/README.md): bound markers in a struct,
 * kept by the types built over it, and moving no data. */
static void removed_markers(void) {
  const int blocks[3] = {1, 4, 1};
  const MPI_Aint displs[3] = {-3, 0, 6};
  const MPI_Datatype types[3] = {MPI_LB, MPI_BYTE, MPI_UB};
  MPI_Datatype evil, two, only_lb;
  MPI_Type_create_struct(3, blocks, displs, types, &evil);
  int sz = -1;
  MPI_Aint lb = 0, extent = 0, tlb = -1, text = -1;
  MPI_Type_size(evil, &sz);
  MPI_Type_get_extent(evil, &lb, &extent);
  MPI_Type_get_true_extent(evil, &tlb, &text);
  CHECK(sz == 4 && lb == -3 && extent == 9 && tlb == 0 && text == 4,
        "LB/UB struct: size %d lb %ld extent %ld true %ld+%ld", sz, (long)lb, (long)extent,
        (long)tlb, (long)text);
  MPI_Type_contiguous(2, evil, &two);
  MPI_Type_commit(&two);
  MPI_Type_size(two, &sz);
  MPI_Type_get_extent(two, &lb, &extent);
  CHECK(sz == 8 && lb == -3 && extent == 18, "contiguous of LB/UB: size %d lb %ld extent %ld", sz,
        (long)lb, (long)extent);
  /* Two elements 9 bytes apart: bytes 0-3 and 9-12 travel, the rest not. */
  unsigned char out[16], in[16];
  for (int i = 0; i < 16; ++i) out[i] = (unsigned char)(rank * 16 + i), in[i] = 0xee;
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Sendrecv(out + 3, 1, two, right, 8, in + 3, 1, two, left, 8, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  int bad = -1;
  for (int i = 0; i < 16 && bad < 0; ++i) {
    const int data = (i >= 3 && i < 7) || (i >= 12 && i < 16);
    if (in[i] != (data ? (unsigned char)(left * 16 + i) : 0xee)) bad = i;
  }
  CHECK(bad < 0, "LB/UB Sendrecv: byte %d is %d", bad, bad < 0 ? 0 : in[bad]);
  /* external32 skips the markers; MPI_INTEGER16 is 16 big-endian bytes. */
  MPI_Aint ext_size = -1, ext_pos = 0;
  MPI_Pack_external_size("external32", 1, two, &ext_size);
  unsigned char ext[16];
  MPI_Pack_external("external32", out + 3, 1, two, ext, sizeof(ext), &ext_pos);
  CHECK(ext_size == 8 && ext_pos == 8 && ext[0] == out[3] && ext[4] == out[12],
        "external32 of LB/UB: size %ld pos %ld", (long)ext_size, (long)ext_pos);
  __extension__ typedef __int128 integer16;
  integer16 i16 = ((integer16)1 << 64) | 2, back = 0;
  ext_pos = 0;
  MPI_Pack_external("external32", &i16, 1, MPI_INTEGER16, ext, sizeof(ext), &ext_pos);
  CHECK(ext_pos == 16 && ext[7] == 1 && ext[15] == 2 && ext[0] == 0, "external32 of INTEGER16");
  ext_pos = 0;
  MPI_Unpack_external("external32", ext, sizeof(ext), &ext_pos, &back, 1, MPI_INTEGER16);
  CHECK(back == i16, "INTEGER16 back from external32");
  /* Markers and no data: lower bound 10, upper 0 (as MPICH). */
  const int one = 1;
  const MPI_Aint ten = 10;
  const MPI_Datatype lbt = MPI_LB;
  MPI_Type_create_struct(1, &one, &ten, &lbt, &only_lb);
  MPI_Type_size(only_lb, &sz);
  MPI_Type_get_extent(only_lb, &lb, &extent);
  CHECK(sz == 0 && lb == 10 && extent == -10, "LB only: size %d lb %ld extent %ld", sz, (long)lb,
        (long)extent);
  char name[MPI_MAX_OBJECT_NAME];
  int len = 0;
  MPI_Type_get_name(MPI_UB, name, &len);
  MPI_Type_size(MPI_LB, &sz);
  CHECK(strcmp(name, "MPI_UB") == 0 && sz == 0, "MPI_UB's name %s, MPI_LB's size %d", name, sz);
  MPI_Type_free(&evil);
  MPI_Type_free(&two);
  MPI_Type_free(&only_lb);
}

/* The _c constructors with block lengths past 2^31-1: described, never
 * sent (they cover gigabytes). */
static void wide_blocks(void) {
  const MPI_Count big = (1LL << 31) + 5;
  const MPI_Count lens[2] = {3, big}, displs[2] = {0, 64};
  MPI_Datatype h, ib, v, st;
  MPI_Type_create_hindexed_c(2, lens, displs, MPI_INT, &h);
  MPI_Count sz = -1, lb = -1, extent = -1;
  MPI_Type_size_c(h, &sz);
  MPI_Type_get_extent_c(h, &lb, &extent);
  CHECK(sz == (3 + big) * 4 && lb == 0 && extent == 64 + big * 4,
        "hindexed_c: size %lld lb %lld extent %lld", (long long)sz, (long long)lb,
        (long long)extent);
  const MPI_Count at[2] = {0, big};
  MPI_Type_create_indexed_block_c(2, big, at, MPI_SHORT, &ib);
  MPI_Type_size_c(ib, &sz);
  MPI_Type_get_extent_c(ib, &lb, &extent);
  CHECK(sz == 4 * big && extent == 4 * big, "indexed_block_c: size %lld extent %lld", (long long)sz,
        (long long)extent);
  MPI_Type_vector_c(2, big, big + 1, MPI_CHAR, &v);
  MPI_Type_size_c(v, &sz);
  MPI_Type_get_extent_c(v, &lb, &extent);
  CHECK(sz == 2 * big && extent == 2 * big + 1, "vector_c: size %lld extent %lld", (long long)sz,
        (long long)extent);
  const MPI_Datatype types[2] = {MPI_DOUBLE, v};
  const MPI_Count one[2] = {1, 2}, where[2] = {0, 8};
  MPI_Type_create_struct_c(2, one, where, types, &st);
  MPI_Type_size_c(st, &sz);
  CHECK(sz == 8 + 4 * big, "struct_c: size %lld", (long long)sz);
  MPI_Type_commit(&st);
  MPI_Type_free(&h);
  MPI_Type_free(&ib);
  MPI_Type_free(&v);
  MPI_Type_free(&st);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  external32();
  envelopes();
  arrays();
  bottom();
  removed_markers();
  wide_blocks();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) printf("dtypes: all checks passed on %d ranks\n", size);
  return finish();
}
