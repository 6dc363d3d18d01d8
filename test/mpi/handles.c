/* Handles and the small calls around them: c2f/f2c of every handle kind,
 * status conversions, Alloc_mem/Free_mem, Pcontrol, address arithmetic,
 * the MPI_Count extent queries, Type_match_size, the Fortran and C++
 * datatypes in messages and reductions, the removed MPI-1 calls, the
 * window calls on MPI_WIN_NULL, and that every handle is a positive int. */
#include <complex.h>
#include <stdbool.h>
#include <string.h>

#include "check.h"

static int rank, size;

static void conversions(void) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  const MPI_Fint fcomm = MPI_Comm_c2f(dup);
  CHECK(MPI_Comm_f2c(fcomm) == dup, "comm round trip");
  MPI_Group group;
  MPI_Comm_group(MPI_COMM_WORLD, &group);
  CHECK(MPI_Group_f2c(MPI_Group_c2f(group)) == group, "group round trip");
  MPI_Group_free(&group);
  CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE, "type round trip");
  CHECK(MPI_Op_f2c(MPI_Op_c2f(MPI_SUM)) == MPI_SUM, "op round trip");
  CHECK(MPI_Errhandler_f2c(MPI_Errhandler_c2f(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN, "eh");
  MPI_Info info;
  MPI_Info_create(&info);
  CHECK(MPI_Info_f2c(MPI_Info_c2f(info)) == info, "info round trip");
  MPI_Info_free(&info);
  CHECK(MPI_Win_f2c(MPI_Win_c2f(MPI_WIN_NULL)) == MPI_WIN_NULL, "win round trip");
  CHECK(MPI_File_f2c(MPI_File_c2f(MPI_FILE_NULL)) == MPI_FILE_NULL, "file round trip");
  CHECK(MPI_Session_f2c(MPI_Session_c2f(MPI_SESSION_NULL)) == MPI_SESSION_NULL, "session");
  CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NO_PROC)) == MPI_MESSAGE_NO_PROC, "message");

  /* A request and a communicator used after a round trip. */
  int v = rank, got = -1;
  MPI_Request req;
  MPI_Irecv(&got, 1, MPI_INT, left, 1, MPI_Comm_f2c(fcomm), &req);
  const MPI_Fint freq = MPI_Request_c2f(req);
  MPI_Send(&v, 1, MPI_INT, right, 1, dup);
  MPI_Request back = MPI_Request_f2c(freq);
  MPI_Status st, st2, st3;
  MPI_Wait(&back, &st);
  CHECK(got == left, "through converted handles: %d", got);
  MPI_Fint fst[MPI_F_STATUS_SIZE];
  MPI_Status_c2f(&st, fst);
  CHECK(fst[MPI_F_SOURCE] == left && fst[MPI_F_TAG] == 1, "Fortran status %d %d", fst[MPI_F_SOURCE],
        fst[MPI_F_TAG]);
  MPI_Status_f2c(fst, &st2);
  int count = 0;
  MPI_Get_count(&st2, MPI_INT, &count);
  CHECK(st2.MPI_SOURCE == left && count == 1, "status round trip");
  MPI_F08_status f08;
  MPI_Status_c2f08(&st, &f08);
  MPI_Status_f082c(&f08, &st3);
  CHECK(st3.MPI_TAG == 1 && f08.MPI_SOURCE == left, "f08 status");
  MPI_Comm_free(&dup);
}

