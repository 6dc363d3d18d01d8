/* One-sided communication, phases I to M (rma.h says what each does). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rma.h"

/* ---- I: PSCW ---- */
static MPI_Group group_of(int n, const int *ranks) {
  MPI_Group world, g;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_incl(world, n, ranks, &g);
  MPI_Group_free(&world);
  return g;
}

void test_pscw(void) {
  int *mem = NULL;
  MPI_Win win;
  MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  for (int i = 0; i < 4; ++i) mem[i] = -1;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Group from_left = group_of(1, &left), to_right = group_of(1, &right);
  for (int round = 0; round < 10; ++round) {
    const int v = 100 * round + rank;
    MPI_Win_post(from_left, 0, win);
    MPI_Win_start(to_right, 0, win);
    MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    CHECK(mem[0] == 100 * round + left, "I: round %d: slot 0 holds %d, want %d", round, mem[0],
          100 * round + left);
  }
  /* Rank 0 to rank 1, several small ops an epoch: two puts and a SUM,
   * then (an epoch whose batch returns something) puts beside a get. On
   * Iris, the first epoch sends one message to a rank rank 0 does not
   * map (its ops and the complete notice), none to one it maps. */
  if (size >= 2 && rank < 2) {
    MPI_Group zero = group_of(1, &(int){0}), one = group_of(1, &(int){1});
    const int two[2] = {11, 12}, add = 5, thirteen = 13;
    int seen = -1;
    for (int epoch = 0; epoch < 2; ++epoch) {
      if (rank == 1) {
        MPI_Win_post(zero, 0, win);
        MPI_Win_wait(win);
        CHECK(epoch == 0 ? mem[1] == 11 && mem[2] == 12 && mem[3] == 4
                         : mem[1] == 12 && mem[2] == 13 && mem[3] == 4,
              "I: epoch %d of rank 0's small ops left %d %d %d", epoch, mem[1], mem[2], mem[3]);
        continue;
      }
#ifdef IRIS_MPI_H_INCLUDED
      const char *names[3] = {"am_messages", "am_puts", "am_fences"};
      const MPI_Count before = sent_so_far(names, 3);
#endif
      MPI_Win_start(one, 0, win);
      if (epoch == 0) {
        MPI_Put(two, 2, MPI_INT, 1, 1, 2, MPI_INT, win);
        MPI_Accumulate(&add, 1, MPI_INT, 1, 3, 1, MPI_INT, MPI_SUM, win);
      } else {
        MPI_Put(&two[1], 1, MPI_INT, 1, 1, 1, MPI_INT, win);
        MPI_Put(&thirteen, 1, MPI_INT, 1, 2, 1, MPI_INT, win);
        MPI_Get(&seen, 1, MPI_INT, 1, 3, 1, MPI_INT, win);
      }
      MPI_Win_complete(win);
#ifdef IRIS_MPI_H_INCLUDED
      const MPI_Count after = sent_so_far(names, 3);
      CHECK(epoch == 1 || after - before <= 1,
            "I: a PSCW epoch of three small ops sent %lld messages", (long long)(after - before));
#endif
    }
    CHECK(rank != 0 || seen == 4, "I: the get in a PSCW epoch read %d, want 4", seen);
    /* A late post, then a late complete: the rank that waits for the
     * notice idles first, so a rank that sleeps while idle must be woken by
     * it (rank 0 maps rank 1: the notice is a store to shared memory). */
    const struct timespec late = {0, 30 * 1000 * 1000};
    const int nine = 9;
    if (rank == 1) {
      nanosleep(&late, NULL);
      MPI_Win_post(zero, 0, win);
      MPI_Win_wait(win);
      CHECK(mem[1] == 9, "I: a late PSCW epoch left %d, want 9", mem[1]);
    } else {
      MPI_Win_start(one, 0, win);
      MPI_Put(&nine, 1, MPI_INT, 1, 1, 1, MPI_INT, win);
      nanosleep(&late, NULL);
      MPI_Win_complete(win);
    }
    MPI_Group_free(&zero);
    MPI_Group_free(&one);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  /* Large and strided: 1 MiB in many packets, and a vector type (a put
   * per piece) into a Win_create window over malloc'ed memory (never
   * mapped: CMA or packets), all landed when MPI_Win_wait returns. */
  {
    enum { kInts = 1 << 18 };
    int *big = malloc(2 * kInts * sizeof(int)), *out = malloc(kInts * sizeof(int));
    for (int i = 0; i < 2 * kInts; ++i) big[i] = -1;
    for (int i = 0; i < kInts; ++i) out[i] = rank * 3 + i;
    MPI_Win big_win;
    MPI_Win_create(big, 2 * kInts * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &big_win);
    MPI_Datatype every_other;
    MPI_Type_vector(64, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    for (int round = 0; round < 3; ++round) {
      out[0] = round;
      MPI_Win_post(from_left, 0, big_win);
      MPI_Win_start(to_right, 0, big_win);
      MPI_Put(out, kInts, MPI_INT, right, 0, kInts, MPI_INT, big_win);
      MPI_Put(out, 64, MPI_INT, right, kInts, 1, every_other, big_win);
      MPI_Win_complete(big_win);
      MPI_Win_wait(big_win);
      int bad = big[0] != round;
      for (int i = 1; i < kInts; ++i) bad += big[i] != left * 3 + i;
      for (int i = 0; i < 128; ++i) {
        bad += big[kInts + i] != (i % 2 ? -1 : i == 0 ? round : left * 3 + i / 2);
      }
      CHECK(bad == 0, "I: round %d: %d ints of the large and strided puts differ", round, bad);
    }
    MPI_Type_free(&every_other);
    MPI_Win_free(&big_win);
    free(big);
    free(out);
  }
  /* Both neighbours each way: slot 1 from the left, slot 2 from the right. */
  const int both[2] = {left, right};
  MPI_Group neighbours = group_of(size > 2 ? 2 : 1, both);
  MPI_Win_post(neighbours, 0, win);
  MPI_Win_start(neighbours, 0, win);
  MPI_Put(&rank, 1, MPI_INT, right, 1, 1, MPI_INT, win);
  MPI_Put(&rank, 1, MPI_INT, left, 2, 1, MPI_INT, win);
  MPI_Win_complete(win);
  int flag = 0;
  const double start = seconds();
  while (!flag && seconds() - start < 30) MPI_Win_test(win, &flag);
  CHECK(flag == 1, "I: MPI_Win_test never said the exposure epoch ended");
  CHECK(mem[1] == left && mem[2] == right, "I: slots 1 and 2 hold %d and %d, want %d and %d",
        mem[1], mem[2], left, right);
  /* Outside an epoch. */
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  CHECK(error_class(MPI_Win_complete(win)) == MPI_ERR_RMA_SYNC, "I: complete without start");
  CHECK(error_class(MPI_Win_wait(win)) == MPI_ERR_RMA_SYNC, "I: wait without post");
  MPI_Group_free(&from_left);
  MPI_Group_free(&to_right);
  MPI_Group_free(&neighbours);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_free(&win);
}

/* ---- J: request-based and large-count ops ---- */
void test_requests(void) {
  long long *mem = NULL;
  MPI_Win win;
  MPI_Win_allocate(8 * sizeof(long long), sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                   &win);
  for (int i = 0; i < 8; ++i) mem[i] = 0;
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);
  const long long mine = 1000 + rank, one = 1;
  long long back = -1, fetched = -1;
  MPI_Request r[4];
  MPI_Rput(&mine, 1, MPI_LONG_LONG, right, 0, 1, MPI_LONG_LONG, win, &r[0]);
  MPI_Wait(&r[0], MPI_STATUS_IGNORE);
  MPI_Raccumulate(&one, 1, MPI_LONG_LONG, 0, 1, 1, MPI_LONG_LONG, MPI_SUM, win, &r[1]);
  MPI_Rget_accumulate(&one, 1, MPI_LONG_LONG, &fetched, 1, MPI_LONG_LONG, 0, 2, 1, MPI_LONG_LONG,
                      MPI_SUM, win, &r[2]);
  MPI_Waitall(2, &r[1], MPI_STATUSES_IGNORE);
  CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL && r[2] == MPI_REQUEST_NULL,
        "J: a waited request is not MPI_REQUEST_NULL");
  CHECK(fetched >= 0 && fetched < size, "J: Rget_accumulate fetched %lld", fetched);
#if MPI_VERSION >= 4 /* Open MPI 4.1 has no large-count calls */
  /* The large-count forms, small counts. */
  const long long four[4] = {7, 8, 9, 10};
  long long got[4] = {0, 0, 0, 0};
  CHECK(MPI_Put_c(four, 4, MPI_LONG_LONG, right, 4, 4, MPI_LONG_LONG, win) == MPI_SUCCESS,
        "J: MPI_Put_c");
  MPI_Win_flush(right, win);
  CHECK(MPI_Accumulate_c(four, 2, MPI_LONG_LONG, right, 4, 2, MPI_LONG_LONG, MPI_SUM, win) ==
            MPI_SUCCESS,
        "J: MPI_Accumulate_c");
  MPI_Win_flush(right, win);
  CHECK(MPI_Get_c(got, 4, MPI_LONG_LONG, right, 4, 4, MPI_LONG_LONG, win) == MPI_SUCCESS,
        "J: MPI_Get_c");
  MPI_Win_flush(right, win);
  CHECK(got[0] == 14 && got[1] == 16 && got[2] == 9 && got[3] == 10,
        "J: after Put_c and Accumulate_c: %lld %lld %lld %lld", got[0], got[1], got[2], got[3]);
  long long old = -1;
  CHECK(MPI_Get_accumulate_c(&one, 1, MPI_LONG_LONG, &old, 1, MPI_LONG_LONG, right, 7, 1,
                             MPI_LONG_LONG, MPI_NO_OP, win) == MPI_SUCCESS,
        "J: MPI_Get_accumulate_c");
  MPI_Win_flush(right, win);
  CHECK(old == 10, "J: Get_accumulate_c (MPI_NO_OP) fetched %lld", old);
#endif
#ifdef IRIS_MPI_H_INCLUDED
  /* An Rput's request means its origin buffer is free, not that the put
   * ended at the target: 32 of them, waited for, then a flush, send at
   * most one message (a batch) to a rank this one does not map (none to
   * one it maps). Rank 0 alone, as in M, once every op before has ended
   * (the answers rank 0's handler sends count too). */
  MPI_Win_flush_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    const char *names[3] = {"am_messages", "am_puts", "am_fences"};
    MPI_Count before = sent_so_far(names, 3);
    MPI_Request many[32];
    long long values[32];
    for (int k = 0; k < 32; ++k) {
      values[k] = k;
      MPI_Rput(&values[k], 1, MPI_LONG_LONG, right, 3, 1, MPI_LONG_LONG, win, &many[k]);
    }
    MPI_Waitall(32, many, MPI_STATUSES_IGNORE);
    MPI_Win_flush(right, win);
    MPI_Count after = sent_so_far(names, 3);
    CHECK(after - before <= 1, "J: 32 Rputs, waited for, and a flush sent %lld messages",
          (long long)(after - before));
    /* 32 Rgets, waited for together: one flush, one message, and each
     * brings the value the last Rput left. */
    const char *get_names[3] = {"am_messages", "am_gets", "am_fences"};
    before = sent_so_far(get_names, 3);
    long long read[32];
    for (int k = 0; k < 32; ++k) {
      read[k] = -1;
      MPI_Rget(&read[k], 1, MPI_LONG_LONG, right, 3, 1, MPI_LONG_LONG, win, &many[k]);
    }
    MPI_Waitall(32, many, MPI_STATUSES_IGNORE);
    after = sent_so_far(get_names, 3);
    int wrong = 0;
    for (int k = 0; k < 32; ++k) wrong += read[k] != 31;
    CHECK(wrong == 0, "J: %d of 32 Rgets read other than 31 (read[0] %lld)", wrong, read[0]);
    CHECK(after - before <= 1, "J: 32 Rgets, waited for together, sent %lld messages",
          (long long)(after - before));
  }
  MPI_Barrier(MPI_COMM_WORLD);
