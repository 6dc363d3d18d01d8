/* The doorbell pair of shm/bell.hpp and device/progress.cpp, on x86-TSO.
 *
 * Senders write a packet (a store that may sit in the sender's store
 * buffer), then read the receiver's bell with a plain load (only a compiler
 * barrier between: a load may pass an earlier store on x86) and wake it
 * only when it is marked asleep. The receiver marks its bell asleep, runs
 * the heavy fence (membarrier: every CPU running a registered process
 * drains its store buffer), polls once more and only then waits on the
 * futex. Property: no wake is lost. With it lost, the receiver sleeps
 * forever (no timeout here) while a packet waits: an invalid end state.
 *
 *   -DLIGHT_FENCE   the sleeper's fence drains only its own store buffer
 *                   (an mfence instead of membarrier): spin must find the
 *                   lost wake, which shows the model can fail.
 */
#define SENDERS 2
#define PACKETS 2            /* per sender */

byte visible = 0;            /* packets the receiver can see in its ring/queue */
byte buffered[SENDERS];      /* packet stores still in each sender's store buffer */
bit asleep = 0;              /* the bell word, in memory */
bit asleep_buffered = 0;     /* the receiver's store asleep=1 still in its buffer */
bit waiting = 0;             /* the receiver blocked in FUTEX_WAIT */
byte received = 0;

/* The store buffers drain into memory at any time, in order. */
active proctype memory() {
end:
  do
  :: atomic { asleep_buffered -> asleep_buffered = 0; asleep = 1 }
  :: atomic { buffered[0] > 0 -> buffered[0]--; visible++ }
  :: atomic { buffered[1] > 0 -> buffered[1]--; visible++ }
  od
}

inline drain_own(id) {
  atomic { visible = visible + buffered[id]; buffered[id] = 0 }
}

proctype sender(byte id) {
  byte n = 0;
  do
  :: n < PACKETS ->
       buffered[id]++;                 /* write the packet (ring commit) */
       /* bell_wake: compiler barrier, then a relaxed load that may pass
          the buffered store */
       if
       :: asleep == 1 ->
            /* bell_wake_slow: a locked exchange drains the buffer first */
            drain_own(id);
            atomic {
              if
              :: asleep == 1 -> asleep = 0; waiting = 0   /* FUTEX_WAKE */
              :: else -> skip
              fi
            }
       :: else -> skip
       fi;
       n++
  :: n == PACKETS -> break
  od
}

active proctype receiver() {
  byte i;
  run sender(0); run sender(1);
  do
  :: received == SENDERS * PACKETS -> break
  :: else ->
     if
     :: visible > 0 -> atomic { visible--; received++ }   /* a poll that found work */
     :: visible == 0 ->
          /* progress_sleep */
          asleep_buffered = 1;
#ifdef LIGHT_FENCE
          atomic { if :: asleep_buffered -> asleep_buffered = 0; asleep = 1 :: else fi }
#else
          atomic {    /* membarrier(GLOBAL_EXPEDITED): every buffer drains */
            if :: asleep_buffered -> asleep_buffered = 0; asleep = 1 :: else fi;
            for (i : 0 .. SENDERS - 1) { visible = visible + buffered[i]; buffered[i] = 0 }
          }
#endif
          if
          :: visible > 0 -> atomic { visible--; received++ }  /* the last poll */
          :: else ->
               /* FUTEX_WAIT(asleep, 1): sleeps only if still marked */
               atomic { if :: asleep == 1 -> waiting = 1 :: else fi };
               (waiting == 0)                                  /* woken */
          fi;
          asleep_buffered = 0; asleep = 0
     fi
  od;
  assert(received == SENDERS * PACKETS)
}