static void memory_and_addresses(void) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double *buf = NULL;
  MPI_Alloc_mem(1000 * sizeof(double), MPI_INFO_NULL, &buf);
  CHECK(buf != NULL, "Alloc_mem");
  for (int i = 0; i < 1000; ++i) buf[i] = rank + i;
  double in[1000];
  MPI_Sendrecv(buf, 1000, MPI_DOUBLE, right, 2, in, 1000, MPI_DOUBLE, left, 2, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  CHECK(in[999] == left + 999, "from Alloc_mem memory: %g", in[999]);
  MPI_Free_mem(buf);
  CHECK(MPI_Pcontrol(1) == MPI_SUCCESS, "Pcontrol");
  int a[10];
  MPI_Aint p0, p7;
  MPI_Get_address(&a[0], &p0);
  MPI_Address(&a[7], &p7);
  CHECK(MPI_Aint_diff(p7, p0) == 7 * (MPI_Aint)sizeof(int), "Aint_diff");
  CHECK(MPI_Aint_add(p0, 7 * sizeof(int)) == p7, "Aint_add");

  MPI_Datatype v, r;
  MPI_Type_vector(3, 1, 4, MPI_INT, &v);
  MPI_Type_create_resized(v, -8, 64, &r);
  MPI_Count lb, extent, tsize;
  MPI_Type_get_extent_x(r, &lb, &extent);
  CHECK(lb == -8 && extent == 64, "get_extent_x %lld %lld", (long long)lb, (long long)extent);
  MPI_Type_get_true_extent_x(r, &lb, &extent);
  CHECK(lb == 0 && extent == 36, "true_extent_x %lld %lld", (long long)lb, (long long)extent);
  MPI_Type_size_x(r, &tsize);
  CHECK(tsize == 12, "size_x %lld", (long long)tsize);
  MPI_Aint alb, aub, aext;
  MPI_Type_lb(r, &alb);
  MPI_Type_ub(r, &aub);
  MPI_Type_extent(r, &aext);
  CHECK(alb == -8 && aub == 56 && aext == 64, "MPI-1 lb %ld ub %ld extent %ld", (long)alb,
        (long)aub, (long)aext);
  MPI_Type_free(&r);
  MPI_Type_free(&v);
  MPI_Datatype hv, hi, st;
  MPI_Type_hvector(2, 1, 16, MPI_INT, &hv);
  int lens[2] = {1, 2};
  MPI_Aint displs[2] = {0, 8};
  MPI_Type_hindexed(2, lens, displs, MPI_INT, &hi);
  MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
  MPI_Type_struct(2, lens, displs, types, &st);
  int s1, s2, s3;
  MPI_Type_size(hv, &s1);
  MPI_Type_size(hi, &s2);
  MPI_Type_size(st, &s3);
  CHECK(s1 == 8 && s2 == 12 && s3 == 20, "MPI-1 constructors: %d %d %d", s1, s2, s3);
  MPI_Type_free(&hv);
  MPI_Type_free(&hi);
  MPI_Type_free(&st);
}

