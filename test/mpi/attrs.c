/* Attribute caching at any number of ranks: copy and delete callbacks
 * across Comm_dup/idup/dup_with_info, set_attr replacing, delete_attr and
 * Comm_free (counted, with their values and order); a freed keyval whose
 * attributes still call back and can be read and deleted with its handle; callbacks that fail;
 * datatype attributes over Type_dup and Type_free; the MPI-1 names; the predefined attributes; the
 * error classes (window keyvals too: test/mpi/rma.c has their use). MPI_COMM_SELF's delete
 * callbacks run at MPI_Finalize and print one line each (rank 0), which the gtest driver checks for
 * order. */
#include <stdint.h>
#include <string.h>

#include "check.h"

static int rank;
static int size;

/* Every callback call, in order: 'c' copy or 'd' delete, with the value. */
static char events[64];
static intptr_t values[64];
static int nevents;
static int fail_copy;
static int fail_delete;

static void record(char what, void *value) {
  if (nevents < 64) {
    events[nevents] = what;
    values[nevents] = (intptr_t)value;
  }
  ++nevents;
}

static void reset(void) {
  nevents = 0;
  memset(events, 0, sizeof(events));
}

/* Copies value + 1. */
static int copy_plus_one(MPI_Comm old, int keyval, void *extra, void *in, void *out, int *flag) {
  (void)old;
  (void)keyval;
  CHECK(extra == (void *)&nevents, "copy callback got extra_state %p", extra);
  record('c', in);
  if (fail_copy) return MPI_ERR_OTHER;
  *(void **)out = (void *)((intptr_t)in + 1);
  *flag = 1;
  return MPI_SUCCESS;
}

static int delete_record(MPI_Comm comm, int keyval, void *value, void *extra) {
  (void)comm;
  (void)keyval;
  (void)extra;
  record('d', value);
  return fail_delete ? MPI_ERR_OTHER : MPI_SUCCESS;
}

static void *get(MPI_Comm comm, int keyval, int *flag) {
  void *value = NULL;
  *flag = -1;
  MPI_Comm_get_attr(comm, keyval, &value, flag);
  return value;
}

static void comm_callbacks(void) {
  int plus = MPI_KEYVAL_INVALID;
  int nocopy = MPI_KEYVAL_INVALID;
  int dup = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(copy_plus_one, delete_record, &plus, &nevents);
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_record, &nocopy, NULL);
  MPI_Comm_create_keyval(MPI_COMM_DUP_FN, delete_record, &dup, NULL);
  CHECK(plus != MPI_KEYVAL_INVALID && nocopy != plus && dup != nocopy, "keyvals %x %x %x", plus,
        nocopy, dup);
  MPI_Comm a;
  MPI_Comm_dup(MPI_COMM_WORLD, &a);
  MPI_Comm_set_attr(a, plus, (void *)10);
  MPI_Comm_set_attr(a, nocopy, (void *)20);
  MPI_Comm_set_attr(a, dup, (void *)30);
  int flag = 0;
  CHECK(get(a, plus, &flag) == (void *)10 && flag == 1, "a's plus attribute, flag %d", flag);

  reset();
  MPI_Comm b;
  MPI_Comm_dup(a, &b);
  CHECK(nevents == 1 && events[0] == 'c' && values[0] == 10, "dup ran %d callbacks (%c %ld)",
        nevents, events[0], (long)values[0]);
  CHECK(get(b, plus, &flag) == (void *)11 && flag == 1, "b's plus attribute, flag %d", flag);
  get(b, nocopy, &flag);
  CHECK(flag == 0, "MPI_COMM_NULL_COPY_FN's attribute was copied (flag %d)", flag);
  CHECK(get(b, dup, &flag) == (void *)30 && flag == 1, "MPI_COMM_DUP_FN's attribute, flag %d",
        flag);

  /* Replacing a value deletes the old one first. */
  reset();
  MPI_Comm_set_attr(a, plus, (void *)12);
  CHECK(nevents == 1 && events[0] == 'd' && values[0] == 10, "replace ran %d callbacks (%c %ld)",
        nevents, events[0], (long)values[0]);
  CHECK(get(a, plus, &flag) == (void *)12, "replaced value");

  reset();
  MPI_Comm_delete_attr(b, plus);
  CHECK(nevents == 1 && events[0] == 'd' && values[0] == 11, "delete_attr ran %d (%c %ld)", nevents,
        events[0], (long)values[0]);
  get(b, plus, &flag);
  CHECK(flag == 0, "deleted attribute still there");
  reset();
  MPI_Comm_delete_attr(b, plus); /* nothing to delete: no callback, no error */
  CHECK(nevents == 0, "deleting an absent attribute ran %d callbacks", nevents);

  /* Free calls every delete callback, the last set first. */
  reset();
  MPI_Comm_free(&b);
  CHECK(nevents == 1 && values[0] == 30, "free of b ran %d callbacks (%ld)", nevents,
        (long)values[0]);
  /* A freed keyval: its attributes still call back. */
  MPI_Comm_free_keyval(&nocopy);
  CHECK(nocopy == MPI_KEYVAL_INVALID, "free_keyval left %x", nocopy);
  reset();
  MPI_Comm_free(&a);
  /* a: nocopy(20) and dup(30) set first, then plus(12) replaced last. */
  CHECK(nevents == 3 && values[0] == 12 && values[1] == 30 && values[2] == 20,
        "free of a ran %d callbacks: %ld %ld %ld", nevents, (long)values[0], (long)values[1],
        (long)values[2]);

  /* idup and dup_with_info copy too. */
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN); /* d and e inherit it */
  MPI_Comm_set_attr(c, plus, (void *)40);
  reset();
  MPI_Comm d;
  MPI_Request req;
  MPI_Comm_idup(c, &d, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(req == MPI_REQUEST_NULL, "idup's request not freed by MPI_Wait");
  CHECK(get(d, plus, &flag) == (void *)41 && flag == 1, "idup's copy, flag %d", flag);
  MPI_Comm e;
  MPI_Comm_dup_with_info(c, MPI_INFO_NULL, &e);
  CHECK(get(e, plus, &flag) == (void *)41 && flag == 1, "dup_with_info's copy, flag %d", flag);
  CHECK(nevents == 2, "idup + dup_with_info ran %d callbacks", nevents);

  /* A failing copy callback fails the dup, which leaves newcomm alone. */
  fail_copy = 1;
  MPI_Comm f = MPI_COMM_NULL;
  int err = MPI_Comm_dup(c, &f);
  fail_copy = 0;
  CHECK(err == MPI_ERR_OTHER && f == MPI_COMM_NULL, "failing copy: dup returned %d", err);
  /* A failing delete callback fails the free, which leaves the comm. */
  fail_delete = 1;
  err = MPI_Comm_free(&e);
  fail_delete = 0;
  CHECK(err == MPI_ERR_OTHER && e != MPI_COMM_NULL, "failing delete: free returned %d", err);
  int erank = -1;
  MPI_Comm_rank(e, &erank);
  CHECK(erank == rank, "the communicator a failed free left has rank %d", erank);
  MPI_Comm_free(&e);
  MPI_Comm_free(&d);
  MPI_Comm_free(&c);
  CHECK(e == MPI_COMM_NULL, "second free did not free");
  MPI_Comm_free_keyval(&plus);
  MPI_Comm_free_keyval(&dup);
}

