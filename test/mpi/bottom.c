/* MPI_BOTTOM with absolute displacements: a struct type built from
 * MPI_Get_address of three separate variables moves their values in every
 * call that takes a buffer: point-to-point (blocking, nonblocking,
 * synchronous, persistent, Sendrecv), Pack/Unpack, and the collectives
 * (Bcast, Gather, Scatter, Allgather, Alltoall). The receivers' variables
 * must change: a call that reports success moved the data. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank;
static int size;

/* The variables, apart from each other (and the same in a record). */
static int var_i;
static double var_d;
static char var_c[5];
struct record {
  int i;
  double d;
  char c[5];
};

static MPI_Datatype absolute; /* the three variables, at MPI_BOTTOM */
static MPI_Datatype relative; /* one struct record */

static void make_types(void) {
  int lens[3] = {1, 1, 5};
  MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
  MPI_Aint at[3];
  MPI_Get_address(&var_i, &at[0]);
  MPI_Get_address(&var_d, &at[1]);
  MPI_Get_address(var_c, &at[2]);
  MPI_Type_create_struct(3, lens, at, types, &absolute);
  MPI_Type_commit(&absolute);
  MPI_Aint rel[3] = {offsetof(struct record, i), offsetof(struct record, d),
                     offsetof(struct record, c)};
  MPI_Datatype loose;
  MPI_Type_create_struct(3, lens, rel, types, &loose);
  MPI_Type_create_resized(loose, 0, sizeof(struct record), &relative);
  MPI_Type_free(&loose);
  MPI_Type_commit(&relative);
}

static void set_vars(int seed) {
  var_i = seed;
  var_d = seed + 0.5;
  for (int k = 0; k < 5; ++k) var_c[k] = (char)('a' + (seed + k) % 26);
}

static int vars_hold(int seed) {
  int ok = var_i == seed && var_d == seed + 0.5;
  for (int k = 0; k < 5; ++k) ok = ok && var_c[k] == (char)('a' + (seed + k) % 26);
  return ok;
}

static int record_holds(const struct record *r, int seed) {
  int ok = r->i == seed && r->d == seed + 0.5;
  for (int k = 0; k < 5; ++k) ok = ok && r->c[k] == (char)('a' + (seed + k) % 26);
  return ok;
}

static void set_record(struct record *r, int seed) {
  r->i = seed;
  r->d = seed + 0.5;
  for (int k = 0; k < 5; ++k) r->c[k] = (char)('a' + (seed + k) % 26);
}

static int right(void) {
  return (rank + 1) % size;
}
static int left(void) {
  return (rank + size - 1) % size;
}

/* Each rank sends its variables to the right and receives the left's into
 * them, with `how` choosing the calls. */
static void ring(int how, const char *name) {
  const int tag = 40 + how;
  MPI_Request r[2];
  MPI_Status st;
  if (size == 1) return;
  /* Send from a copy of the variables (they are overwritten by the receive). */
  set_vars(rank + 1000 * how);
  struct record mine;
  set_record(&mine, rank + 1000 * how);
  switch (how) {
    case 0: /* blocking receive of the absolute type, a record sent */
      MPI_Isend(&mine, 1, relative, right(), tag, MPI_COMM_WORLD, &r[0]);
      set_vars(-1);
      CHECK(MPI_Recv(MPI_BOTTOM, 1, absolute, left(), tag, MPI_COMM_WORLD, &st) == MPI_SUCCESS,
            "%s", name);
      MPI_Wait(&r[0], MPI_STATUS_IGNORE);
      break;
    case 1: { /* absolute on both sides: Send from MPI_BOTTOM */
      struct record got;
      set_record(&got, -1);
      MPI_Irecv(&got, 1, relative, left(), tag, MPI_COMM_WORLD, &r[0]);
      CHECK(MPI_Send(MPI_BOTTOM, 1, absolute, right(), tag, MPI_COMM_WORLD) == MPI_SUCCESS, "%s",
            name);
      MPI_Wait(&r[0], &st);
      CHECK(record_holds(&got, left() + 1000 * how), "%s: the record sent from MPI_BOTTOM", name);
      set_vars(left() + 1000 * how); /* what the checks below expect */
      break;
    }
    case 2: /* nonblocking, synchronous */
      MPI_Irecv(MPI_BOTTOM, 1, absolute, left(), tag, MPI_COMM_WORLD, &r[0]);
      MPI_Issend(&mine, 1, relative, right(), tag, MPI_COMM_WORLD, &r[1]);
      MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
      break;
    case 3: /* persistent, two rounds */
      for (int round = 0; round < 2; ++round) {
        set_record(&mine, rank + 1000 * how + round);
        MPI_Recv_init(MPI_BOTTOM, 1, absolute, left(), tag, MPI_COMM_WORLD, &r[0]);
        MPI_Send_init(&mine, 1, relative, right(), tag, MPI_COMM_WORLD, &r[1]);
        set_vars(-1);
        MPI_Startall(2, r);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        CHECK(vars_hold(left() + 1000 * how + round), "%s: round %d", name, round);
        MPI_Request_free(&r[0]);
        MPI_Request_free(&r[1]);
      }
      set_vars(left() + 1000 * how);
      break;
    case 4: /* Sendrecv_replace on the variables themselves */
      CHECK(MPI_Sendrecv_replace(MPI_BOTTOM, 1, absolute, right(), tag, left(), tag, MPI_COMM_WORLD,
                                 &st) == MPI_SUCCESS,
            "%s", name);
      break;
    default:
      break;
  }
  CHECK(vars_hold(left() + 1000 * how), "%s: the variables were not received (i=%d d=%g)", name,
        var_i, var_d);
  int elements = 0;
  if (how == 0) {
    MPI_Get_elements(&st, absolute, &elements);
    CHECK(elements == 7, "%s: Get_elements %d, 7 expected", name, elements);
  }
}