static void fortran_types(void) {
  const struct {
    MPI_Datatype type;
    int size;
    const char *name;
  } table[] = {{MPI_CHARACTER, 1, "MPI_CHARACTER"},
               {MPI_LOGICAL, 4, "MPI_LOGICAL"},
               {MPI_INTEGER, 4, "MPI_INTEGER"},
               {MPI_REAL, 4, "MPI_REAL"},
               {MPI_DOUBLE_PRECISION, 8, "MPI_DOUBLE_PRECISION"},
               {MPI_COMPLEX, 8, "MPI_COMPLEX"},
               {MPI_DOUBLE_COMPLEX, 16, "MPI_DOUBLE_COMPLEX"},
               {MPI_INTEGER1, 1, "MPI_INTEGER1"},
               {MPI_INTEGER8, 8, "MPI_INTEGER8"},
               {MPI_INTEGER16, 16, "MPI_INTEGER16"},
               {MPI_REAL8, 8, "MPI_REAL8"},
               {MPI_2INTEGER, 8, "MPI_2INTEGER"},
               {MPI_CXX_BOOL, 1, "MPI_CXX_BOOL"},
               {MPI_CXX_DOUBLE_COMPLEX, 16, "MPI_CXX_DOUBLE_COMPLEX"},
               /* MPI_C_FLOAT_COMPLEX is its synonym (the same handle); the
                * MPI-2.2 name is the one MPICH's typename test asks for. */
               {MPI_C_COMPLEX, 8, "MPI_C_COMPLEX"},
               {MPI_C_DOUBLE_COMPLEX, 16, "MPI_C_DOUBLE_COMPLEX"}};
  for (unsigned i = 0; i < sizeof(table) / sizeof(table[0]); ++i) {
    int s = 0, len = 0;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Type_size(table[i].type, &s);
    MPI_Type_get_name(table[i].type, name, &len);
    CHECK(s == table[i].size && strcmp(name, table[i].name) == 0, "%s: size %d name %s",
          table[i].name, s, name);
  }
  int n = rank + 1, sum = 0;
  MPI_Allreduce(&n, &sum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD);
  CHECK(sum == size * (size + 1) / 2, "INTEGER sum %d", sum);
  __extension__ typedef __int128 integer16; /* gfortran's INTEGER(16) */
  integer16 big = (integer16)(rank + 1) << 70, bigsum = 0;
  MPI_Allreduce(&big, &bigsum, 1, MPI_INTEGER16, MPI_SUM, MPI_COMM_WORLD);
  CHECK(bigsum == ((integer16)(size * (size + 1) / 2) << 70), "INTEGER16 sum");
  double d = rank, dmax = -1;
  MPI_Allreduce(&d, &dmax, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD);
  CHECK(dmax == size - 1, "DOUBLE_PRECISION max %g", dmax);
  int logical = rank == size - 1, any = 0;
  MPI_Allreduce(&logical, &any, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD);
  CHECK(any != 0, "LOGICAL or");
  double complex z = rank + 1.0 * I, zs = 0;
  MPI_Allreduce(&z, &zs, 1, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
  CHECK(creal(zs) == size * (size - 1) / 2 && cimag(zs) == size, "DOUBLE_COMPLEX sum");
  int pair[2] = {rank * 10 % 7, rank}, best[2];
  MPI_Allreduce(pair, best, 1, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD);
  int want = -1, where = 0;
  for (int r = 0; r < size; ++r) {
    if (r * 10 % 7 > want) want = r * 10 % 7, where = r;
  }
  CHECK(best[0] == want && best[1] == where, "2INTEGER maxloc %d@%d", best[0], best[1]);
  bool all = true, flag = rank >= 0;
  MPI_Allreduce(&flag, &all, 1, MPI_CXX_BOOL, MPI_LAND, MPI_COMM_WORLD);
  CHECK(all, "CXX_BOOL land");
  char text[6] = "iris!", got[6] = "";
  MPI_Sendrecv(text, 6, MPI_CHARACTER, (rank + 1) % size, 3, got, 6, MPI_CHARACTER,
               (rank + size - 1) % size, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK(strcmp(got, "iris!") == 0, "CHARACTER: %s", got);
  MPI_Datatype m;
  MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &m);
  CHECK(m == MPI_DOUBLE_INT, "value_index(double, int)");
  MPI_Type_get_value_index(MPI_CHAR, MPI_INT, &m);
  CHECK(m == MPI_DATATYPE_NULL, "value_index(char, int)");
  MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &m);
  CHECK(m == MPI_INTEGER4, "match INTEGER 4");
  MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &m);
  CHECK(m == MPI_REAL8, "match REAL 8");
  MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &m);
  CHECK(m == MPI_COMPLEX16, "match COMPLEX 16");
}

static int handler_calls, handler_code;
static void handler(MPI_Comm *comm, int *code, ...) {
  (void)comm;
  ++handler_calls;
  handler_code = *code;
}

