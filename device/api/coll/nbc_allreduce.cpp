// Allreduce by messages, as schedules shared by MPI_Iallreduce,
// MPI_Allreduce_init and MPI_Allreduce where it does not go through shared
// memory: recursive doubling for small data, Rabenseifner's reduce-scatter
// by recursive halving then allgather by recursive doubling for large data,
// or a ring. allreduce_pick chooses (IRIS_COLL_ALLREDUCE forces one).
//
// Every send is send_told: a rank that saw a count mismatch passes it on,
// so that it reaches every rank (MPICH's errors/coll/iallreducelength).
//
// Every rank ends with the same bits: recursive doubling has both partners
// of a step combine the same two operands in the same order, and the other
// two reduce each piece of the data on one rank only and then hand it out.
// Recursive doubling and halving combine blocks of consecutive ranks, the
// lower block on the left, so they serve non-commutative ops too; the ring
// does not (it folds each piece starting at a different rank).
#include <utility>
#include <vector>

#include "device/api/coll/nbc.hpp"
#include "device/datatypes/op.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::api::nbc {

namespace {

// The largest power of two not above `size`.
int power_below(int size) {
  int pof2 = 1;
  while (pof2 * 2 <= size) pof2 *= 2;
  return pof2;
}

// With a size that is not a power of two, the first 2 * rem ranks pair up
// (rem = size - pof2): the even one hands its data to the odd one, which
// carries the pair's part through the power-of-two algorithm as rank
// rank / 2 of it; the others are rank - rem there. Returns that rank, or -1
// for a rank that sits out.
int fold_in(schedule &s, const typed_buffer &acc, const typed_buffer &spare, MPI_Op op,
            MPI_Datatype type, int rem) {
  const int rank = s.group().rank;
  if (rank >= 2 * rem) return rank - rem;
  if (rank % 2 == 0) {
    s.send_told(acc, rank + 1);
    s.fence();
    return -1;
  }
  s.recv_exact(spare, rank - 1);
  s.fence();
  s.reduce(spare, acc, op, type);  // acc = the even rank's o this rank's
  return rank / 2;
}

// The rank behind rank `r` of the power-of-two algorithm.
int real_rank(int r, int rem) {
  return r < rem ? r * 2 + 1 : r + rem;
}

// The even ranks of fold_in get the result from their odd partner.
void fold_out(schedule &s, const typed_buffer &acc, const typed_buffer &out, int rem) {
  const int rank = s.group().rank;
  if (rank >= 2 * rem) return;
  if (rank % 2 == 1) {
    s.send_told(acc, rank - 1);
  } else {
    s.recv_exact(out, rank + 1);
  }
  s.fence();
}

// `mine` = lower o upper for a step with `peer`, where `theirs` holds what
// the peer sent: the peer's part is the lower one when its rank is. A
// commutative op folds into `mine` directly (each piece is reduced on one
// rank only, so the order changes no rank's bits relative to another's).
void fold_step(schedule &s, const typed_buffer &theirs, const typed_buffer &mine, bool peer_lower,
               MPI_Op op, MPI_Datatype type) {
  if (peer_lower || device::op_commutative(op)) {
    s.reduce(theirs, mine, op, type);
    return;
  }
  s.reduce(mine, theirs, op, type);  // theirs = mine o theirs
  s.copy(theirs, mine);
}

// Recursive doubling: in round k each rank exchanges its partial result with
// rank ^ 2^k and both combine the two, the lower ranks' on the left.
void doubling(schedule &s, const typed_buffer &out, MPI_Op op, MPI_Datatype type) {
  const communicator &c = s.group();
  const int pof2 = power_below(c.size);
  const int rem = c.size - pof2;
  typed_buffer acc = out;
  typed_buffer spare = s.scratch(out.count, *out.type);
  const int newrank = fold_in(s, acc, spare, op, type, rem);
  for (int mask = 1; newrank >= 0 && mask < pof2; mask <<= 1) {
    const int peer = real_rank(newrank ^ mask, rem);
    s.recv_exact(spare, peer);
    s.send_told(acc, peer);
    s.fence();
    if (peer < c.rank) {
      s.reduce(spare, acc, op, type);  // acc = spare o acc
    } else {
      s.reduce(acc, spare, op, type);  // spare = acc o spare: the result moves
      std::swap(acc, spare);
    }
  }
  if (newrank >= 0 && acc.base != out.base) s.copy(acc, out);
  fold_out(s, out, out, rem);
}

// Rabenseifner: the data is cut into pof2 pieces. Reduce-scatter by
// recursive halving: in the round with rank ^ mask (mask = 1, 2, ...) each
// rank keeps half of the pieces it holds (the lower half if its bit is 0),
// sends the other half to the peer and folds in the peer's half of its own.
// Then each rank holds one piece reduced over all ranks, and the rounds run
// backwards as an allgather: the halves go back and forth whole.
void halving(schedule &s, const typed_buffer &out, MPI_Op op, MPI_Datatype type) {
  const communicator &c = s.group();
  const int pof2 = power_below(c.size);
  const int rem = c.size - pof2;
  typed_buffer spare = s.scratch(out.count, *out.type);
  const int newrank = fold_in(s, out, spare, op, type, rem);
  // Piece i starts at element first(i); the last piece ends at the count.
  const int each = out.count / pof2;
  const int extra = out.count % pof2;
  const auto first = [each, extra](int piece) { return piece * each + std::min(piece, extra); };
  const auto pieces = [&](const typed_buffer &b, int lo, int hi) {
    return b.slice(first(lo), first(hi) - first(lo));
  };
  struct held {
    int lo, hi;  // the pieces held before the round
  };
  std::vector<held> rounds;
  int lo = 0;
  int hi = pof2;
  for (int mask = 1; newrank >= 0 && mask < pof2; mask <<= 1) {
    const int peer = real_rank(newrank ^ mask, rem);
    const int mid = lo + (hi - lo) / 2;
    const bool lower = (newrank & mask) == 0;
    const int keep_lo = lower ? lo : mid;
    const int keep_hi = lower ? mid : hi;
    const int give_lo = lower ? mid : lo;
    const int give_hi = lower ? hi : mid;
    s.recv_exact(pieces(spare, keep_lo, keep_hi), peer);
    s.send_told(pieces(out, give_lo, give_hi), peer);
    s.fence();
    fold_step(s, pieces(spare, keep_lo, keep_hi), pieces(out, keep_lo, keep_hi), peer < c.rank, op,
              type);
    rounds.push_back({lo, hi});
    lo = keep_lo;
    hi = keep_hi;
  }
  for (int mask = pof2 / 2; newrank >= 0 && mask >= 1; mask >>= 1) {
    const int peer = real_rank(newrank ^ mask, rem);
    const held before = rounds.back();
    rounds.pop_back();
    // The peer holds the other half of what this rank held before.
    const int other_lo = lo == before.lo ? hi : before.lo;
    const int other_hi = lo == before.lo ? before.hi : lo;
    s.recv_exact(pieces(out, other_lo, other_hi), peer);
    s.send_told(pieces(out, lo, hi), peer);
    s.fence();
    lo = before.lo;
    hi = before.hi;
  }
  fold_out(s, out, out, rem);
}

// Ring (commutative ops): the data is cut into `size` pieces. In size - 1
// rounds each rank sends a piece to rank + 1 and folds the one from
// rank - 1 into its own, so that piece rank + 1 ends reduced over all ranks
// here; in size - 1 more rounds the reduced pieces go round.
void ring(schedule &s, const typed_buffer &out, MPI_Op op, MPI_Datatype type) {
  const communicator &c = s.group();
  const int n = c.size;
  const int each = out.count / n;
  const int extra = out.count % n;
  const auto piece = [&](const typed_buffer &b, int i) {
    i = ((i % n) + n) % n;
    return b.slice(i * each + std::min(i, extra), each + (i < extra ? 1 : 0));
  };
  const int next = (c.rank + 1) % n;
  const int prev = (c.rank - 1 + n) % n;
  const typed_buffer spare = s.scratch(each + 1, *out.type);
  for (int k = 0; k < n - 1; ++k) {
    typed_buffer in = piece(out, c.rank - k - 1);
    const typed_buffer landing = spare.slice(0, in.count);
    s.recv_exact(landing, prev);
    s.send_told(piece(out, c.rank - k), next);
    s.fence();
    s.reduce(landing, in, op, type);
  }
  for (int k = 0; k < n - 1; ++k) {
    s.recv_exact(piece(out, c.rank - k), prev);
    s.send_told(piece(out, c.rank + 1 - k), next);
    s.fence();
  }
}

}  // namespace