static void pack_unpack(void) {
  set_vars(7);
  char packed[64];
  int position = 0;
  CHECK(MPI_Pack(MPI_BOTTOM, 1, absolute, packed, sizeof packed, &position, MPI_COMM_WORLD) ==
                MPI_SUCCESS &&
            position == 17,
        "Pack from MPI_BOTTOM: position %d", position);
  set_vars(-1);
  position = 0;
  MPI_Unpack(packed, sizeof packed, &position, MPI_BOTTOM, 1, absolute, MPI_COMM_WORLD);
  CHECK(vars_hold(7), "Unpack into MPI_BOTTOM");
}

static void collectives(void) {
  const int root = size - 1;
  /* Bcast into the variables. */
  set_vars(rank == root ? 77 : -1);
  CHECK(MPI_Bcast(MPI_BOTTOM, 1, absolute, root, MPI_COMM_WORLD) == MPI_SUCCESS, "Bcast");
  CHECK(vars_hold(77), "Bcast from MPI_BOTTOM: the variables were not received");
  /* Gather of everyone's variables into records; Allgather the same. */
  struct record *all = malloc(sizeof(struct record) * (size_t)size);
  for (int k = 0; k < size; ++k) set_record(&all[k], -1);
  set_vars(rank + 200);
  MPI_Gather(MPI_BOTTOM, 1, absolute, all, 1, relative, root, MPI_COMM_WORLD);
  for (int k = 0; rank == root && k < size; ++k) {
    CHECK(record_holds(&all[k], k + 200), "Gather from MPI_BOTTOM: record %d", k);
  }
  for (int k = 0; k < size; ++k) set_record(&all[k], -1);
  MPI_Allgather(MPI_BOTTOM, 1, absolute, all, 1, relative, MPI_COMM_WORLD);
  for (int k = 0; k < size; ++k) {
    CHECK(record_holds(&all[k], k + 200), "Allgather from MPI_BOTTOM: record %d", k);
  }
  /* Scatter and Alltoall into the variables: each gets its record. */
  for (int k = 0; k < size; ++k) set_record(&all[k], k + 300);
  set_vars(-1);
  MPI_Scatter(all, 1, relative, MPI_BOTTOM, 1, absolute, root, MPI_COMM_WORLD);
  CHECK(vars_hold(rank + 300), "Scatter into MPI_BOTTOM");
  if (size == 1) {
    set_vars(-1);
    MPI_Alltoall(all, 1, relative, MPI_BOTTOM, 1, absolute, MPI_COMM_WORLD);
    CHECK(vars_hold(300), "Alltoall into MPI_BOTTOM");
  }
  free(all);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  make_types();
  const char *names[5] = {"Recv into MPI_BOTTOM", "Send from MPI_BOTTOM",
                          "Irecv into MPI_BOTTOM (Issend)", "Recv_init into MPI_BOTTOM",
                          "Sendrecv_replace on MPI_BOTTOM"};
  for (int how = 0; how < 5; ++how) ring(how, names[how]);
  pack_unpack();
  collectives();
  MPI_Type_free(&absolute);
  MPI_Type_free(&relative);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) printf("bottom: all checks passed on %d ranks\n", size);
  return finish();
}