static void removed_and_unsupported(void) {
  MPI_Errhandler eh, old;
  MPI_Errhandler_get(MPI_COMM_WORLD, &old);
  MPI_Errhandler_create(handler, &eh);
  MPI_Errhandler_set(MPI_COMM_WORLD, eh);
  int x = 0;
  int err = MPI_Send(&x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
  int cls = -1;
  MPI_Error_class(err, &cls);
  CHECK(handler_calls == 1 && cls == MPI_ERR_RANK, "MPI-1 handler: %d calls, class %d",
        handler_calls, cls);
  MPI_Errhandler got;
  MPI_Errhandler_get(MPI_COMM_WORLD, &got);
  CHECK(got == eh, "Errhandler_get");
  MPI_Errhandler_set(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Errhandler_free(&eh);
  MPI_Datatype m;
  err = MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &m);
  CHECK(err == MPI_ERR_ARG, "match_size of 3 bytes: %d", err);
  err = MPI_Win_set_name(MPI_WIN_NULL, "w");
  CHECK(err == MPI_ERR_WIN, "Win_set_name(MPI_WIN_NULL): %d", err);
  err = MPI_Status_c2f(NULL, NULL);
  CHECK(err == MPI_ERR_ARG, "Status_c2f(NULL): %d", err);
  double *p = NULL;
  err = MPI_Alloc_mem(-1, MPI_INFO_NULL, &p);
  CHECK(err == MPI_ERR_ARG, "Alloc_mem(-1): %d", err);
  /* MPI-4.1 removal of added errors. */
  int code;
  MPI_Add_error_class(&cls);
  MPI_Add_error_code(cls, &code);
  MPI_Add_error_string(code, "an iris test error");
  err = MPI_Remove_error_class(cls);
  CHECK(err == MPI_ERR_ARG, "removing a class with codes: %d", err);
  err = MPI_Remove_error_code(code);
  CHECK(err == MPI_ERR_ARG, "removing a code with a string: %d", err);
  err = MPI_Remove_error_class(MPI_ERR_ARG);
  CHECK(err == MPI_ERR_ARG, "removing a predefined class: %d", err);
  err = MPI_Remove_error_string(MPI_ERR_ARG);
  CHECK(err == MPI_ERR_ARG, "removing a predefined string: %d", err);
  err = MPI_Add_error_string(MPI_ERR_ARG, "not ours");
  CHECK(err == MPI_ERR_ARG, "a string for a predefined class: %d", err);
  CHECK(MPI_Remove_error_string(code) == MPI_SUCCESS, "Remove_error_string");
  err = MPI_Remove_error_string(code);
  CHECK(err == MPI_ERR_ARG, "removing a string twice: %d", err);
  CHECK(MPI_Remove_error_code(code) == MPI_SUCCESS, "Remove_error_code");
  CHECK(MPI_Remove_error_class(cls) == MPI_SUCCESS, "Remove_error_class");
  int removed_class = cls;
  err = MPI_Error_class(code, &cls);
  CHECK(err == MPI_ERR_ARG, "the class of a removed code: %d", err);
  err = MPI_Add_error_code(removed_class, &code);
  CHECK(err == MPI_ERR_ARG, "a code of a removed class: %d", err);
  MPI_Errhandler_set(MPI_COMM_WORLD, old);
}

static void from_groups(void) {
  MPI_Group world, half, other;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Comm all;
  MPI_Comm_create_from_group(world, "iris.test.all", MPI_INFO_NULL, MPI_ERRORS_RETURN, &all);
  int n = 0;
  MPI_Errhandler eh;
  MPI_Comm_size(all, &n);
  MPI_Comm_get_errhandler(all, &eh);
  CHECK(n == size && eh == MPI_ERRORS_RETURN, "Comm_create_from_group: size %d", n);
  MPI_Comm_free(&all);
  if (size >= 2) {
    /* Evens and odds. */
    int evens[64], odds[64], ne = 0, no = 0;
    for (int r = 0; r < size; ++r) {
      if (r % 2 == 0) {
        evens[ne++] = r;
      } else {
        odds[no++] = r;
      }
    }
    MPI_Group ge, go;
    MPI_Group_incl(world, ne, evens, &ge);
    MPI_Group_incl(world, no, odds, &go);
    half = rank % 2 == 0 ? ge : go;
    other = rank % 2 == 0 ? go : ge;
    MPI_Comm inter;
    MPI_Intercomm_create_from_groups(half, 0, other, 0, "iris.test.halves", MPI_INFO_NULL,
                                     MPI_ERRORS_ARE_FATAL, &inter);
    int remote = 0, flag = 0;
    MPI_Comm_remote_size(inter, &remote);
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag && remote == (rank % 2 == 0 ? no : ne), "intercomm from groups: remote %d", remote);
    int me = rank, got = -1, local = -1;
    MPI_Comm_rank(inter, &local);
    if (local == 0) { /* the two leaders (world ranks 0 and 1) */
      MPI_Sendrecv(&me, 1, MPI_INT, 0, 4, &got, 1, MPI_INT, 0, 4, inter, MPI_STATUS_IGNORE);
      CHECK(got == 1 - rank, "across: got %d", got);
    }
    MPI_Comm_disconnect(&inter);
    CHECK(inter == MPI_COMM_NULL, "disconnect leaves MPI_COMM_NULL");
    MPI_Group_free(&ge);
    MPI_Group_free(&go);
  }
  MPI_Group_free(&world);
  MPI_Info env;
  int nkeys = -1;
  MPI_Info_create_env(0, NULL, &env);
  MPI_Info_get_nkeys(env, &nkeys);
  CHECK(nkeys >= 0, "Info_create_env");
  MPI_Info_free(&env);
  MPI_Info hw = MPI_INFO_NULL;
  MPI_Get_hw_resource_info(&hw);
  CHECK(hw != MPI_INFO_NULL, "Get_hw_resource_info");
  MPI_Info_free(&hw);
}

