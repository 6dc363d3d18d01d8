#include "device/protocols/recovery.hpp"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "device/am/am.hpp"
#include "device/core/transport.hpp"
#include "device/protocols/credit.hpp"
#include "device/protocols/rendezvous.hpp"
#include "device/protocols/send.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"
#include "include/mpi.h"

namespace iris::device {
namespace {

// The steps of a recovery packet (packet_header::tag); `context` names the
// communicator (its point-to-point context), `source` is the sender's rank
// there, and `sender_request` the agreement's number.
enum step : std::int32_t {
  step_revoke = 1,
  step_contribute = 2,  // an agreement's contribution, to the coordinator
  step_query = 3,       // a new coordinator asks for contributions or the decision
  step_decide = 4,      // the decision
};

// A packet that found its transport full, written at a later pass.
struct pending_packet {
  int to;
  packet_header h;
  std::vector<std::byte> body;
};

// The agreements of one communicator, one at a time.
struct agree_state {
  std::uint32_t seq = 0;  // the number of the one under way, or of the last
  bool active = false;
  agreement mine;
  std::map<int, agreement> got;     // contributions to seq, by rank (at the coordinator)
  std::map<int, agreement> early;   // contributions to seq + 1 that came before it began
  std::optional<agreement> answer;  // the decision of seq, when it came
  std::uint32_t decided_seq = 0;    // the last decided here (0: none), kept for late queries
  agreement decided;
  // Failures known here (recovery_state::order) at this rank's last step.
  std::size_t failures_seen = 0;
};

struct recovery_globals {
  std::vector<pending_packet> outbox;
  std::vector<std::shared_ptr<agreement_run>> running;  // nonblocking agreements
  std::map<std::uint32_t, agree_state> agreements;      // by the communicator's context
  // Contexts whose revocation came before this process had made their
  // communicator (recovery_comm_made revokes it then). A context is never
  // used twice by one process (each agreed context is above every member's
  // next_context), so one left by a communicator freed here already never
  // revokes another.
  std::set<std::uint32_t> revoked_early;
  // Every context of each communicator revoked here (its point-to-point and
  // collective ones, an intercommunicator's local ones too): an RTS on one
  // is answered at once (recovery_refuses), as no receive will take it.
  std::set<std::uint32_t> revoked_contexts;
  // Both groups of an intercommunicator as one, for its agreements
  // (recovery_union), by its point-to-point context.
  std::map<std::uint32_t, std::unique_ptr<communicator>> unions;
};
std::unique_ptr<recovery_globals> globals;
// Where another thread's reports go (recovery_report), between
// recovery_start and recovery_stop.
std::atomic<recovery_state *> reports_to{nullptr};
std::atomic<int> reports_self{-1};
// The transport this rank sleeps on (rt->sleeper, fixed at MPI_Init), woken
// by a report so that a sleeping rank hears of a death at once.
std::atomic<transport *> reports_wake{nullptr};

bool is_failed(int w) {
  const auto &failed = rt->recovery.failed;
  return w >= 0 && static_cast<std::size_t>(w) < failed.size() && failed[w] != 0;
}

// The world rank of rank `rank` of `comm` on `context` (an
// intercommunicator's local contexts name its local group).
int world_of(const communicator &comm, std::uint32_t context, int rank) {
  const bool local =
      comm.inter && (context == comm.local_context || context == comm.local_context + 1);
  const std::vector<int> &ranks = local ? comm.local_world_rank : comm.world_rank;
  return rank >= 0 && static_cast<std::size_t>(rank) < ranks.size() ? ranks[rank] : -1;
}

bool is_collective(const communicator &comm, std::uint32_t context) {
  return context == comm.collective_context() || (comm.inter && context == comm.local_context + 1);
}

// Whether `comm` is revoked: it, or the communicator it is a level of (a
// hierarchy's node and leader levels share their communicator's handle and
// context and are not registered: revocations name the registered one).
bool revoked(const communicator &comm) {
  if (comm.revoked) return true;
  const communicator *named = comm_lookup(comm.handle);
  return named != nullptr && named != &comm && named->context == comm.context && named->revoked;
}

// Every process of `comm`, both groups of an intercommunicator.
template <typename Fn>
void each_member(const communicator &comm, Fn fn) {
  for (int w : comm.world_rank) fn(w);
  if (comm.inter) {
    for (int w : comm.local_world_rank) fn(w);
  }
}

bool holds_failure(const communicator &comm) {
  const auto &order = rt->recovery.order;
  for (; comm.failures_looked < order.size() && !comm.failed_member; ++comm.failures_looked) {
    each_member(comm, [&](int w) {
      comm.failed_member = comm.failed_member || w == order[comm.failures_looked];
    });
  }
  return comm.failed_member;
}

// Writes the packet now, or after what waits before it.
void send_packet(int to, packet_header h, const std::byte *body, std::size_t bytes) {
  if (is_failed(to) || to == rt->rank) return;
  h.type = packet_type::recovery;
  h.length = bytes;
  if (globals->outbox.empty() &&
      packet_write(rt->vcs[static_cast<std::size_t>(to)], h, body, bytes)) {
    return;
  }
  globals->outbox.push_back({to, h, std::vector<std::byte>(body, body + bytes)});
  rt->recovery.outbox = true;
}

int flush_outbox() {
  auto &box = globals->outbox;
  std::size_t sent = 0;
  for (; sent < box.size(); ++sent) {
    pending_packet &p = box[sent];
    if (is_failed(p.to)) continue;
    if (!packet_write(rt->vcs[static_cast<std::size_t>(p.to)], p.h, p.body.data(), p.body.size())) {
      break;
    }
  }
  box.erase(box.begin(), box.begin() + static_cast<std::ptrdiff_t>(sent));
  rt->recovery.outbox = !box.empty();
  return static_cast<int>(sent);
}

// The error class a failure of world rank `w` ends pending request `r`
// with, or 0 when it does not touch it.
int touched_by(const request &r, int w) {
  if (r.complete || r.ext != nullptr || r.comm == nullptr || r.kind == request_kind::coll) return 0;
  if (r.persistent.op != persistent_op::none && !r.active) return 0;
  if (r.peer == w) return MPI_ERR_PROC_FAILED;
  if (r.kind == request_kind::recv && r.peer < 0 && r.key.source != any_source &&
      world_of(*r.comm, r.key.context, r.key.source) == w) {
    return MPI_ERR_PROC_FAILED;
  }
  if (is_collective(*r.comm, r.key.context)) {
    bool member = false;
    each_member(*r.comm, [&](int m) { member = member || m == w; });
    if (member) return MPI_ERR_PROC_FAILED;
  }
  return 0;
}

void failure_known(int w) {
  auto &state = rt->recovery;
  state.failed[static_cast<std::size_t>(w)] = 1;
  state.order.push_back(w);
  rt->troubled = true;
  if (rt->config.debug) {
    std::fprintf(stderr,
                 "iris: rank %d: rank %d died; what involves it ends with "
                 "MPIX_ERR_PROC_FAILED\n",
                 rt->rank, w);
  }
  rt->requests.each_live([&](request &r) {
    if (const int err = touched_by(r, w)) recovery_fail(r, err);
  });
  // Control packets that waited for room at it never will have it.
  vc &gone = rt->vcs[static_cast<std::size_t>(w)];
  gone.backlog.clear();
  if (gone.via != nullptr) gone.via->peer_gone(gone);
  am_peer_failed(w);
}

// Rank w (world) is dead by another rank's word (a coordinator's query, a
// decision): marked here as if the launcher had said so.
void known_dead(int w) {
  const auto i = static_cast<std::size_t>(w);
  if (rt->recovery.failed[i] != 0) return;
  rt->recovery.reported[i].store(true);
  failure_known(w);
}

// The ranks of `c` an agreed value names dead are dead here too.
void known_dead(const communicator &c, const agreement &a) {
  for (int r = 0; r < c.size; ++r) {
    if (a.has_failed(r)) known_dead(c.world_rank[static_cast<std::size_t>(r)]);
  }
}

int step_running();

int recovery_poll() {
  auto &state = rt->recovery;
  int events = 0;
  const int notices = state.notices.load(std::memory_order_acquire);
  if (notices != state.seen) [[unlikely]] {
    state.seen = notices;
    for (std::size_t w = 0; w < state.failed.size(); ++w) {
      if (state.failed[w] == 0 && state.reported[w].load(std::memory_order_relaxed)) {
        failure_known(static_cast<int>(w));
        ++events;
      }
    }
  }
  if (!globals->outbox.empty()) events += flush_outbox();
  if (rt->recovery.running) events += step_running();
  return events;
}

// Agreements: the wire form of a value (flag, context, second flag, 4
// bytes of zeros, the failed ranks' words), and its combination.
constexpr std::size_t value_head = 16;

std::vector<std::byte> encode(const agreement &a) {
  std::vector<std::byte> out(value_head + 8 * a.failed.size());
  std::memcpy(out.data(), &a.flag, 4);
  std::memcpy(out.data() + 4, &a.context, 4);
  std::memcpy(out.data() + 8, &a.second_flag, 4);
  if (!a.failed.empty()) {
    std::memcpy(out.data() + value_head, a.failed.data(), 8 * a.failed.size());
  }
  return out;
}

std::size_t words_of(const communicator &c) {
  return (static_cast<std::size_t>(c.size) + 63) / 64;
}

bool decode(const std::byte *p, std::size_t bytes, agreement &a) {
  if (bytes < value_head || bytes % 8 != 0) return false;
  std::memcpy(&a.flag, p, 4);
  std::memcpy(&a.context, p + 4, 4);
  std::memcpy(&a.second_flag, p + 8, 4);
  a.failed.assign((bytes - value_head) / 8, 0);
  if (!a.failed.empty()) std::memcpy(a.failed.data(), p + value_head, 8 * a.failed.size());
  return true;
}

void combine(agreement &into, const agreement &a) {
  into.flag &= a.flag;
  into.second_flag &= a.second_flag;
  into.context = std::max(into.context, a.context);
  for (std::size_t i = 0; i < into.failed.size() && i < a.failed.size(); ++i) {
    into.failed[i] |= a.failed[i];
  }
}

void send_value(const communicator &c, int to_rank, step s, std::uint32_t seq, const agreement &a) {
  packet_header h{};
  h.tag = s;
  h.context = c.context;
  h.source = c.rank;
  h.sender_request = seq;
  const std::vector<std::byte> body = encode(a);
  send_packet(c.world_rank[static_cast<std::size_t>(to_rank)], h, body.data(), body.size());
}

// Fault injection for the tests (test/mpi/ulfm.c): with
// IRIS_RECOVERY_DIE_DECIDING=N in its environment (the program sets it
// when it wants), a coordinator kills itself with SIGKILL once it has sent
// its decision to N ranks (0: to none). -1 when unset.
int dies_deciding() {
  const char *text = std::getenv("IRIS_RECOVERY_DIE_DECIDING");
  return text != nullptr && *text != '\0' ? std::atoi(text) : -1;
}

int lowest_alive(const communicator &c) {
  for (int r = 0; r < c.size; ++r) {
    if (!is_failed(c.world_rank[static_cast<std::size_t>(r)])) return r;
  }
  return c.rank;
}

bool all_in(const communicator &c, const agree_state &st) {
  for (int r = 0; r < c.size; ++r) {
    if (!is_failed(c.world_rank[static_cast<std::size_t>(r)]) && st.got.count(r) == 0) return false;
  }
  return true;
}

// `c` is nullptr when the communicator is not made here yet (a rank that
// left MPIX_Comm_shrink first may already agree on the new one): its
// contributions wait for the agreement.
const char *on_agreement(const communicator *c, const packet_header &h, const std::byte *payload) {
  if (c != nullptr && (h.source < 0 || h.source >= c->size)) {
    return "recovery packet from a rank outside its communicator";
  }
  agree_state &st = globals->agreements[h.context];
  const auto seq = static_cast<std::uint32_t>(h.sender_request);
  const bool decided = st.decided_seq != 0 && seq == st.decided_seq;
  if (h.tag == step_query) {
    if (h.length != 0) return "recovery query with a payload";
    if (c == nullptr) return nullptr;
    // Only a coordinator queries: every rank below it is dead (the
    // launcher's word is the truth), so a decision one of them sent still
    // on its way here must not count (deliver_troubled drops it).
    for (int r = 0; r < h.source; ++r) known_dead(c->world_rank[static_cast<std::size_t>(r)]);
    if (decided) {
      send_value(*c, h.source, step_decide, seq, st.decided);
    } else if (st.active && seq == st.seq) {
      // A decision that came already is the one: the new coordinator takes it.
      send_value(*c, h.source, st.answer ? step_decide : step_contribute, seq,
                 st.answer ? *st.answer : st.mine);
    }
    return nullptr;
  }
  agreement a;
  if (!decode(payload, h.length, a) || (c != nullptr && a.failed.size() != words_of(*c))) {
    return "recovery packet of the wrong length";
  }
  if (h.tag == step_decide) {
    if (st.active && seq == st.seq) st.answer = std::move(a);
    return nullptr;
  }
  if (h.tag != step_contribute) return "recovery packet of an unknown step";
  // Whom the contributor knows dead is dead (its launcher's word is the
  // truth): over an intercommunicator with another job, only that job's
  // launcher tells of its processes, and a coordinator waiting for every
  // member it thinks alive would wait for ever for one that never
  // connected here.
  if (c != nullptr) known_dead(*c, a);
  if (c != nullptr && decided && !(st.active && seq == st.seq)) {
    send_value(*c, h.source, step_decide, seq, st.decided);
  } else if (c != nullptr && st.active && seq == st.seq && st.answer) {
    send_value(*c, h.source, step_decide, seq, *st.answer);
  } else if (st.active && seq == st.seq) {
    st.got[h.source] = std::move(a);
  } else if (seq == st.seq + 1) {
    st.early[h.source] = std::move(a);
  }
  return nullptr;
}

}  // namespace

void recovery_start() {
  auto &state = rt->recovery;
  // Every VC this process may have: the world's and those reserved for
  // processes of other jobs (MPI_Comm_connect/accept, spawn), whose deaths
  // the netmod reports as it does the world's.
  const std::size_t vcs = rt->vcs.capacity();
  state.reported.reset(new std::atomic<bool>[vcs]);
  for (std::size_t i = 0; i < vcs; ++i) state.reported[i].store(false);
  state.failed.assign(vcs, 0);
  globals = std::make_unique<recovery_globals>();
  reports_self.store(rt->rank, std::memory_order_relaxed);
  reports_to.store(&state, std::memory_order_release);
}

void recovery_sleeper(transport *t) {
  reports_wake.store(t, std::memory_order_release);
  progress_added.recovery = rt->config.recovery ? recovery_poll : nullptr;
}

bool recovery_idle() {
  return globals == nullptr || globals->outbox.empty();
}

void recovery_stop() {
  reports_wake.store(nullptr, std::memory_order_release);
  reports_to.store(nullptr, std::memory_order_release);
  progress_added.recovery = nullptr;
  globals.reset();
}

void recovery_report(int w, const char *why) {
  recovery_state *state = reports_to.load(std::memory_order_acquire);
  const int self = reports_self.load(std::memory_order_relaxed);
  if (state == nullptr || w < 0 || static_cast<std::size_t>(w) >= state->failed.size() ||
      w == self) {
    return;
  }
  if (state->reported[static_cast<std::size_t>(w)].exchange(true)) return;
  if (const char *debug = std::getenv("IRIS_DEBUG"); debug != nullptr && debug[0] == '1') {
    std::fprintf(stderr, "iris: rank %d: rank %d is dead: %s\n", self, w, why);
  }
  state->notices.fetch_add(1, std::memory_order_release);
  if (transport *t = reports_wake.load(std::memory_order_acquire)) t->wake_self();
}

bool recovery_refuses(vc &from, const packet_header &h) {
  if (h.type != packet_type::rts || !globals->revoked_contexts.contains(h.context)) return false;
  rendezvous_refuse(from, h.sender_request);
  return true;
}

bool recovery_revoked(const communicator &comm) {
  return revoked(comm);
}

bool recovery_failed(int w) {
  return is_failed(w);
}

bool recovery_comm_failed(const communicator &comm) {
  return holds_failure(comm);
}

int recovery_refusal(const communicator &comm, std::uint32_t context, int peer) {
  if (revoked(comm)) return MPI_ERR_REVOKED;
  if (peer >= 0 && is_failed(world_of(comm, context, peer))) return MPI_ERR_PROC_FAILED;
  if (is_collective(comm, context) && holds_failure(comm)) return MPI_ERR_PROC_FAILED;
  return 0;
}

void recovery_fail(request &r, int error_class) {
  r.cancel_pending = false;
  r.status_error = error_class;
  r.status_bytes = 0;
  if (r.kind == request_kind::recv) {
    if (r.peer < 0) {
      rt->matching.withdraw(&r);
    } else {
      vc &from = rt->vcs[static_cast<std::size_t>(r.peer)];
      from.streaming_aside.remove(&r);
    }
    if (r.piped) {
      --rt->pipeline_receives;
      r.piped = false;
    }
    // A transport still reads into its buffer: it completes when the read
    // ends (rendezvous_read_done) or the placed packet is delivered
    // (rendezvous_on_data), so the buffer is the user's again then.
    if (r.reading || (r.placing && !is_failed(r.peer))) return;
    request_complete(r);
    return;
  }
  if (r.peer >= 0) {
    vc &to = rt->vcs[static_cast<std::size_t>(r.peer)];
    // A revoked rendezvous send whose receiver may be reading its buffer
    // through the transport (a netmod's RMA) ends when the receiver
    // answers: the program may free the buffer once it returns, and a read
    // of freed memory never ends over some providers. The receiver answers
    // every RTS of a revoked communicator (rendezvous_refuse), and a death
    // of the receiver ends it here with MPI_ERR_PROC_FAILED.
    if (error_class == MPI_ERR_REVOKED && r.protocol == packet_type::rts &&
        r.state == send_state::wait_reply && r.exposure.exposed) {
      return;
    }
    if (r.state == send_state::queued) {
      to.send_queue.remove(&r);
      to.queued_sends.add(-1);
      if (r.protocol != packet_type::rts) credit_refund(to, r.bytes);  // never spent
    } else if (r.state == send_state::streaming) {
      if (!r.stream_aside) to.stream_queue.remove(&r);
      to.stream_turn = 0;
    }
  }
  send_done(r);
}

bool recovery_blocks(const request &r) {
  if (r.kind != request_kind::recv || r.complete || r.peer >= 0 || r.key.source != any_source ||
      r.comm == nullptr || is_collective(*r.comm, r.key.context)) {
    return false;
  }
  const auto &order = rt->recovery.order;
  for (std::size_t i = r.comm->acked; i < order.size(); ++i) {
    bool member = false;
    each_member(*r.comm, [&](int m) { member = member || m == order[i]; });
    if (member) return true;
  }
  return false;
}

void agreement::add_failed(const communicator &c) {
  failed.resize(words_of(c), 0);
  for (int r : comm_failed_ranks(c)) failed[static_cast<std::size_t>(r) / 64] |= 1ULL << (r % 64);
}

std::vector<int> comm_failed_ranks(const communicator &c) {
  std::vector<int> out;
  for (int r = 0; r < c.size; ++r) {
    if (is_failed(c.world_rank[static_cast<std::size_t>(r)])) out.push_back(r);
  }
  return out;
}

std::vector<int> comm_acked_ranks(const communicator &c) {
  std::vector<int> out;
  const auto &order = rt->recovery.order;
  for (int r = 0; r < c.size; ++r) {
    const int w = c.world_rank[static_cast<std::size_t>(r)];
    if (std::find(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(c.acked), w) !=
        order.begin() + static_cast<std::ptrdiff_t>(c.acked)) {
      out.push_back(r);
    }
  }
  return out;
}

int comm_ack(communicator &c) {
  c.acked = rt->recovery.order.size();
  return static_cast<int>(comm_acked_ranks(c).size());
}

void recovery_comm_made(communicator &c) {
  if (globals == nullptr || globals->revoked_early.empty()) [[likely]] {
    return;
  }
  if (globals->revoked_early.erase(c.context) != 0) comm_revoke(c);
}

void comm_revoke(communicator &c) {
  if (c.revoked) return;
  progress_added.recovery = recovery_poll;  // its packets may wait for room
  c.revoked = true;
  rt->troubled = true;
  packet_header h{};
  h.tag = step_revoke;
  h.context = c.context;
  h.source = c.rank;
  each_member(c, [&](int w) { send_packet(w, h, nullptr, 0); });
  // The RTSs waiting here on its contexts are answered: their senders hold
  // their buffers until then (recovery_fail). Eager messages stay, as
  // before (their bytes are the matcher's).
  auto &contexts = globals->revoked_contexts;
  contexts.insert({c.context, c.collective_context()});
  if (c.inter) contexts.insert({c.local_context, c.local_context + 1});
  auto waiting_rts = [&](const unexpected_msg &u) {
    return u.type == packet_type::rts && contexts.contains(u.key.context);
  };
  while (unexpected_msg *m = rt->matching.take_if(waiting_rts)) {
    rendezvous_refuse(rt->vcs[static_cast<std::size_t>(m->from)], m->sender_request);
    rt->matching.release(m);
  }
  // So are those an MPI_Mprobe claimed: its MPI_Mrecv, if it comes, then
  // reads nothing (recv_claimed). Before, an Mrecv that never came kept
  // the sender waiting over ofi.
  rt->matching.each_claimed([&](unexpected_msg &m) {
    if (!waiting_rts(m) || m.refused) return;
    rendezvous_refuse(rt->vcs[static_cast<std::size_t>(m.from)], m.sender_request);
    m.refused = true;
  });
  rt->requests.each_live([&](request &r) {
    if (r.comm != nullptr && (r.comm == &c || r.comm->context == c.context) && !r.complete &&
        r.ext == nullptr && r.kind != request_kind::coll &&
        (r.persistent.op == persistent_op::none || r.active)) {
      recovery_fail(r, MPI_ERR_REVOKED);
    }
  });
}

namespace {

bool agreement_begin(communicator &c, const agreement &value) {
  progress_added.recovery = recovery_poll;  // its packets may wait for room
  agree_state &st = globals->agreements[c.context];
  if (st.active) return false;
  ++st.seq;
  st.active = true;
  st.mine = value;
  st.mine.add_failed(c);
  st.got = std::move(st.early);
  st.early.clear();
  st.answer.reset();
  st.failures_seen = rt->recovery.order.size();
  return true;
}

// The decision is in st.answer: it becomes `value`, and the last decided.
void agreement_end(communicator &c, agree_state &st, agreement &value) {
  value = *st.answer;
  // What the decision says is dead, is dead here too (MPIX_Comm_get_failed
  // agrees with a shrink's result even before the launcher's word comes).
  known_dead(c, value);
  st.active = false;
  st.decided_seq = st.seq;
  st.decided = value;
  st.got.clear();
  st.answer.reset();
}

bool agreement_step(communicator &c, int &coordinator, agreement &value) {
  agree_state &st = globals->agreements[c.context];
  const int lowest = lowest_alive(c);
  // A decision came (maybe from a coordinator that died since): it is the
  // one, whoever coordinates now; only a new coordinator still passes it
  // on to all.
  if (st.answer && lowest != c.rank) {
    agreement_end(c, st, value);
    return true;
  }
  const std::size_t failures = rt->recovery.order.size();
  const bool news = failures != st.failures_seen;
  st.failures_seen = failures;
  if (lowest == coordinator && coordinator != c.rank && news) {
    // A failure became known here since this rank contributed: the
    // coordinator may not know it (of a process of another job only that
    // job's launcher tells), so the contribution goes again with it.
    st.mine.add_failed(c);
    send_value(c, coordinator, step_contribute, st.seq, st.mine);
  }
  if (lowest != coordinator) {
    coordinator = lowest;
    if (coordinator == c.rank) {
      st.got[c.rank] = st.mine;
      // A lower rank died: it may have decided, and told some, already.
      if (c.rank != 0) {
        packet_header h{};
        h.tag = step_query;
        h.context = c.context;
        h.source = c.rank;
        h.sender_request = st.seq;
        for (int r = 0; r < c.size; ++r) {
          if (r != c.rank) send_packet(c.world_rank[static_cast<std::size_t>(r)], h, nullptr, 0);
        }
      }
    } else {
      send_value(c, coordinator, step_contribute, st.seq, st.mine);
    }
  }
  if (coordinator != c.rank || !(st.answer || all_in(c, st))) return false;
  agreement result = st.mine;
  if (st.answer) {
    result = *st.answer;
  } else {
    for (const auto &[rank, a] : st.got) combine(result, a);
    result.add_failed(c);
  }
  const int die_after = dies_deciding();
  int told = 0;
  for (int r = 0; r < c.size; ++r) {
    if (told == die_after) std::raise(SIGKILL);
    if (r != c.rank && !is_failed(c.world_rank[static_cast<std::size_t>(r)])) {
      send_value(c, r, step_decide, st.seq, result);
      ++told;
    }
  }
  st.answer = result;
  agreement_end(c, st, value);
  return true;
}

// The nonblocking agreements' steps, at each progress pass while any runs.
int step_running() {
  auto &running = globals->running;
  int done = 0;
  for (std::size_t i = 0; i < running.size(); ++i) {
    agreement_run &run = *running[i];
    if (agreement_step(*run.comm, run.coordinator, run.value)) {
      run.done = true;
      ++done;
    }
  }
  std::erase_if(running, [](const auto &run) { return run->done; });
  rt->recovery.running = !running.empty();
  return done;
}

}  // namespace

std::shared_ptr<agreement_run> agreement_start(communicator &c, const agreement &value) {
  if (!agreement_begin(c, value)) return nullptr;
  auto run = std::make_shared<agreement_run>();
  run->comm = &c;
  run->value = value;
  globals->running.push_back(run);
  rt->recovery.running = true;
  return run;
}

bool recovery_agree(communicator &c, agreement &value) {
  if (!agreement_begin(c, value)) return false;
  agree_state &st = globals->agreements[c.context];
  int coordinator = -1;
  while (!agreement_step(c, coordinator, value)) {
    progress_until([&] {
      return st.answer.has_value() || lowest_alive(c) != coordinator ||
             (coordinator == c.rank && all_in(c, st)) ||
             rt->recovery.order.size() != st.failures_seen;
    });
  }
  return true;
}

bool recovery_first_group(const communicator &c) {
  return !c.inter || c.local_first();
}

int recovery_local_start(const communicator &c) {
  return recovery_first_group(c) ? 0 : c.size;  // after the remote group
}

communicator &recovery_union(communicator &c) {
  if (!c.inter) return c;
  std::unique_ptr<communicator> &u = globals->unions[c.context];
  if (!u) {
    u = std::make_unique<communicator>();
    const bool first = recovery_first_group(c);
    const std::vector<int> &low = first ? c.local_world_rank : c.world_rank;
    const std::vector<int> &high = first ? c.world_rank : c.local_world_rank;
    u->world_rank = low;
    u->world_rank.insert(u->world_rank.end(), high.begin(), high.end());
    u->size = static_cast<int>(u->world_rank.size());
    u->rank = recovery_local_start(c) + c.rank;
    u->context = c.context;
    u->handle = c.handle;
    u->errhandler = c.errhandler;
  }
  u->acked = c.acked;
  return *u;
}

const char *recovery_on_packet(vc &from, const packet_header &h, const std::byte *payload) {
  (void)from;
  communicator *c = comm_of_context(h.context);
  if (h.tag == step_revoke) {
    if (h.length != 0) return "revocation with a payload";
    if (c != nullptr) {
      comm_revoke(*c);
    } else {
      globals->revoked_early.insert(h.context);  // freed here already, or not made yet
    }
    return nullptr;
  }
  return on_agreement(c != nullptr ? &recovery_union(*c) : nullptr, h, payload);
}

}  // namespace iris::device