#endif
  MPI_Request g;
  MPI_Rget(&back, 1, MPI_LONG_LONG, right, 0, 1, MPI_LONG_LONG, win, &g);
  MPI_Wait(&g, MPI_STATUS_IGNORE);
  /* Rput to right puts rank at right's slot 0; reading right's slot 0 gives
   * our own value back. */
  CHECK(back == mine, "J: Rget of what Rput wrote: %lld, want %lld", back, mine);
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    CHECK(mem[1] == size && mem[2] == size, "J: rank 0's sums are %lld and %lld, want %d", mem[1],
          mem[2], size);
    MPI_Win_unlock(0, win);
  }
  /* Outside a passive-target epoch: a fence epoch is not one. */
  MPI_Win_fence(0, win);
  /* MPI makes it erroneous; MPICH 4.0.2 does not report it. */
  MPI_Request none = MPI_REQUEST_NULL;
  const int in_fence =
      error_class(MPI_Rput(&mine, 1, MPI_LONG_LONG, right, 0, 1, MPI_LONG_LONG, win, &none));
  CHECK(in_fence == MPI_ERR_RMA_SYNC || !kRangeMustBeReported,
        "J: Rput in a fence epoch gave class %d, not MPI_ERR_RMA_SYNC", in_fence);
  if (none != MPI_REQUEST_NULL) MPI_Wait(&none, MPI_STATUS_IGNORE);
  MPI_Win_fence(0, win);
  MPI_Win_free(&win);