static int type_copy(MPI_Datatype old, int keyval, void *extra, void *in, void *out, int *flag) {
  (void)old;
  (void)keyval;
  (void)extra;
  record('c', in);
  *(void **)out = (void *)((intptr_t)in * 2);
  *flag = 1;
  return MPI_SUCCESS;
}

static int type_delete(MPI_Datatype type, int keyval, void *value, void *extra) {
  (void)type;
  (void)keyval;
  (void)extra;
  record('d', value);
  return MPI_SUCCESS;
}

static void type_callbacks(void) {
  int key = MPI_KEYVAL_INVALID;
  int nul = MPI_KEYVAL_INVALID;
  MPI_Type_create_keyval(type_copy, type_delete, &key, NULL);
  MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &nul, NULL);
  MPI_Datatype v;
  MPI_Type_vector(2, 1, 2, MPI_INT, &v);
  MPI_Type_commit(&v);
  MPI_Type_set_attr(v, key, (void *)21);
  MPI_Type_set_attr(v, nul, (void *)5);
  reset();
  MPI_Datatype w;
  MPI_Type_dup(v, &w);
  void *value = NULL;
  int flag = 0;
  MPI_Type_get_attr(w, key, &value, &flag);
  CHECK(flag == 1 && value == (void *)42, "Type_dup's copy: flag %d value %p", flag, value);
  MPI_Type_get_attr(w, nul, &value, &flag);
  CHECK(flag == 0, "MPI_TYPE_NULL_COPY_FN's attribute was copied");
  reset();
  MPI_Type_free(&w);
  CHECK(nevents == 1 && events[0] == 'd' && values[0] == 42, "Type_free ran %d (%ld)", nevents,
        (long)values[0]);
  reset();
  MPI_Type_delete_attr(v, key);
  CHECK(nevents == 1 && values[0] == 21, "Type_delete_attr ran %d (%ld)", nevents, (long)values[0]);
  MPI_Type_free(&v);
  /* Predefined types carry attributes too. */
  MPI_Type_set_attr(MPI_INT, key, (void *)7);
  MPI_Type_get_attr(MPI_INT, key, &value, &flag);
  CHECK(flag == 1 && value == (void *)7, "MPI_INT's attribute: flag %d", flag);
  reset();
  MPI_Type_delete_attr(MPI_INT, key);
  CHECK(nevents == 1 && values[0] == 7, "MPI_INT's delete ran %d", nevents);
  MPI_Type_free_keyval(&key);
  MPI_Type_free_keyval(&nul);
  CHECK(key == MPI_KEYVAL_INVALID && nul == MPI_KEYVAL_INVALID, "Type_free_keyval");
}

