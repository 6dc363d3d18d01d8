/* Communicators and groups, at any number of ranks: dup, split, create,
 * compare, names, free; groups; tag collisions across communicators; and
 * context ids that stay agreed when ranks have made different numbers of
 * communicators before. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank;
static int size;

static void traffic_never_crosses(void) {
  /* The same tag on three communicators: each receive sees its own. */
  MPI_Comm a;
  MPI_Comm b;
  MPI_Comm_dup(MPI_COMM_WORLD, &a);
  MPI_Comm_dup(a, &b);
  const int to = (rank + 1) % size;
  const int from = (rank + size - 1) % size;
  MPI_Request s[3];
  const int out[3] = {100 + rank, 200 + rank, 300 + rank};
  MPI_Isend(&out[0], 1, MPI_INT, to, 7, MPI_COMM_WORLD, &s[0]);
  MPI_Isend(&out[1], 1, MPI_INT, to, 7, a, &s[1]);
  MPI_Isend(&out[2], 1, MPI_INT, to, 7, b, &s[2]);
  int got = 0;
  MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, b, MPI_STATUS_IGNORE);
  CHECK(got == 300 + from, "dup of dup received %d", got);
  MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, a, MPI_STATUS_IGNORE);
  CHECK(got == 200 + from, "dup received %d", got);
  MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK(got == 100 + from, "world received %d", got);
  MPI_Waitall(3, s, MPI_STATUSES_IGNORE);
  int result = -1;
  MPI_Comm_compare(a, MPI_COMM_WORLD, &result);
  CHECK(result == MPI_CONGRUENT, "dup compared %d", result);
  MPI_Comm_compare(a, a, &result);
  CHECK(result == MPI_IDENT, "self-compare %d", result);
  MPI_Comm_free(&b);
  MPI_Comm_free(&a);
  CHECK(a == MPI_COMM_NULL && b == MPI_COMM_NULL, "free did not null the handles");
}

static void split(void) {
  /* Even and odd ranks, in reverse order of their world rank. */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
  int hrank = -1;
  int hsize = -1;
  MPI_Comm_rank(half, &hrank);
  MPI_Comm_size(half, &hsize);
  const int members = (size + 1 - rank % 2) / 2;
  CHECK(hsize == members, "split size %d, expected %d", hsize, members);
  /* Highest world rank of my parity is rank 0 of the half. */
  const int highest = (size - 1) - ((size - 1 - rank % 2) % 2);
  CHECK(hrank == (highest - rank) / 2, "split rank %d for world rank %d", hrank, rank);
  int sum = 0;
  int token = rank;
  /* A ring inside the half: every member adds its world rank. */
  for (int step = 0; step < hsize; ++step) {
    MPI_Sendrecv_replace(&token, 1, MPI_INT, (hrank + 1) % hsize, 3, (hrank + hsize - 1) % hsize, 3,
                         half, MPI_STATUS_IGNORE);
    sum += token;
  }
  int expected = 0;
  for (int r = rank % 2; r < size; r += 2) expected += r;
  CHECK(sum == expected, "ring sum %d, expected %d", sum, expected);
  MPI_Barrier(half);
  int result = -1;
  MPI_Comm_compare(half, MPI_COMM_WORLD, &result);
  CHECK(result == (size == 1 ? MPI_SIMILAR : MPI_UNEQUAL) || (size == 1 && result == MPI_CONGRUENT),
        "split vs world compared %d", result);
  MPI_Comm_free(&half);
  MPI_Comm none;
  MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &none);
  CHECK((rank == 0) == (none == MPI_COMM_NULL), "MPI_UNDEFINED color gave %x", none);
  if (none != MPI_COMM_NULL) MPI_Comm_free(&none);
}

static void groups_and_create(void) {
  MPI_Group world;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int gsize = 0;
  int grank = -1;
  MPI_Group_size(world, &gsize);
  MPI_Group_rank(world, &grank);
  CHECK(gsize == size && grank == rank, "world group %d/%d", grank, gsize);
  /* The first half (at least one rank), and the rest. */
  const int first = (size + 1) / 2;
  int *ranks = malloc(sizeof(int) * (size_t)size);
  for (int i = 0; i < first; ++i) ranks[i] = i;
  MPI_Group low;
  MPI_Group high;
  MPI_Group_incl(world, first, ranks, &low);
  MPI_Group_excl(world, first, ranks, &high);
  MPI_Group_size(high, &gsize);
  CHECK(gsize == size - first, "excl size %d", gsize);
  int all = -1;
  MPI_Group both;
  MPI_Group_union(low, high, &both);
  MPI_Group_compare(both, world, &all);
  CHECK(all == MPI_IDENT, "union compared %d", all);
  MPI_Group none;
  MPI_Group_intersection(low, high, &none);
  MPI_Group_size(none, &gsize);
  CHECK(gsize == 0 && none == MPI_GROUP_EMPTY, "intersection size %d", gsize);
  MPI_Group diff;
  MPI_Group_difference(world, low, &diff);
  MPI_Group_compare(diff, high, &all);
  CHECK(all == MPI_IDENT || (size == 1 && diff == MPI_GROUP_EMPTY), "difference compared %d", all);
  /* Translate: world rank r is rank r of low, and not in high. */
  int in_low = -5;
  MPI_Group_translate_ranks(world, 1, &rank, low, &in_low);
  CHECK(in_low == (rank < first ? rank : MPI_UNDEFINED), "translate gave %d", in_low);
  MPI_Comm lowcomm;
  MPI_Comm_create(MPI_COMM_WORLD, low, &lowcomm);
  CHECK((rank < first) == (lowcomm != MPI_COMM_NULL), "Comm_create membership");
  if (lowcomm != MPI_COMM_NULL) {
    int s = 0;
    MPI_Comm_size(lowcomm, &s);
    CHECK(s == first, "created size %d", s);
    MPI_Barrier(lowcomm);
    MPI_Comm_free(&lowcomm);
  }
  MPI_Group_free(&low);
  MPI_Group_free(&high);
  MPI_Group_free(&both);
  MPI_Group_free(&diff);
  MPI_Group_free(&world);
  CHECK(world == MPI_GROUP_NULL, "Group_free did not null the handle");
  free(ranks);
}

