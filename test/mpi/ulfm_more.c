/* ulfm's cases without a victim (WHERE "none"), and "intercomm" (ulfm.c
 * says what each checks). */
#ifndef _DEFAULT_SOURCE /* a unity build has ulfm.c's before */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#endif
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ulfm.h"

/* An intercommunicator between the world's halves, revoked by the lower
 * half's rank 0 while every other rank waits in a receive over it that
 * nobody matches: each receive ends with MPIX_ERR_REVOKED, both groups see
 * it revoked, and the world it was made from is not (checked before a
 * barrier: after it, the survivors go on to revoke the world). */
void revoke_intercomm(void) {
  int me = -1, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n < 2) return;
  const int low = me < n / 2;
  MPI_Comm half = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, low, me, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? n / 2 : 0, 41, &inter);
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  if (me == 0) {
    CHECK(MPIX_Comm_revoke(inter) == MPI_SUCCESS, "revoking an intercommunicator failed");
  } else {
    int x = 0;
    const int err = MPI_Recv(&x, 1, MPI_INT, 0, 42, inter, MPI_STATUS_IGNORE);
    int cls = err;
    MPI_Error_class(err, &cls);
    CHECK(cls == MPIX_ERR_REVOKED, "a receive on the revoked intercommunicator returned %d", err);
  }
  int revoked = 0;
  MPIX_Comm_is_revoked(inter, &revoked);
  CHECK(revoked, "the intercommunicator is not revoked here");
  MPIX_Comm_is_revoked(MPI_COMM_WORLD, &revoked);
  CHECK(!revoked, "revoking an intercommunicator revoked the world");
  /* Before anyone goes on to revoke the world itself. */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
}

/* The AND of ~bit(r) over the ranks r in [from, to) still alive. */
static int bits_of_alive(int from, int to) {
  int want = ~0;
  for (int r = from; r < to; ++r) {
    if (!is_victim(r)) want &= ~(1 << (r % 31));
  }
  return want;
}

static int alive_in(int from, int to) {
  int n = 0;
  for (int r = from; r < to; ++r) n += !is_victim(r);
  return n;
}

/* "intercomm" (see the top): the victims die once the intercommunicator
 * between the world's halves is made. */
void intercomm_survives(void) {
  const int half_size = world_size / 2, low = me < half_size;
  const int local_from = low ? 0 : half_size, local_to = low ? half_size : world_size;
  const int remote_from = low ? half_size : 0, remote_to = low ? world_size : half_size;
  MPI_Comm half = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, low, me, &half);
  CHECK(
      MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? half_size : 0, 43, &inter) == MPI_SUCCESS,
      "MPI_Intercomm_create failed");
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  /* Everyone is done making it before a victim dies (a survivor still in
   * the barrier may meet the death there). */
  const int barrier = MPI_Barrier(MPI_COMM_WORLD);
  CHECK(barrier == MPI_SUCCESS || failure(barrier), "the barrier returned %d", barrier);
  if (is_victim(me)) raise(SIGKILL);
  int flag = ~(1 << (me % 31));
  int err = MPIX_Comm_agree(inter, &flag);
  int cls = err;
  MPI_Error_class(err, &cls);
  CHECK(err == MPI_SUCCESS || cls == MPIX_ERR_PROC_FAILED, "agree over the intercomm returned %d",
        err);
  CHECK(victim_count == 0 || err != MPI_SUCCESS,
        "agree over the intercomm did not report the unacknowledged failure");
  CHECK(flag == bits_of_alive(remote_from, remote_to),
        "agree over the intercomm gave 0x%x, not the remote group's 0x%x", flag,
        bits_of_alive(remote_from, remote_to));
  int acked = -1;
  CHECK(MPIX_Comm_ack_failed(inter, world_size, &acked) == MPI_SUCCESS, "ack_failed failed");
  CHECK(acked == victim_count, "ack_failed over the intercomm acknowledged %d, not %d", acked,
        victim_count);
  MPI_Group failed = MPI_GROUP_NULL;
  MPIX_Comm_get_failed(inter, &failed);
  int nfailed = -1;
  MPI_Group_size(failed, &nfailed);
  CHECK(nfailed == victim_count, "the intercomm's failed group has %d processes, not %d", nfailed,
        victim_count);
  MPI_Group_free(&failed);
  flag = ~(1 << (me % 31));
  err = MPIX_Comm_agree(inter, &flag);
  CHECK(err == MPI_SUCCESS, "agree over the intercomm after ack_failed returned %d", err);
  CHECK(flag == bits_of_alive(remote_from, remote_to), "the second agree gave 0x%x", flag);
  MPI_Comm s = MPI_COMM_NULL;
  err = MPIX_Comm_shrink(inter, &s);
  if (alive_in(remote_from, remote_to) == 0) {
    /* Nothing to shrink it to: an error, and no communicator. */
    MPI_Error_class(err, &cls);
    CHECK(cls == MPIX_ERR_PROC_FAILED && s == MPI_COMM_NULL,
          "shrinking an intercomm whose remote group all died returned %d", err);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    return;
  }
  CHECK(err == MPI_SUCCESS && s != MPI_COMM_NULL, "shrinking the intercomm failed");
  int is_inter = 0, size = -1, remote_size = -1, rank = -1;
  MPI_Comm_test_inter(s, &is_inter);
  MPI_Comm_size(s, &size);
  MPI_Comm_remote_size(s, &remote_size);
  MPI_Comm_rank(s, &rank);
  CHECK(is_inter, "the shrunk intercomm is not an intercommunicator");
  CHECK(size == alive_in(local_from, local_to) && remote_size == alive_in(remote_from, remote_to),
        "the shrunk intercomm has groups of %d and %d, not %d and %d", size, remote_size,
        alive_in(local_from, local_to), alive_in(remote_from, remote_to));
  CHECK(rank == alive_in(local_from, me), "rank %d in the shrunk intercomm, not %d", rank,
        alive_in(local_from, me));
  /* The leaders exchange their world ranks; everyone sums the remote group's. */
  int first_remote = remote_from;
  while (is_victim(first_remote)) ++first_remote;
  if (rank == 0) {
    int theirs = -1;
    CHECK(MPI_Sendrecv(&me, 1, MPI_INT, 0, 5, &theirs, 1, MPI_INT, 0, 5, s, MPI_STATUS_IGNORE) ==
              MPI_SUCCESS,
          "the leaders' exchange over the shrunk intercomm failed");
    CHECK(theirs == first_remote, "the remote leader is world rank %d, not %d", theirs,
          first_remote);
  }
  int sum = -1, want_sum = 0;
  for (int r = remote_from; r < remote_to; ++r) want_sum += is_victim(r) ? 0 : r;
  CHECK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, s) == MPI_SUCCESS,
        "an Allreduce over the shrunk intercomm failed");
  CHECK(sum == want_sum, "the shrunk intercomm's Allreduce gave %d, not %d", sum, want_sum);
  MPI_Request req = MPI_REQUEST_NULL;
  flag = ~(1 << (me % 31));
  CHECK(MPIX_Comm_iagree(s, &flag, &req) == MPI_SUCCESS, "iagree over the shrunk intercomm failed");
  CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "waiting for that iagree failed");
  CHECK(flag == bits_of_alive(remote_from, remote_to), "iagree over the shrunk intercomm gave 0x%x",
        flag);
  MPI_Comm_free(&s);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
}

