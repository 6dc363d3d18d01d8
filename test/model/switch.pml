/* A pair's move from the shared receive queue to its own ring
 * (device/transport_shm.cpp, shm_queue_transport::send and poll).
 *
 * Sender 0 sends PACKETS packets to the receiver: the first BUSY through
 * the receiver's queue, then it takes a ring from the pool, announces it
 * with a record in the queue (behind every packet it queued) and sends the
 * rest through the ring; it may find the queue full at any point and try
 * again later. Sender 1 sends through the queue all along. The receiver
 * polls with a budget: at most BUDGET queue records, then every ring it has
 * attached, in any interleaving with the senders. Checked: each sender's
 * packets arrive in its order and none is lost, across the switch.
 *
 *   -DATTACH_EARLY  the receiver polls the ring as soon as the sender
 *                   took it, before the announcement is read: spin must
 *                   find a packet overtaking the queued ones.
 */
#define PACKETS 4
#define BUSY 2
#define BUDGET 1
#define ANNOUNCE 255

chan queue = [2] of { byte, byte };   /* (sender, packet number or ANNOUNCE) */
chan ring = [2] of { byte };          /* sender 0's ring */
bit taken = 0;                        /* sender 0 took its ring */

proctype sender0() {
  byte n = 0;
  do
  :: n < BUSY -> queue!0,n; n++
  :: n == BUSY && !taken -> taken = 1; queue!0,ANNOUNCE
  :: n >= BUSY && n < PACKETS && taken -> ring!n; n++
  :: n == PACKETS -> break
  od
}

proctype sender1() {
  byte n = 0;
  do
  :: n < PACKETS -> queue!1,n; n++
  :: n == PACKETS -> break
  od
}

active proctype receiver() {
  byte next[2], from, what, k;
  bit attached = 0;
  run sender0(); run sender1();
  do
  :: next[0] == PACKETS && next[1] == PACKETS -> break
  :: else ->
       /* drain_queue(BUDGET) */
       k = 0;
       do
       :: k < BUDGET && nempty(queue) ->
            queue?from,what;
            if
            :: what == ANNOUNCE -> assert(from == 0 && !attached); attached = 1
            :: else -> assert(what == next[from]); next[from]++
            fi;
            k++
       :: k == BUDGET || empty(queue) -> break
       od;
       /* then every attached ring */
#ifdef ATTACH_EARLY
       if :: taken -> attached = 1 :: else fi;
#endif
       do
       :: attached && nempty(ring) -> ring?what; assert(what == next[0]); next[0]++
       :: !attached || empty(ring) -> break
       od;
       /* nothing found: wait for something to arrive (the bell) */
       (nempty(queue) || (attached && nempty(ring)) ||
        (next[0] == PACKETS && next[1] == PACKETS))
  od
}