#if MPI_VERSION >= 4
  /* Win_allocate_c and Win_shared_query_c. */
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  double *shared = NULL;
  MPI_Win_allocate_shared_c(16, 8, MPI_INFO_NULL, node, &shared, &win);
  MPI_Aint bytes = -1, unit = -1;
  double *base = NULL;
  MPI_Win_shared_query_c(win, 0, &bytes, &unit, &base);
  CHECK(bytes == 16 && unit == 8 && base != NULL, "J: Win_shared_query_c: %td bytes, unit %td",
        bytes, unit);
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
#endif
}

/* ---- K: info and attributes ---- */
static int deletes;
static int count_delete(MPI_Win win, int keyval, void *value, void *extra) {
  (void)win, (void)keyval, (void)extra;
  deletes += *(int *)value;
  return MPI_SUCCESS;
}

static int info_says(MPI_Info info, const char *key, const char *want) {
  char value[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
  return flag && strcmp(value, want) == 0;
}

void test_info_attrs(void) {
  MPI_Info given;
  MPI_Info_create(&given);
  MPI_Info_set(given, "accumulate_ordering", "none");
  MPI_Info_set(given, "iris_unknown_hint", "1");
  int *mem = NULL;
  MPI_Win win;
  MPI_Win_allocate(64, sizeof(int), given, MPI_COMM_WORLD, &mem, &win);
  MPI_Info_free(&given);
  MPI_Info used;
  MPI_Win_get_info(win, &used);
  CHECK(info_says(used, "accumulate_ordering", "none"), "K: accumulate_ordering not \"none\"");
  /* Which hints a window reports is the implementation's choice (Open MPI
   * 4.1.4 reports neither of these): Iris reports every one it knows. */
  CHECK(info_says(used, "no_locks", "false") || !kRangeMustBeReported, "K: no_locks not \"false\"");
  MPI_Info_free(&used);
  MPI_Info_create(&given);
  MPI_Info_set(given, "accumulate_ordering", "rar,raw,war,waw");
  MPI_Win_set_info(win, given);
  MPI_Info_free(&given);
  MPI_Win_get_info(win, &used);
  CHECK(info_says(used, "accumulate_ordering", "rar,raw,war,waw") || !kRangeMustBeReported,
        "K: MPI_Win_set_info did not change accumulate_ordering");
  MPI_Info_free(&used);

  int keyval = MPI_KEYVAL_INVALID, flag = 0;
  static int one = 1, ten = 10;
  int *got = NULL;
  MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, count_delete, &keyval, NULL);
  MPI_Win_set_attr(win, keyval, &one);
  MPI_Win_get_attr(win, keyval, &got, &flag);
  CHECK(flag == 1 && got == &one, "K: our attribute read back: flag %d", flag);
  MPI_Win_delete_attr(win, keyval);
  CHECK(deletes == 1, "K: MPI_Win_delete_attr ran the callback %d times", deletes);
  MPI_Win_get_attr(win, keyval, &got, &flag);
  CHECK(flag == 0, "K: a deleted attribute is still there");
  int *flavor = NULL;
  MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
  CHECK(flag == 1 && *flavor == MPI_WIN_FLAVOR_ALLOCATE, "K: the flavor through get_attr");
  MPI_Win_set_attr(win, keyval, &ten);
  MPI_Win_free_keyval(&keyval);
  CHECK(keyval == MPI_KEYVAL_INVALID, "K: MPI_Win_free_keyval left the keyval");
  MPI_Win_free(&win);
  CHECK(deletes == 11, "K: MPI_Win_free ran the delete callback: %d", deletes);
}