/* Every handle, predefined or made by a call, is a positive int (as MPICH's
 * are): a binding that holds a handle as an integer and sign-extends it
 * must get the same value back. */
#define POSITIVE(h) CHECK((long long)(int)(h) >= 0, "%s is negative: %d", #h, (int)(h))

static int no_copy(MPI_Comm c, int k, void *x, void *in, void *out, int *flag) {
  (void)c, (void)k, (void)x, (void)in, (void)out;
  *flag = 0;
  return MPI_SUCCESS;
}

static void user_fn(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)in, (void)inout, (void)len, (void)type;
}

static void eh_fn(MPI_Comm *comm, int *code, ...) {
  (void)comm, (void)code;
}

static void positive_handles(void) {
  POSITIVE(MPI_COMM_NULL);
  POSITIVE(MPI_COMM_WORLD);
  POSITIVE(MPI_COMM_SELF);
  POSITIVE(MPI_GROUP_NULL);
  POSITIVE(MPI_GROUP_EMPTY);
  POSITIVE(MPI_DATATYPE_NULL);
  POSITIVE(MPI_INT);
  POSITIVE(MPI_LONG_DOUBLE);
  POSITIVE(MPI_C_LONG_DOUBLE_COMPLEX);
  POSITIVE(MPI_OP_NULL);
  POSITIVE(MPI_NO_OP);
  POSITIVE(MPI_ERRHANDLER_NULL);
  POSITIVE(MPI_ERRORS_ARE_FATAL);
  POSITIVE(MPI_ERRORS_ABORT);
  POSITIVE(MPI_REQUEST_NULL);
  POSITIVE(MPI_MESSAGE_NULL);
  POSITIVE(MPI_MESSAGE_NO_PROC);
  POSITIVE(MPI_KEYVAL_INVALID);
  POSITIVE(MPI_TAG_UB);
  POSITIVE(MPI_LASTUSEDCODE);
  POSITIVE(MPI_INFO_NULL);
  POSITIVE(MPI_INFO_ENV);
  POSITIVE(MPI_WIN_NULL);
  POSITIVE(MPI_FILE_NULL);
  POSITIVE(MPI_SESSION_NULL);

  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  POSITIVE(dup);
  MPI_Group group;
  MPI_Comm_group(dup, &group);
  POSITIVE(group);
  MPI_Datatype type;
  MPI_Type_contiguous(3, MPI_INT, &type);
  POSITIVE(type);
  MPI_Op op;
  MPI_Op_create(user_fn, 1, &op);
  POSITIVE(op);
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(eh_fn, &eh);
  POSITIVE(eh);
  MPI_Info info;
  MPI_Info_create(&info);
  POSITIVE(info);
  int keyval;
  MPI_Comm_create_keyval(no_copy, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
  POSITIVE(keyval);
  const int self = rank, tag = 7;
  int v = 1, got = 0;
  MPI_Request req;
  MPI_Isend(&v, 1, MPI_INT, self, tag, dup, &req);
  POSITIVE(req);
  MPI_Message msg;
  MPI_Mprobe(self, tag, dup, &msg, MPI_STATUS_IGNORE);
  POSITIVE(msg);
  MPI_Mrecv(&got, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(got == 1, "message to self: %d", got);
  MPI_Comm_free_keyval(&keyval);
  MPI_Info_free(&info);
  MPI_Errhandler_free(&eh);
  MPI_Op_free(&op);
  MPI_Type_free(&type);
  MPI_Group_free(&group);
  MPI_Comm_free(&dup);
}

/* Names an MPI-4.1 mpi.h has that programs and bindings use. */
static void newer_names(void) {
  MPI_Status st;
  memset(&st, 0, sizeof(st));
  int v = -1;
  CHECK(MPI_Status_set_source(&st, 3) == MPI_SUCCESS && MPI_Status_get_source(&st, &v) == 0 &&
            v == 3 && st.MPI_SOURCE == 3,
        "Status source %d", v);
  CHECK(MPI_Status_set_tag(&st, 44) == MPI_SUCCESS && MPI_Status_get_tag(&st, &v) == 0 && v == 44 &&
            st.MPI_TAG == 44,
        "Status tag %d", v);
  CHECK(MPI_Status_set_error(&st, MPI_ERR_TAG) == MPI_SUCCESS &&
            MPI_Status_get_error(&st, &v) == 0 && v == MPI_ERR_TAG && st.MPI_ERROR == MPI_ERR_TAG,
        "Status error %d", v);
  int cls = -1;
  MPI_Error_class(MPI_ERR_ERRHANDLER, &cls);
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(MPI_ERR_ERRHANDLER, text, &len);
  CHECK(cls == MPI_ERR_ERRHANDLER && MPI_ERR_ERRHANDLER <= MPI_ERR_LASTCODE && len > 0,
        "MPI_ERR_ERRHANDLER: class %d, text '%s'", cls, text);
  CHECK(MPI_MAX_PSET_NAME_LEN > 0 && MPI_MAX_STRINGTAG_LEN > 0 && MPI_MAX_DATAREP_STRING > 0,
        "the string limits");
  CHECK(MPI_COMBINER_HVECTOR_INTEGER != MPI_COMBINER_HINDEXED_INTEGER &&
            MPI_COMBINER_STRUCT_INTEGER != MPI_COMBINER_STRUCT,
        "the MPI-2 combiners");
  MPI_Win_errhandler_fn *wfn = NULL;
  MPI_File_errhandler_fn *ffn = NULL;
  CHECK(wfn == NULL && ffn == NULL && MPI_DISPLACEMENT_CURRENT < 0, "the deprecated names");
  CHECK(MPI_REAL2 == MPI_DATATYPE_NULL && MPI_COMPLEX4 == MPI_DATATYPE_NULL, "REAL2, COMPLEX4");
  const MPI_Datatype logicals[] = {MPI_LOGICAL1, MPI_LOGICAL2, MPI_LOGICAL4, MPI_LOGICAL8};
  for (int i = 0; i < 4; ++i) {
    int bytes = 0;
    MPI_Type_size(logicals[i], &bytes);
    CHECK(bytes == 1 << i, "MPI_LOGICAL%d has size %d", 1 << i, bytes);
  }
  /* LAND and LOR over LOGICAL1: every rank true, and only rank 0 true. */
  signed char all = 1, any = rank == 0, land = 0, lor = 0;
  MPI_Allreduce(&all, &land, 1, MPI_LOGICAL1, MPI_LAND, MPI_COMM_WORLD);
  MPI_Allreduce(&any, &lor, 1, MPI_LOGICAL1, MPI_LOR, MPI_COMM_WORLD);
  CHECK(land != 0 && lor != 0, "LOGICAL1 LAND %d LOR %d", land, lor);
  long long l8 = rank == 0, land8 = 1;
  MPI_Allreduce(&l8, &land8, 1, MPI_LOGICAL8, MPI_LAND, MPI_COMM_WORLD);
  CHECK((land8 != 0) == (size == 1), "LOGICAL8 LAND %lld at %d ranks", land8, size);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  conversions();
  memory_and_addresses();
  fortran_types();
  removed_and_unsupported();
  from_groups();
  positive_handles();
  newer_names();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) printf("handles: all checks passed on %d ranks\n", size);
  return finish();
}