allreduce_algorithm allreduce_pick(const communicator &c, int count, const device::dtype &type,
                                   MPI_Op op) {
  auto chosen = static_cast<allreduce_algorithm>(device::rt->config.coll_allreduce);
  if (chosen == allreduce_algorithm::automatic) {
    const std::size_t bytes = static_cast<std::size_t>(count) * type.packed_size;
    chosen = bytes < allreduce_large ? allreduce_algorithm::doubling : allreduce_algorithm::halving;
  }
  if (chosen == allreduce_algorithm::ring && !device::op_commutative(op)) {
    chosen = allreduce_algorithm::halving;
  }
  if (chosen == allreduce_algorithm::halving && count < power_below(c.size)) {
    chosen = allreduce_algorithm::doubling;
  }
  return chosen;
}

void allreduce_schedule(schedule &s, const typed_buffer &in, const typed_buffer &out, MPI_Op op,
                        MPI_Datatype type, allreduce_algorithm how) {
  if (out.count == 0) return;
  if (in.base != out.base) s.copy(in, out);
  if (s.group().size == 1) return;
  switch (how) {
    case allreduce_algorithm::halving:
      halving(s, out, op, type);
      break;
    case allreduce_algorithm::ring:
      ring(s, out, op, type);
      break;
    default:
      doubling(s, out, op, type);
      break;
  }
}

}  // namespace iris::api::nbc