static void mpi1_names(void) {
  int key = MPI_KEYVAL_INVALID;
  int nul = MPI_KEYVAL_INVALID;
  MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &key, NULL);
  MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &nul, NULL);
  static int payload = 99;
  MPI_Comm a;
  MPI_Comm_dup(MPI_COMM_WORLD, &a);
  MPI_Attr_put(a, key, &payload);
  MPI_Attr_put(a, nul, &payload);
  MPI_Comm b;
  MPI_Comm_dup(a, &b);
  int *got = NULL;
  int flag = 0;
  MPI_Attr_get(b, key, &got, &flag);
  CHECK(flag == 1 && got == &payload && *got == 99, "MPI_DUP_FN through Attr_get: flag %d", flag);
  MPI_Attr_get(b, nul, &got, &flag);
  CHECK(flag == 0, "MPI_NULL_COPY_FN copied");
  MPI_Attr_delete(a, key);
  MPI_Attr_get(a, key, &got, &flag);
  CHECK(flag == 0, "Attr_delete left the attribute");
  MPI_Comm_free(&b);
  MPI_Comm_free(&a);
  MPI_Keyval_free(&key);
  MPI_Keyval_free(&nul);
  CHECK(key == MPI_KEYVAL_INVALID, "Keyval_free left %x", key);
}

static void predefined(void) {
  int *value = NULL;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &flag);
  CHECK(flag == 1 && value != NULL && *value >= 32767, "MPI_TAG_UB: flag %d", flag);
  /* The largest tag works. */
  if (flag && value) {
    int out = rank;
    int in = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, rank, *value, &in, 1, MPI_INT, rank, *value, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    CHECK(in == rank, "message with tag MPI_TAG_UB received %d", in);
  }
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &value, &flag);
  CHECK(flag == 1 && *value == MPI_PROC_NULL, "MPI_HOST: flag %d value %d", flag,
        flag ? *value : 0);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &value, &flag);
  CHECK(flag == 1 && (*value == MPI_ANY_SOURCE || *value == rank), "MPI_IO: flag %d value %d", flag,
        flag ? *value : 0);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &value, &flag);
  CHECK(flag == 1 && *value == 0, "MPI_WTIME_IS_GLOBAL: flag %d", flag);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &value, &flag);
  CHECK(flag == 0, "MPI_APPNUM: flag %d", flag);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &value, &flag);
  CHECK(flag == 1 && *value == size, "MPI_UNIVERSE_SIZE: flag %d value %d", flag,
        flag ? *value : 0);
  MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &value, &flag);
  CHECK(flag == 1 && *value >= 32767, "MPI_TAG_UB through Attr_get: flag %d", flag);
  int added = 0;
  MPI_Add_error_class(&added);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &value, &flag);
  CHECK(flag == 1 && *value >= added, "MPI_LASTUSEDCODE %d below the added class %d",
        flag ? *value : 0, added);
}