/* A duplicate of the world that returns its errors, to revoke. */
static MPI_Comm revocable_world(void) {
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return c;
}

/* Revoked while its receiver reads the send buffer: rank 0 posts a 4 MiB
 * receive, rank 1 starts the send, revokes the communicator at once and
 * unmaps the buffer as soon as its send returns. A transport whose receiver
 * reads the sender's memory itself (ofi's RMA) must be done reading by then:
 * the send returns once the receiver says its read ended. Before, it
 * returned at once, the read met unmapped memory and the receiver waited
 * for it for ever. Both calls end with MPIX_ERR_REVOKED or success. */
void revoke_during_read(void) {
  const size_t bytes = (size_t)4 << 20;
  MPI_Comm c = revocable_world();
  MPI_Request req = MPI_REQUEST_NULL;
  int err = MPI_SUCCESS, cls = MPI_SUCCESS;
  if (me == 0) {
    char *in = malloc(bytes);
    CHECK(in != NULL, "no memory");
    CHECK(MPI_Irecv(in, (int)bytes, MPI_BYTE, 1, 5, c, &req) == MPI_SUCCESS, "Irecv failed");
    MPI_Barrier(MPI_COMM_WORLD);
    err = MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Error_class(err, &cls);
    CHECK(cls == MPIX_ERR_REVOKED || cls == MPI_SUCCESS,
          "a receive whose sender revoked returned class %d", cls);
    free(in);
  } else if (me == 1) {
    char *out = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(out != MAP_FAILED, "no memory");
    memset(out, 7, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Isend(out, (int)bytes, MPI_BYTE, 0, 5, c, &req) == MPI_SUCCESS, "Isend failed");
    CHECK(MPIX_Comm_revoke(c) == MPI_SUCCESS, "revoking a duplicate of the world failed");
    err = MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Error_class(err, &cls);
    CHECK(cls == MPIX_ERR_REVOKED || cls == MPI_SUCCESS,
          "a send revoked while its receiver read returned class %d", cls);
    munmap(out, bytes);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Comm_free(&c);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* A large message claimed by MPI_Mprobe, then its communicator revoked
 * before the MPI_Mrecv: the sender's wait ends without that receive (over
 * ofi its send waits for the receiver's answer: before, that came only with
 * the MPI_Mrecv, which here comes after the sender's wait, and both waited
 * for ever), and the MPI_Mrecv ends with MPIX_ERR_REVOKED, having read
 * nothing of the freed buffer. */
void revoke_after_mprobe(void) {
  const size_t bytes = (size_t)1 << 20;
  MPI_Comm c = revocable_world();
  int cls = MPI_SUCCESS;
  if (me == 0) {
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Status st;
    CHECK(MPI_Mprobe(1, 8, c, &msg, &st) == MPI_SUCCESS, "Mprobe failed");
    CHECK(MPIX_Comm_revoke(c) == MPI_SUCCESS, "revoking a duplicate of the world failed");
    MPI_Barrier(MPI_COMM_WORLD); /* after the sender's wait */
    char *in = malloc(bytes);
    CHECK(in != NULL, "no memory");
    memset(in, 0, bytes);
    MPI_Error_class(MPI_Mrecv(in, (int)bytes, MPI_BYTE, &msg, &st), &cls);
    CHECK(cls == MPIX_ERR_REVOKED, "an Mrecv after its communicator was revoked returned class %d",
          cls);
    CHECK(msg == MPI_MESSAGE_NULL, "the Mrecv left its message handle");
    CHECK(in[0] == 0 && in[bytes - 1] == 0, "the revoked Mrecv wrote into its buffer");
    free(in);
  } else if (me == 1) {
    char *out = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(out != MAP_FAILED, "no memory");
    memset(out, 9, bytes);
    MPI_Request req = MPI_REQUEST_NULL;
    CHECK(MPI_Isend(out, (int)bytes, MPI_BYTE, 0, 8, c, &req) == MPI_SUCCESS, "Isend failed");
    MPI_Error_class(MPI_Wait(&req, MPI_STATUS_IGNORE), &cls);
    CHECK(cls == MPIX_ERR_REVOKED || cls == MPI_SUCCESS,
          "a send whose message was claimed, then revoked, returned class %d", cls);
    munmap(out, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Comm_free(&c);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Revoked while the others are inside a collective: a duplicate of the
 * world per collective, revoked by the last rank instead of joining it; every
 * other rank's call ends (no hang) with MPIX_ERR_REVOKED, or with success
 * where it could finish without the revoker (a root-0 Bcast's other ranks,
 * a Gather's or Reduce's senders, a Scatter's receivers). The node segment's
 * collectives (recovery off) and, over two nodes, both levels; small and
 * large data; the nonblocking forms through MPI_Wait. */
void revoke_in_collectives(void) {
  enum { kinds = 12 };
  const int n = world_size, last = world_size - 1;
  const size_t large = 1 << 20;
  char *a = calloc(large * (size_t)n, 1), *b = calloc(large * (size_t)n, 1);
  CHECK(a != NULL && b != NULL, "no memory");
  for (int kind = 0; kind < kinds; ++kind) {
    MPI_Comm c = revocable_world();
    MPI_Barrier(c); /* its segment made, every rank in */
    int err = MPI_SUCCESS;
    MPI_Request req = MPI_REQUEST_NULL;
    if (me == last) {
      CHECK(MPIX_Comm_revoke(c) == MPI_SUCCESS, "revoking a duplicate of the world failed");
    } else {
      switch (kind) {
        case 0:
          err = MPI_Allreduce(a, b, 2, MPI_INT, MPI_SUM, c);
          break;
        case 1:
          err = MPI_Allreduce(a, b, (int)(large / 4), MPI_INT, MPI_SUM, c);
          break;
        case 2:
          err = MPI_Bcast(a, 8, MPI_BYTE, last, c);
          break;
        case 3:
          err = MPI_Bcast(a, (int)large, MPI_BYTE, 0, c);
          break;
        case 4:
          err = MPI_Barrier(c);
          break;
        case 5:
          err = MPI_Reduce(a, b, (int)(large / 4), MPI_INT, MPI_SUM, 0, c);
          break;
        case 6:
          err = MPI_Allgather(a, 8, MPI_BYTE, b, 8, MPI_BYTE, c);
          break;
        case 7:
          err = MPI_Alltoall(a, 64 << 10, MPI_BYTE, b, 64 << 10, MPI_BYTE, c);
          break;
        case 8:
          err = MPI_Gather(a, 8, MPI_BYTE, b, 8, MPI_BYTE, 0, c);
          break;
        case 9:
          err = MPI_Scatter(a, 8, MPI_BYTE, b, 8, MPI_BYTE, last, c);
          break;
        case 10:
          err = MPI_Iallreduce(a, b, 2, MPI_INT, MPI_SUM, c, &req);
          break;
        default:
          err = MPI_Ibcast(a, 8, MPI_BYTE, last, c, &req);
          break;
      }
      if (err == MPI_SUCCESS && req != MPI_REQUEST_NULL) err = MPI_Wait(&req, MPI_STATUS_IGNORE);
      int cls = err;
      MPI_Error_class(err, &cls);
      CHECK(cls == MPIX_ERR_REVOKED || cls == MPI_SUCCESS,
            "collective %d on a communicator revoked under it returned class %d", kind, cls);
      /* Those that must wait for the revoker cannot have succeeded. */
      CHECK(cls == MPIX_ERR_REVOKED || kind == 3 || kind == 5 || kind == 8,
            "collective %d succeeded without the rank that revoked instead", kind);
    }
    MPI_Comm_free(&c);
  }
  free(a);
  free(b);
  MPI_Barrier(MPI_COMM_WORLD);
}

int ulfm_more_failures(void) {
  return check_failures;
}