/* ---- L: MPICH's cases ---- */
void test_mpich_cases(void) {
  enum { many = 600 };
  static MPI_Win wins[many];
  static int *bases[many];
  for (int i = 0; i < many; ++i) {
    CHECK(MPI_Win_allocate(64, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &bases[i], &wins[i]) ==
              MPI_SUCCESS,
          "L: window %d of %d", i, many);
  }
  for (int i = many - 1; i >= 0; --i) MPI_Win_free(&wins[i]);

  char *chars = NULL;
  MPI_Win win;
  MPI_Win_allocate(8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &chars, &win);
  chars[0] = chars[1] = chars[2] = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);
  const char one = 1;
  char old = -1;
  CHECK(MPI_Fetch_and_op(&one, &old, MPI_CHAR, 0, 0, MPI_SUM, win) == MPI_SUCCESS,
        "L: fetch_and_op on MPI_CHAR");
  MPI_Win_flush(0, win);
  CHECK(old >= 0 && old < size, "L: fetch_and_op on MPI_CHAR fetched %d", old);
  /* MPI_BYTE as an unsigned char under SUM and MAX, as Open MPI and MPICH
   * take it in accumulates (MPICH's large_acc_flush_local sums bytes). */
  const unsigned char hundred = 100, high = rank == 0 ? 1 : 200;
  CHECK(MPI_Accumulate(&hundred, 1, MPI_BYTE, 0, 1, 1, MPI_BYTE, MPI_SUM, win) == MPI_SUCCESS,
        "L: MPI_SUM on MPI_BYTE");
  CHECK(MPI_Accumulate(&high, 1, MPI_BYTE, 0, 2, 1, MPI_BYTE, MPI_MAX, win) == MPI_SUCCESS,
        "L: MPI_MAX on MPI_BYTE");
  /* No data: nothing to check the types against. */
  CHECK(MPI_Accumulate(NULL, 0, MPI_INT, 0, 0, 0, MPI_DOUBLE, MPI_SUM, win) == MPI_SUCCESS,
        "L: an accumulate of no data");
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    CHECK(chars[0] == size, "L: the chars added up to %d, want %d", chars[0], size);
    const unsigned char *bytes = (const unsigned char *)chars;
    const int high_want = size > 1 ? 200 : 1;
    CHECK(bytes[1] == (100 * size) % 256 && bytes[2] == high_want,
          "L: the bytes added up to %d (want %d), their MAX %d (want %d)", bytes[1],
          (100 * size) % 256, bytes[2], high_want);
    MPI_Win_unlock(0, win);
  }
  MPI_Win_free(&win);

  struct short_int {
    short v;
    int i;
  } *pairs = NULL;
  MPI_Win_allocate(4 * sizeof(struct short_int), sizeof(struct short_int), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &pairs, &win);
  for (int j = 0; j < 4; ++j) pairs[j].v = -1, pairs[j].i = -1;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);
  struct short_int two[2] = {{(short)rank, rank}, {(short)(100 - rank), rank}};
  MPI_Accumulate(two, 2, MPI_SHORT_INT, 0, 1, 2, MPI_SHORT_INT, MPI_MAXLOC, win);
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  struct short_int seen[2] = {{0, 0}, {0, 0}};
  MPI_Win_lock_all(0, win);
  MPI_Get_accumulate(NULL, 0, MPI_SHORT_INT, seen, 2, MPI_SHORT_INT, 0, 1, 2, MPI_SHORT_INT,
                     MPI_NO_OP, win);
  MPI_Win_unlock_all(win);
  CHECK(seen[0].v == size - 1 && seen[0].i == size - 1 && seen[1].v == 100 && seen[1].i == 0,
        "L: MAXLOC on MPI_SHORT_INT gave {%d, %d} {%d, %d}, want {%d, %d} {100, 0}", seen[0].v,
        seen[0].i, seen[1].v, seen[1].i, size - 1, size - 1);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    CHECK(pairs[0].v == -1 && pairs[0].i == -1 && pairs[3].v == -1 && pairs[3].i == -1,
          "L: MAXLOC on MPI_SHORT_INT wrote outside its pairs");
    MPI_Win_unlock(0, win);
  }
  MPI_Win_free(&win);

  /* Under exclusive locks, 1000 ints at once: SUM, then a fetching BXOR. */
  enum { ints = 1000 };
  int *sums = NULL;
  MPI_Win_allocate(ints * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &sums, &win);
  for (int j = 0; j < ints; ++j) sums[j] = j;
  MPI_Barrier(MPI_COMM_WORLD);
  int *adds = malloc(ints * sizeof(int)), *before = malloc(ints * sizeof(int));
  for (int j = 0; j < ints; ++j) adds[j] = rank + 1, before[j] = -1;
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
  MPI_Accumulate(adds, ints, MPI_INT, 0, 0, ints, MPI_INT, MPI_SUM, win);
  MPI_Win_unlock(0, win);
  MPI_Barrier(MPI_COMM_WORLD);
  const int total = size * (size + 1) / 2;
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
  MPI_Get_accumulate(adds, ints, MPI_INT, before, ints, MPI_INT, 0, 0, ints, MPI_INT, MPI_BXOR,
                     win);
  MPI_Win_unlock(0, win);
  int bad = -1;
  /* What it fetched depends on the order the ranks came in; that it did: */
  for (int j = 0; j < ints && bad < 0; ++j) {
    if (before[j] == -1) bad = j;
  }
  CHECK(bad < 0, "L: Get_accumulate under an exclusive lock fetched nothing at %d", bad);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    int x = 0;
    for (int r = 0; r < size; ++r) x ^= r + 1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    for (int j = 0; j < ints && bad < 0; ++j) {
      if (sums[j] != ((j + total) ^ x)) bad = j;
    }
    CHECK(bad < 0, "L: after SUM and BXOR under exclusive locks int %d is %d, want %d", bad,
          bad < 0 ? 0 : sums[bad], bad < 0 ? 0 : (bad + total) ^ x);
    MPI_Win_unlock(0, win);
  }

  free(adds);
  free(before);
  MPI_Win_free(&win);

  /* Under lock_all, at once: every rank adds 1 to each of 64Ki ints 8
   * times, then once more fetching, and none is lost. A run is applied by
   * the CPU's atomics where another process maps rank 0's memory, by plain
   * loads and stores where none does (tcp alone: every accumulate to it
   * runs in rank 0, under its call lock). */
  enum { run_ints = 1 << 16 };
  MPI_Win_allocate(run_ints * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &sums, &win);
  for (int j = 0; j < run_ints; ++j) sums[j] = 0;
  adds = malloc(run_ints * sizeof(int));
  before = malloc(run_ints * sizeof(int));
  for (int j = 0; j < run_ints; ++j) adds[j] = 1, before[j] = -1;
  /* Odd ranks go through the ints backwards, 64 at a time, so that their
   * runs cross the even ranks' (two runs in one direction at one speed
   * seldom meet). */
  enum { chunk = 64 };
  int *backwards = malloc(run_ints / chunk * sizeof(int));
  for (int i = 0; i < run_ints / chunk; ++i) backwards[i] = (run_ints / chunk - 1 - i) * chunk;
  MPI_Datatype reversed;
  MPI_Type_create_indexed_block(run_ints / chunk, chunk, backwards, MPI_INT, &reversed);
  MPI_Type_commit(&reversed);
  free(backwards);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);
  for (int k = 0; k < 8; ++k) {
    if (rank % 2 == 1) {
      MPI_Accumulate(adds, run_ints, MPI_INT, 0, 0, 1, reversed, MPI_SUM, win);
    } else {
      MPI_Accumulate(adds, run_ints, MPI_INT, 0, 0, run_ints, MPI_INT, MPI_SUM, win);
    }
  }
  MPI_Type_free(&reversed);
  MPI_Get_accumulate(adds, run_ints, MPI_INT, before, run_ints, MPI_INT, 0, 0, run_ints, MPI_INT,
                     MPI_SUM, win);
  MPI_Win_unlock_all(win);
  bad = -1;
  for (int j = 0; j < run_ints && bad < 0; ++j) {
    if (before[j] < 8 || before[j] >= 9 * size) bad = j;
  }
  CHECK(bad < 0, "L: a fetching SUM under lock_all read %d at %d, want 8 to %d",
        bad < 0 ? 0 : before[bad], bad, 9 * size - 1);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    sync_self(win);
    bad = -1;
    for (int j = 0; j < run_ints && bad < 0; ++j) {
      if (sums[j] != 9 * size) bad = j;
    }
    CHECK(bad < 0, "L: after %d ranks added 9 times under lock_all int %d is %d, want %d", size,
          bad, bad < 0 ? 0 : sums[bad], 9 * size);
    for (int j = 0; j < run_ints; ++j) sums[j] = 0;
    sync_self(win);
  }
  /* Bytes, summed 8 to a word where they are applied by atomics: 1001
   * unsigned chars from byte 4 (neither end on a word), 200 each time,
   * so that every lane wraps; no carry may reach a neighbour. */
  enum { bytes = 1001 };
  unsigned char *two_hundreds = malloc(bytes);
  memset(two_hundreds, 200, bytes);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);
  for (int k = 0; k < 9; ++k) {
    MPI_Accumulate(two_hundreds, bytes, MPI_UNSIGNED_CHAR, 0, 1, bytes, MPI_UNSIGNED_CHAR, MPI_SUM,
                   win);
  }
  MPI_Win_unlock_all(win);
  free(two_hundreds);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    sync_self(win);
    const unsigned char *at = (const unsigned char *)sums;
    const unsigned char want = (unsigned char)(200u * 9u * (unsigned)size);
    bad = -1;
    for (int j = 0; j < 4 + bytes + 8 && bad < 0; ++j) {
      if (at[j] != (j >= 4 && j < 4 + bytes ? want : 0)) bad = j;
    }
    CHECK(bad < 0, "L: after byte SUMs under lock_all byte %d is %d, want %d", bad,
          bad < 0 ? 0 : at[bad], bad >= 4 && bad < 4 + bytes ? want : 0);
  }
  free(adds);
  free(before);
  MPI_Win_free(&win);

  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_rank, node_size;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  int *mine = NULL;
  MPI_Win_allocate_shared(node_rank % 2 ? 0 : 16, sizeof(int), MPI_INFO_NULL, node, &mine, &win);
  for (int r = 0; r < node_size; ++r) {
    MPI_Aint bytes = -1;
    int unit = 0;
    int *base = (int *)&unit;
    MPI_Win_shared_query(win, r, &bytes, &unit, &base);
    if (r % 2) {
      CHECK(bytes == 0 && base == NULL, "L: shared_query of rank %d: %td bytes, base %p", r, bytes,
            (void *)base);
    } else {
      CHECK(bytes == 16 && base != NULL, "L: shared_query of rank %d: %td bytes", r, bytes);
    }
  }
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
}

