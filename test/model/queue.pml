/* The bounded multi-producer queue of shm/queue.hpp, records of one or two
 * cells, under sequentially consistent interleavings (the C++ orderings
 * that make x86 and Arm behave so are argued in queue.hpp and exercised by
 * the seeded stress test under ThreadSanitizer; this model checks the
 * algorithm: claims by the last cell, one compare-and-swap of the tail,
 * continuation cells published by the first).
 *
 * Two producers push RECORDS records each, every one of a size chosen at
 * random, into a queue of CELLS cells; one consumer takes them. Checked:
 * every record arrives whole (each cell holds its own record's stamp: no
 * producer wrote over another's cells or over cells not yet consumed), the
 * records of a producer arrive in its order, none is lost (a lost or
 * stuck record blocks everybody: an invalid end state).
 *
 *   -DCLAIM_BY_FIRST  claim after checking the first cell instead of the
 *                     last: spin must find the overwrite, which shows the
 *                     model can fail.
 */
#define CELLS 4
#define RECORDS 3
#define PRODUCERS 2

byte tail = 0;
byte seq[CELLS];
byte stamp[CELLS];     /* producer * 16 + record number, in every cell */
byte length[CELLS];    /* cells of the record, in its first cell */

proctype producer(byte id) {
  byte r = 0, k, position, s, check;
  do
  :: r == RECORDS -> break
  :: r < RECORDS ->
     if :: k = 1 :: k = 2 fi;
     position = tail;
retry:
#ifdef CLAIM_BY_FIRST
     check = position;
#else
     check = position + k - 1;
#endif
     s = seq[check % CELLS];
     if
     :: s < check -> (seq[check % CELLS] != s); position = tail; goto retry  /* full: push fails, called again */
     :: s > check -> position = tail; goto retry             /* stale tail */
     :: s == check ->
          atomic {
            if
            :: tail == position -> tail = position + k
            :: else -> position = tail; goto retry           /* lost the race */
            fi
          }
     fi;
     /* fill: continuation cells first, marked full; the first cell last */
     if
     :: k == 2 ->
          stamp[(position + 1) % CELLS] = id * 16 + r;
          seq[(position + 1) % CELLS] = position + 2
     :: else -> skip
     fi;
     stamp[position % CELLS] = id * 16 + r;
     length[position % CELLS] = k;
     seq[position % CELLS] = position + 1;                   /* publish */
     r++
  od
}

active proctype consumer() {
  byte head = 0, k, i, got = 0, first;
  byte next[PRODUCERS];
  atomic { for (i : 0 .. CELLS - 1) { seq[i] = i }; run producer(0); run producer(1) };
  do
  :: got == PRODUCERS * RECORDS -> break
  :: else ->
       (seq[head % CELLS] == head + 1);                      /* peek: published */
       k = length[head % CELLS];
       first = stamp[head % CELLS];
       assert(k == 1 || k == 2);
       assert(first / 16 < PRODUCERS);
       assert(first % 16 == next[first / 16]);              /* the producer's order */
       next[first / 16]++;
       for (i : 1 .. k - 1) { assert(stamp[(head + i) % CELLS] == first) }
       for (i : 0 .. k - 1) { seq[(head + i) % CELLS] = head + i + CELLS }   /* consume */
       head = head + k;
       got++
  od;
  assert(tail == head)
}