static void names_and_reuse(void) {
  char name[MPI_MAX_OBJECT_NAME];
  int length = 0;
  MPI_Comm_get_name(MPI_COMM_WORLD, name, &length);
  CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && length == 14, "world is called %s", name);
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_get_name(c, name, &length);
  CHECK(length == 0, "a dup inherited the name %s", name);
  MPI_Comm_set_name(c, "solver");
  MPI_Comm_get_name(c, name, &length);
  CHECK(strcmp(name, "solver") == 0 && length == 6, "name %s", name);
  MPI_Comm_free(&c);
  /* Many create/free cycles: handles and contexts keep working. */
  for (int i = 0; i < 60; ++i) {
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    int v = i;
    MPI_Sendrecv_replace(&v, 1, MPI_INT, (rank + 1) % size, i, (rank + size - 1) % size, i, d,
                         MPI_STATUS_IGNORE);
    CHECK(v == i, "cycle %d got %d", i, v);
    MPI_Comm_free(&d);
  }
}

static void contexts_agree_after_uneven_history(void) {
  /* Rank 0 makes extra communicators alone first; a later collective dup
   * must still give every rank the same, unused context. */
  MPI_Comm mine[3];
  if (rank == 0) {
    for (int i = 0; i < 3; ++i) MPI_Comm_dup(MPI_COMM_SELF, &mine[i]);
  }
  MPI_Comm shared;
  MPI_Comm_dup(MPI_COMM_WORLD, &shared);
  const int to = (rank + 1) % size;
  const int from = (rank + size - 1) % size;
  int v = rank;
  MPI_Sendrecv_replace(&v, 1, MPI_INT, to, 1, from, 1, shared, MPI_STATUS_IGNORE);
  CHECK(v == from, "after uneven history got %d", v);
  if (rank == 0) {
    int w = 5;
    int got = 0;
    /* A message on rank 0's private communicator does not meet "shared". */
    MPI_Sendrecv(&w, 1, MPI_INT, 0, 1, &got, 1, MPI_INT, 0, 1, mine[2], MPI_STATUS_IGNORE);
    CHECK(got == 5, "private comm got %d", got);
    for (int i = 0; i < 3; ++i) MPI_Comm_free(&mine[i]);
  }
  MPI_Comm_free(&shared);
}

static void errors(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm w = MPI_COMM_WORLD;
  int cls = -1;
  MPI_Error_class(MPI_Comm_free(&w), &cls);
  CHECK(cls == MPI_ERR_COMM, "freeing MPI_COMM_WORLD gave %d", cls);
  MPI_Group g = MPI_GROUP_EMPTY;
  CHECK(MPI_Group_free(&g) == MPI_SUCCESS && g == MPI_GROUP_NULL, "freeing MPI_GROUP_EMPTY");
  MPI_Error_class(MPI_Group_free(&g), &cls);
  CHECK(cls == MPI_ERR_GROUP, "freeing MPI_GROUP_NULL gave %d", cls);
  MPI_Group world;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int bad[2] = {0, 0};
  MPI_Group out;
  MPI_Error_class(MPI_Group_incl(world, 2, bad, &out), &cls);
  CHECK(size < 2 || cls == MPI_ERR_RANK, "repeated rank in Group_incl gave %d", cls);
  bad[0] = size;
  MPI_Error_class(MPI_Group_incl(world, 1, bad, &out), &cls);
  CHECK(cls == MPI_ERR_RANK, "out-of-range rank in Group_incl gave %d", cls);
  MPI_Comm c;
  MPI_Error_class(MPI_Comm_split(MPI_COMM_WORLD, -5, 0, &c), &cls);
  CHECK(cls == MPI_ERR_ARG, "negative color gave %d", cls);
  MPI_Group_free(&world);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  void (*const phases[])(void) = {traffic_never_crosses,
                                  split,
                                  groups_and_create,
                                  names_and_reuse,
                                  contexts_agree_after_uneven_history,
                                  errors};
  for (unsigned i = 0; i < sizeof(phases) / sizeof(phases[0]); ++i) {
    phases[i]();
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 0 && check_failures == 0) printf("comms: all checks passed on %d ranks\n", size);
  return finish();
}