/* ---- M: lazy locks ---- */
/* Each rank's window: [0, 16) take the exclusive epoch's puts, [16, 32)
 * hold what its gets read, [32, 40) take its SUMs, [40] its fetch_and_op,
 * [41] its compare_and_swap, [48, 48 + 40 * 1024) the large epoch's puts;
 * then rank 0's counter. */
enum { kPuts = 0, kReads = 16, kSums = 32, kFop = 40, kCas = 41, kLarge = 48 };
enum { kLargeInts = 80 * 1024, kCounter = kLarge + kLargeInts, kLazyInts = kCounter + 1 };

static int compare_int(const void *a, const void *b) {
  const int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

void test_lazy_locks(void) {
  int *mem = NULL;
  MPI_Win win;
  MPI_Win_allocate(padded(kLazyInts * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                   &mem, &win);
  for (int i = 0; i < kLazyInts; ++i) mem[i] = 0;
  for (int i = 0; i < 16; ++i) mem[kReads + i] = 1000 * rank + i;
  mem[kCas] = 7;
  sync_self(win);
  MPI_Barrier(MPI_COMM_WORLD);

  /* Every kind of op in one epoch to the right neighbour: a put of a
   * vector, gets of a contiguous run and of a vector, a SUM of 8, a
   * fetch_and_op, a compare_and_swap, all checked after the unlock. */
  MPI_Datatype every_other;
  MPI_Type_vector(8, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);
  int out[8], got[16], strided[16], sums[8], fetched = -1, swapped = -1;
  for (int i = 0; i < 8; ++i) out[i] = 100 * rank + i, sums[i] = i + 1;
  for (int i = 0; i < 16; ++i) got[i] = strided[i] = -1;
  const int add = 5, cas_new = 70 + rank, cas_old = 7;
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
  MPI_Put(out, 8, MPI_INT, right, kPuts, 1, every_other, win);
  MPI_Get(got, 16, MPI_INT, right, kReads, 16, MPI_INT, win);
  MPI_Get(strided, 1, every_other, right, kReads, 8, MPI_INT, win);
  MPI_Accumulate(sums, 8, MPI_INT, right, kSums, 8, MPI_INT, MPI_SUM, win);
  MPI_Fetch_and_op(&add, &fetched, MPI_INT, right, kFop, MPI_SUM, win);
  MPI_Compare_and_swap(&cas_new, &cas_old, &swapped, MPI_INT, right, kCas, win);
  CHECK(MPI_Win_unlock(right, win) == MPI_SUCCESS, "M: the unlock failed");
  int bad = 0;
  for (int i = 0; i < 16; ++i) bad += got[i] != 1000 * right + i;
  for (int i = 0; i < 16; ++i) {
    bad += strided[i] != (i % 2 == 0 ? 1000 * right + i / 2 : -1);
  }
  CHECK(bad == 0, "M: %d ints the gets read differ (got[0] %d)", bad, got[0]);
  CHECK(fetched == 0 && swapped == 7, "M: fetch_and_op found %d, compare_and_swap %d", fetched,
        swapped);
  MPI_Barrier(MPI_COMM_WORLD);
  sync_self(win);
  bad = 0;
  for (int i = 0; i < 16; ++i) bad += mem[kPuts + i] != (i % 2 == 0 ? 100 * left + i / 2 : 0);
  for (int i = 0; i < 8; ++i) bad += mem[kSums + i] != i + 1;
  CHECK(bad == 0, "M: %d ints the put and the SUM left differ", bad);
  CHECK(mem[kFop] == 5 && mem[kCas] == 70 + left, "M: the fetch_and_op left %d, the cas %d",
        mem[kFop], mem[kCas]);

  /* More than one message takes: 80 puts of 4 KiB, then an epoch with no
   * ops, then one with a lone get of what landed. */
  int *block = malloc(kLargeInts * sizeof(int));
  for (int i = 0; i < kLargeInts; ++i) block[i] = rank * 7 + i;
  MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
  for (int k = 0; k < kLargeInts / 1024; ++k) {
    MPI_Put(block + k * 1024, 1024, MPI_INT, right, kLarge + k * 1024, 1024, MPI_INT, win);
  }
  MPI_Win_unlock(right, win);
  MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
  MPI_Win_unlock(right, win);
  int last[4] = {-1, -1, -1, -1};
  MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
  MPI_Get(last, 4, MPI_INT, right, kLarge + kLargeInts - 4, 4, MPI_INT, win);
  MPI_Win_unlock(right, win);
  CHECK(last[0] == rank * 7 + kLargeInts - 4 && last[3] == rank * 7 + kLargeInts - 1,
        "M: the last put of the large epoch left %d %d", last[0], last[3]);
  MPI_Barrier(MPI_COMM_WORLD);
  sync_self(win);
  bad = 0;
  for (int i = 0; i < kLargeInts; ++i) bad += mem[kLarge + i] != left * 7 + i;
  CHECK(bad == 0, "M: %d ints of the large epoch differ", bad);
  MPI_Barrier(MPI_COMM_WORLD);
  const int one_add = 1;

  /* Under lock_all, many small ops to one rank (more than one message of
   * them): 2560 puts of 16 ints over the large area, a SUM into each
   * block's first int, and gets of each block's last int, then one flush. */
  {
    enum { kBlocks = kLargeInts / 16 };
    int *back = malloc(kBlocks * sizeof(int));
    for (int i = 0; i < kLargeInts; ++i) block[i] = rank * 11 + i;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int k = 0; k < kBlocks; ++k) {
      MPI_Put(block + 16 * k, 16, MPI_INT, right, kLarge + 16 * k, 16, MPI_INT, win);
    }
    MPI_Win_flush(right, win);
    for (int k = 0; k < kBlocks; ++k) {
      MPI_Accumulate(&one_add, 1, MPI_INT, right, kLarge + 16 * k, 1, MPI_INT, MPI_SUM, win);
      MPI_Get(&back[k], 1, MPI_INT, right, kLarge + 16 * k + 15, 1, MPI_INT, win);
    }
    MPI_Win_flush(right, win);
    MPI_Win_unlock_all(win);
    bad = 0;
    for (int k = 0; k < kBlocks; ++k) bad += back[k] != rank * 11 + 16 * k + 15;
    CHECK(bad == 0, "M: %d of the lock_all gets differ (back[0] %d)", bad, back[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    sync_self(win);
    bad = 0;
    for (int i = 0; i < kLargeInts; ++i) {
      bad += mem[kLarge + i] != left * 11 + i + (i % 16 == 0 ? 1 : 0);
    }
    CHECK(bad == 0, "M: %d ints of the lock_all puts and SUMs differ", bad);
    MPI_Barrier(MPI_COMM_WORLD);
    free(back);
  }

  /* Under lock_all, ops of 4 KiB, the largest a batch takes: 20 puts over
   * part of the large area, a flush, then 20 gets of it back into every
   * other int of a buffer twice as long (an origin type with holes). Where
   * this rank does not map the target, none goes as an am_put or am_get of
   * its own. */
  {
    enum { kChunk = 1024, kChunks = 20 };
    int *wide = malloc(2 * kChunk * kChunks * sizeof(int));
    for (int i = 0; i < kChunk * kChunks; ++i) block[i] = rank * 13 + i;
    for (int i = 0; i < 2 * kChunk * kChunks; ++i) wide[i] = -1;
    MPI_Datatype spaced;
    MPI_Type_vector(kChunk, 1, 2, MPI_INT, &spaced);
    MPI_Type_commit(&spaced);
#ifdef IRIS_MPI_H_INCLUDED
    const char *names[2] = {"am_puts", "am_gets"};
    const MPI_Count alone_before = sent_so_far(names, 2);
#endif
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int k = 0; k < kChunks; ++k) {
      MPI_Put(block + kChunk * k, kChunk, MPI_INT, right, kLarge + kChunk * k, kChunk, MPI_INT,
              win);
    }
    MPI_Win_flush(right, win);
    for (int k = 0; k < kChunks; ++k) {
      MPI_Get(wide + 2 * kChunk * k, 1, spaced, right, kLarge + kChunk * k, kChunk, MPI_INT, win);
    }
    MPI_Win_flush(right, win);
    MPI_Win_unlock_all(win);
#ifdef IRIS_MPI_H_INCLUDED
    const MPI_Count alone = sent_so_far(names, 2) - alone_before;
    CHECK(alone == 0, "M: %lld of the 4 KiB puts and gets went alone", (long long)alone);
#endif
    bad = 0;
    for (int i = 0; i < kChunk * kChunks; ++i) {
      bad += wide[2 * i] != rank * 13 + i || wide[2 * i + 1] != -1;
    }
    CHECK(bad == 0, "M: %d ints of the 4 KiB gets differ (wide[0] %d)", bad, wide[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    sync_self(win);
    bad = 0;
    for (int i = 0; i < kChunk * kChunks; ++i) bad += mem[kLarge + i] != left * 13 + i;
    CHECK(bad == 0, "M: %d ints of the 4 KiB puts differ", bad);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_free(&spaced);
    free(wide);
  }

#ifdef IRIS_MPI_H_INCLUDED
  /* What a flush costs in messages (to a rank this one does not map;
   * none where it does): 64 small puts go as one batch, with no fence
   * step after it; a lone put or get as one am_put or am_get, and the get
   * still brings its value. Rank 0 alone: nobody sends it requests, whose
   * answers its counts would take in. */
  if (rank == 0) {
    const char *names[4] = {"am_messages", "am_puts", "am_gets", "am_fences"};
    MPI_Count before[4], after[4];
    int lone = -1;
    MPI_Win_lock_all(0, win);
    MPI_Win_flush(right, win); /* whatever the epochs before left */
    for (int i = 0; i < 4; ++i) MPIX_Stat_get(names[i], &before[i]);
    for (int k = 0; k < 64; ++k) {
      MPI_Put(block + 2 * k, 2, MPI_INT, right, kLarge + 2 * k, 2, MPI_INT, win);
    }
    MPI_Win_flush(right, win);
    for (int i = 0; i < 4; ++i) MPIX_Stat_get(names[i], &after[i]);
    MPI_Count sent = 0;
    for (int i = 0; i < 4; ++i) sent += after[i] - before[i];
    CHECK(sent <= 1, "M: 64 small puts and a flush sent %lld messages (%lld puts, %lld fences)",
          (long long)sent, (long long)(after[1] - before[1]), (long long)(after[3] - before[3]));
    MPI_Put(block, 1, MPI_INT, right, kLarge, 1, MPI_INT, win);
    MPI_Win_flush(right, win);
    MPI_Get(&lone, 1, MPI_INT, right, kLarge + 1, 1, MPI_INT, win);
    MPI_Win_flush(right, win);
    for (int i = 0; i < 4; ++i) MPIX_Stat_get(names[i], &before[i]);
    sent = 0;
    for (int i = 0; i < 4; ++i) sent += before[i] - after[i];
    CHECK(sent <= 2 && before[0] == after[0],
          "M: a lone put and a lone get, each flushed, sent %lld messages (%lld to a handler)",
          (long long)sent, (long long)(before[0] - after[0]));
    CHECK(lone == block[1], "M: a lone get under lock_all read %d, not %d", lone, block[1]);
    /* What answers bring back counts in a batch's size too: 200 gets of
     * 4 KiB (800 KiB back) go in 4 batches (none where rank 0 maps the
     * target), none alone. The first 20 KiB of the large area hold what
     * the 4 KiB puts above left. */
    enum { kGets = 200 };
    int *many = malloc(kGets * 1024 * sizeof(int));
    for (int i = 0; i < 4; ++i) MPIX_Stat_get(names[i], &before[i]);
    for (int k = 0; k < kGets; ++k) {
      MPI_Get(many + 1024 * k, 1024, MPI_INT, right, kLarge + 1024 * (k % 20), 1024, MPI_INT, win);
    }
    MPI_Win_flush(right, win);
    for (int i = 0; i < 4; ++i) MPIX_Stat_get(names[i], &after[i]);
    const MPI_Count batches = after[0] - before[0];
    CHECK((batches == 0 || batches >= 4) && after[2] == before[2],
          "M: 200 gets of 4 KiB went in %lld batches and %lld alone", (long long)batches,
          (long long)(after[2] - before[2]));
    bad = 0;
    for (int i = 0; i < kGets * 1024; ++i) bad += many[i] != i % (20 * 1024);
    CHECK(bad == 0, "M: %d ints of the 200 gets differ (many[0] %d)", bad, many[0]);
    free(many);
    MPI_Win_unlock_all(win);
    /* An exclusive epoch of one 8 KiB put and one 8 KiB get: lock, both
     * ops and the release go as one message (none where rank 0 maps the
     * target), not the lock's round trip first. */
    int *eight = malloc(2048 * sizeof(int));
    for (int i = 0; i < 4; ++i) MPIX_Stat_get(names[i], &before[i]);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Put(block, 2048, MPI_INT, right, kLarge + 40960, 2048, MPI_INT, win);
    MPI_Get(eight, 2048, MPI_INT, right, kLarge + 1024, 2048, MPI_INT, win);
    MPI_Win_unlock(right, win);
    for (int i = 0; i < 4; ++i) MPIX_Stat_get(names[i], &after[i]);
    sent = 0;
    for (int i = 0; i < 4; ++i) sent += after[i] - before[i];
    CHECK(sent <= 1, "M: a lock, an 8 KiB put and get, an unlock sent %lld messages",
          (long long)sent);
    bad = 0;
    for (int i = 0; i < 2048; ++i) bad += eight[i] != 1024 + i;
    CHECK(bad == 0, "M: %d ints of the 8 KiB get in a lock epoch differ (%d)", bad, eight[0]);
    free(eight);
  }
  MPI_Barrier(MPI_COMM_WORLD);
#endif
  free(block);

  /* An exclusive lock held elsewhere holds back an op too large for a
   * batch (its lazy lock is asked for first): rank 0 holds rank 1's lock
   * for 0.2 s while rank 2 puts 8 KiB over what rank 0 reads. */
  if (size >= 3) {
    if (rank == 0) {
      int seen = -1, again = -2;
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
      MPI_Get(&seen, 1, MPI_INT, 1, kLarge, 1, MPI_INT, win);
      MPI_Win_flush(1, win); /* held from here */
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = seconds();
      while (seconds() - start < 0.2) {
      }
      MPI_Get(&again, 1, MPI_INT, 1, kLarge, 1, MPI_INT, win);
      MPI_Win_unlock(1, win);
      CHECK(again == seen, "M: a put landed while another rank held the exclusive lock");
    } else if (rank == 2) {
      int big[2048];
      for (int i = 0; i < 2048; ++i) big[i] = 777;
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
      MPI_Put(big, 2048, MPI_INT, 1, kLarge, 2048, MPI_INT, win);
      MPI_Win_unlock(1, win);
    } else {
      MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }

  /* Every rank adds 1 to rank 0's counter 10 times, each in an exclusive
   * epoch of its own: exclusive locks that were refused go again, and
   * every value from 0 to 10 * size - 1 is fetched once. */
  enum { kRounds = 10 };
  int mine[kRounds];
  const int one = 1;
  for (int i = 0; i < kRounds; ++i) {
    mine[i] = -1;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Fetch_and_op(&one, &mine[i], MPI_INT, 0, kCounter, MPI_SUM, win);
    MPI_Win_unlock(0, win);
  }
  int *all = rank == 0 ? malloc(sizeof(int) * kRounds * (size_t)size) : NULL;
  MPI_Gather(mine, kRounds, MPI_INT, all, kRounds, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    qsort(all, (size_t)kRounds * (size_t)size, sizeof(int), compare_int);
    bad = 0;
    for (int i = 0; i < kRounds * size; ++i) bad += all[i] != i;
    CHECK(bad == 0, "M: %d fetched counter values are not 0 .. %d", bad, kRounds * size - 1);
    free(all);
  }
  MPI_Type_free(&every_other);
  MPI_Win_free(&win);

  /* An op outside a dynamic window's attached memory: MPI_Win_unlock
   * reports it, and the memory beside it is left as it was. (Erroneous:
   * another MPI may do anything, Open MPI's osc/ucx crashes.) */
  if (!kRangeMustBeReported) return;
  MPI_Win dyn;
  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn);
  MPI_Win_set_errhandler(dyn, MPI_ERRORS_RETURN);
  int *region = malloc(8 * sizeof(int));
  for (int i = 0; i < 8; ++i) region[i] = -3;
  MPI_Win_attach(dyn, region, 4 * sizeof(int));
  MPI_Aint at = 0, at_right = 0;
  MPI_Get_address(region, &at);
  MPI_Sendrecv(&at, 1, MPI_AINT, left, 0, &at_right, 1, MPI_AINT, right, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  const int four[4] = {1, 2, 3, 4};
  MPI_Win_lock(MPI_LOCK_SHARED, right, 0, dyn);
  const int put_err =
      MPI_Put(four, 4, MPI_INT, right, MPI_Aint_add(at_right, 4 * sizeof(int)), 4, MPI_INT, dyn);
  const int unlock_err = MPI_Win_unlock(right, dyn);
  const int cls = error_class(put_err != MPI_SUCCESS ? put_err : unlock_err);
  CHECK(cls == MPI_ERR_RMA_RANGE || (cls == MPI_SUCCESS && !kRangeMustBeReported),
        "M: a put past the attached memory gave class %d", cls);
  MPI_Barrier(MPI_COMM_WORLD);
  bad = 0;
  for (int i = 4; i < 8; ++i) bad += region[i] != -3;
  CHECK(bad == 0 || !kRangeMustBeReported, "M: %d ints past the attached memory were written", bad);
  MPI_Win_detach(dyn, region);
  MPI_Win_free(&dyn);
  free(region);
}

int rma_more_failures(void) {
  (void)finish; /* check.h's: rma.c's main calls it */
  return check_failures;
}