static void errors(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int value = 0;
  int flag = 0;
  int tkey = MPI_KEYVAL_INVALID;
  MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &tkey, NULL);
  int ckey = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &ckey, NULL);
  int wkey = MPI_KEYVAL_INVALID;
  MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &wkey, NULL);
  const struct {
    const char *what;
    int got;
    int expected;
  } cases[] = {
      {"set_attr with MPI_KEYVAL_INVALID",
       MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &value), MPI_ERR_KEYVAL},
      {"get_attr with a made-up keyval", MPI_Comm_get_attr(MPI_COMM_WORLD, 12345, &value, &flag),
       MPI_ERR_KEYVAL},
      {"a type keyval on a communicator", MPI_Comm_set_attr(MPI_COMM_WORLD, tkey, &value),
       MPI_ERR_KEYVAL},
      {"a communicator keyval on a type", MPI_Type_set_attr(MPI_INT, ckey, &value), MPI_ERR_KEYVAL},
      {"setting MPI_TAG_UB", MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value), MPI_ERR_KEYVAL},
      {"deleting MPI_HOST", MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_HOST), MPI_ERR_KEYVAL},
      {"get_attr with a NULL flag", MPI_Comm_get_attr(MPI_COMM_WORLD, ckey, &value, NULL),
       MPI_ERR_ARG},
      {"create_keyval with a NULL keyval",
       MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, NULL, NULL), MPI_ERR_ARG},
      {"set_attr on MPI_COMM_NULL", MPI_Comm_set_attr(MPI_COMM_NULL, ckey, &value), MPI_ERR_COMM},
      {"set_attr on MPI_DATATYPE_NULL", MPI_Type_set_attr(MPI_DATATYPE_NULL, tkey, &value),
       MPI_ERR_TYPE},
      {"Attr_put with MPI_KEYVAL_INVALID", MPI_Attr_put(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &value),
       MPI_ERR_KEYVAL},
      {"a window keyval on a communicator", MPI_Comm_set_attr(MPI_COMM_WORLD, wkey, &value),
       MPI_ERR_KEYVAL},
      {"set_attr on MPI_WIN_NULL", MPI_Win_set_attr(MPI_WIN_NULL, wkey, &value), MPI_ERR_WIN},
      {"setting MPI_WIN_BASE", MPI_Win_set_attr(MPI_WIN_NULL, MPI_WIN_BASE, &value), MPI_ERR_WIN},
  };
  for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    CHECK(cases[i].got == cases[i].expected, "%s returned %d, expected %d", cases[i].what,
          cases[i].got, cases[i].expected);
  }
  int predefined_key = MPI_TAG_UB;
  int err = MPI_Comm_free_keyval(&predefined_key);
  CHECK(err == MPI_ERR_KEYVAL && predefined_key == MPI_TAG_UB, "freeing MPI_TAG_UB returned %d",
        err);
  int freed = ckey;
  MPI_Comm_free_keyval(&ckey);
  err = MPI_Comm_free_keyval(&freed);
  CHECK(err == MPI_ERR_KEYVAL, "freeing a keyval twice returned %d", err);
  MPI_Type_free_keyval(&tkey);
  MPI_Win_free_keyval(&wkey);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* MPI-4.1 7.7.2: the program deletes the attributes of a freed keyval
 * itself, with a copy of its handle; get_attr reads them too. Freeing it
 * again meanwhile changes nothing. Once the last is gone the handle is
 * invalid. */
static void freed_keyval_delete(void) {
  MPI_Comm x;
  MPI_Comm_dup(MPI_COMM_WORLD, &x);
  MPI_Comm_set_errhandler(x, MPI_ERRORS_RETURN);
  int key = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_record, &key, NULL);
  const int saved = key;
  MPI_Comm_set_attr(x, key, (void *)50);
  MPI_Comm_free_keyval(&key);
  /* Freed again through a copy while still in use (MPICH's
   * keyval_double_free): accepted, and nothing changes. */
  int again = saved;
  int err = MPI_Comm_free_keyval(&again);
  CHECK(err == MPI_SUCCESS && again == MPI_KEYVAL_INVALID,
        "a second free of a keyval in use returned %d", err);
  again = saved;
  err = MPI_Keyval_free(&again);
  CHECK(err == MPI_SUCCESS, "a third free (MPI_Keyval_free) returned %d", err);
  int flag = 0;
  void *value = NULL;
  err = MPI_Comm_get_attr(x, saved, &value, &flag);
  CHECK(err == MPI_SUCCESS && flag == 1 && value == (void *)50,
        "get_attr of a freed keyval in use returned %d, flag %d", err, flag);
  reset();
  err = MPI_Comm_delete_attr(x, saved);
  CHECK(err == MPI_SUCCESS && nevents == 1 && values[0] == 50,
        "delete_attr of a freed keyval in use returned %d, %d callbacks", err, nevents);
  err = MPI_Comm_delete_attr(x, saved);
  CHECK(err == MPI_ERR_KEYVAL, "delete_attr of a freed keyval no longer used returned %d", err);
  MPI_Comm_free(&x);
}

/* MPI_COMM_SELF's attributes are deleted at the start of MPI_Finalize, the
 * last set first, while MPI still works. */
static int self_delete(MPI_Comm comm, int keyval, void *value, void *extra) {
  (void)keyval;
  (void)extra;
  int r = -1;
  const int err = MPI_Comm_rank(MPI_COMM_WORLD, &r);
  CHECK(err == MPI_SUCCESS && comm == MPI_COMM_SELF, "inside Finalize: rank %d, comm %x", err,
        comm);
  if (r == 0) printf("attrs: self delete %ld\n", (long)(intptr_t)value);
  fflush(stdout);
  return MPI_SUCCESS;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  comm_callbacks();
  type_callbacks();
  mpi1_names();
  predefined();
  errors();
  freed_keyval_delete();
  int key = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &key, NULL);
  for (intptr_t i = 1; i <= 3; ++i) {
    int k = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &k, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, k, (void *)i);
    MPI_Comm_free_keyval(&k); /* the attribute keeps its callbacks */
  }
  MPI_Comm_free_keyval(&key);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) {
    printf("attrs: all checks passed on %d ranks\n", size);
    fflush(stdout);
  }
  return finish();
}
