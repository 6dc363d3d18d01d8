// The schedule engine: rounds of steps advanced by the progress engine. See
// schedule.hpp.
#include "device/collectives/schedule.hpp"

#include <algorithm>

#include "device/datatypes/op.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

namespace {

// The started schedules' requests, in start order. Touched only by the
// thread inside the library (Iris serializes callers).
std::vector<request *> &started() {
  static std::vector<request *> list;
  return list;
}

// schedule_progress runs inside progress_poll, where a send never polls
// again (credit_short_poll); this makes that a rule here too, so that no
// schedule advances from inside its own advance.
bool advancing = false;

}  // namespace

// Room for a small schedule's steps from the start (a node step is two,
// a doubling allreduce at 8 ranks twelve), so that it grows once, not five
// times.
constexpr std::size_t steps_reserved = 16;

// Freed schedules' memory and lists, kept on the thread that freed them for
// the next ones it builds (at most `kept_most` of each; the lists keep their
// capacity, emptied).
constexpr std::size_t kept_most = 4;

struct schedule::kept {
  std::vector<void *> blocks;  // of sizeof(schedule) bytes
  std::vector<std::vector<step>> steps;
  std::vector<std::vector<std::function<void(schedule &)>>> calls;
  std::vector<std::vector<std::function<bool(int &)>>> polls;
  kept() { state = alive; }
  kept(const kept &) = delete;
  kept &operator=(const kept &) = delete;
  ~kept() {
    state = gone;
    for (void *b : blocks) ::operator delete(b);
  }
  enum : int { unmade, alive, gone };
  static thread_local int state;  // trivially destroyed: readable after `here` is gone
};

thread_local int schedule::kept::state = schedule::kept::unmade;

// This thread's, or nullptr once it has been destroyed (a thread's exit, or
// schedules of static objects freed after it).
schedule::kept *schedule::kept_here() {
  if (kept::state == kept::gone) return nullptr;
  thread_local kept here;
  return &here;
}

void *schedule::operator new(std::size_t bytes) {
  kept *k = kept_here();
  if (k == nullptr || bytes != sizeof(schedule) || k->blocks.empty()) {
    return ::operator new(bytes);
  }
  void *b = k->blocks.back();
  k->blocks.pop_back();
  return b;
}

void schedule::operator delete(void *p, std::size_t bytes) {
  kept *k = kept_here();
  if (k == nullptr || bytes != sizeof(schedule) || k->blocks.size() >= kept_most) {
    ::operator delete(p);
    return;
  }
  k->blocks.push_back(p);
}

void schedule::take_kept() {
  kept *found = kept_here();
  if (found == nullptr) {
    steps_.reserve(steps_reserved);
    return;
  }
  kept &k = *found;
  if (!k.steps.empty()) {
    steps_ = std::move(k.steps.back());
    k.steps.pop_back();
  } else {
    steps_.reserve(steps_reserved);
  }
  if (!k.calls.empty()) {
    calls_ = std::move(k.calls.back());
    k.calls.pop_back();
  }
  if (!k.polls.empty()) {
    polls_ = std::move(k.polls.back());
    k.polls.pop_back();
  }
}

schedule::schedule(communicator &comm)
    : comm_(&comm),
      tag_(tag_nbc_base + static_cast<int>((comm.nbc_sequence++ & nbc_sequence_mask) << 8)) {
  if (comm.inter) local_ = std::make_unique<communicator>(inter_local_group(comm));
  take_kept();
}

schedule::schedule(const communicator &comm, int tag)
    : comm_(const_cast<communicator *>(&comm)), tag_(tag) {
  if (comm.inter) local_ = std::make_unique<communicator>(inter_local_group(comm));
  take_kept();
}

void schedule::send(const typed_buffer &what, int to, int sub) {
  steps_.push_back({step_kind::send, what, {}, to, sub, 0, 0, on_local_});
}

void schedule::send_told(const typed_buffer &what, int to, int sub) {
  send(what, to, sub);
  steps_.back().exact = true;
}

void schedule::recv(const typed_buffer &where, int from, int sub) {
  steps_.push_back({step_kind::recv, where, {}, from, sub, 0, 0, on_local_});
}

std::size_t schedule::recv_exact(const typed_buffer &where, int from, int sub) {
  recv(where, from, sub);
  steps_.back().exact = true;
  return steps_.size() - 1;
}

void schedule::relay(std::size_t received, int to, int sub) {
  steps_.push_back({step_kind::relay, steps_[received].a, {}, to, sub, 0, 0, on_local_});
  steps_.back().received = received;
}

// Notes what arrived for receive step `s`; an exact one that came short is
// MPI_ERR_TRUNCATE, and a truncated one keeps its data and a byte more for
// relay().
void schedule::received(const request &r, step &s) {
  s.received = r.status_bytes;
  s.outcome = r.status_error;
  if (s.exact && s.outcome == MPI_SUCCESS && s.received < s.a.packed_bytes()) {
    s.outcome = MPI_ERR_TRUNCATE;
  }
  if (s.outcome != MPI_SUCCESS && error_ == MPI_SUCCESS) error_ = s.outcome;
  if (s.exact && r.status_error == MPI_ERR_TRUNCATE) {
    longer_.assign(s.a.packed_bytes() + 1, std::byte{0});
    typed_pack(s.a, longer_.data());
  }
}

typed_buffer schedule::relayed(const step &received) {
  const std::size_t want = received.a.packed_bytes();
  if (received.outcome == MPI_SUCCESS) return received.a;
  if (received.received >= want) return typed_bytes(longer_.data(), longer_.size());
  if (received.a.contiguous()) return typed_bytes(received.a.base, received.received);
  typed_buffer part = received.a;
  part.count = static_cast<int>(received.received / part.type->packed_size);
  return part;
}

// The program may free op (and the type) while the schedule is pending: the
// schedule holds op until it is destroyed, and takes the extent from `in`.
void schedule::reduce(const typed_buffer &in, const typed_buffer &inout, int op, int datatype) {
  // A large-count temporary type is resolved now, to the elements of the
  // type it stands for: its handle is freed when the binding returns. The
  // element's extent is kept too, in case the program frees the type.
  op_hold(op);
  auto elements = static_cast<std::size_t>(in.count);
  std::int64_t extent = in.type->extent;
  if (const dtype *t = dtype_lookup(datatype); t != nullptr && t->wide_of != 0) {
    elements *= t->wide_count;
    datatype = t->wide_of;
    extent = dtype_lookup(datatype)->extent;
  }
  steps_.push_back({step_kind::reduce, in, inout, 0, 0, op, datatype, false, elements, extent});
}

schedule::~schedule() {
  for (const step &s : steps_) {
    if (s.kind == step_kind::reduce) op_unhold(s.op);
  }
  // The lists go back emptied (what the calls and polls held is released
  // now, as it was when the schedule was freed).
  kept *found = kept_here();
  if (found == nullptr) return;
  kept &k = *found;
  steps_.clear();
  calls_.clear();
  polls_.clear();
  if (k.steps.size() < kept_most && steps_.capacity() > 0) k.steps.push_back(std::move(steps_));
  if (k.calls.size() < kept_most && calls_.capacity() > 0) k.calls.push_back(std::move(calls_));
  if (k.polls.size() < kept_most && polls_.capacity() > 0) k.polls.push_back(std::move(polls_));
}

void schedule::copy(const typed_buffer &from, const typed_buffer &to) {
  steps_.push_back({step_kind::copy, from, to});
}

void schedule::fence() {
  if (!steps_.empty() && steps_.back().kind != step_kind::fence) {
    steps_.push_back({step_kind::fence, {}, {}});
  }
}

void schedule::call(std::function<void(schedule &)> f) {
  calls_.push_back(std::move(f));
  steps_.push_back({step_kind::call, {}, {}, 0, 0, static_cast<int>(calls_.size() - 1)});
}

void schedule::poll(std::function<bool(int &)> ready) {
  polls_.push_back(std::move(ready));
  steps_.push_back({step_kind::poll, {}, {}, 0, 0, static_cast<int>(polls_.size() - 1)});
}

typed_buffer schedule::scratch(int count, const dtype &type) {
  images_.push_back(std::make_unique<typed_image>(count, type));
  return images_.back()->view();
}

void schedule::restart() {
  next_ = 0;
  error_ = MPI_SUCCESS;
  told_.clear();
}

void schedule::run(const step &s) {
  request *r = nullptr;
  typed_status status = typed_status::done;
  const communicator &to = s.local ? *local_ : *comm_;
  switch (s.kind) {
    case step_kind::send:
      if (s.exact && error_ != MPI_SUCCESS) {
        told_.emplace_back(s.a.packed_bytes() + 1, std::byte{0});
        typed_pack(s.a, told_.back().data());
        status = typed_send_start(to, to.collective_context(),
                                  typed_bytes(told_.back().data(), told_.back().size()), s.peer,
                                  tag_ + s.sub, send_mode::standard, true, r);
        break;
      }
      status = typed_send_start(to, to.collective_context(), s.a, s.peer, tag_ + s.sub,
                                send_mode::standard, true, r);
      break;
    case step_kind::recv:
      status = typed_recv_start(to, to.collective_context(), s.a, s.peer, tag_ + s.sub, r);
      break;
    case step_kind::relay:
      status = typed_send_start(to, to.collective_context(), relayed(steps_[s.received]), s.peer,
                                tag_ + s.sub, send_mode::standard, true, r);
      break;
    case step_kind::reduce:
      op_apply(s.op, s.a.base, s.b.base, s.elements, s.datatype, s.extent);
      break;
    case step_kind::copy:
      typed_copy(s.a, s.b);
      break;
    case step_kind::fence:
    case step_kind::call:  // advance runs these two
    case step_kind::poll:
      break;
  }
  if (status != typed_status::done && error_ == MPI_SUCCESS) error_ = MPI_ERR_NO_MEM;
  if (r != nullptr) pending_.push_back({r, static_cast<std::size_t>(&s - steps_.data())});
}

bool schedule::advance() {
  for (;;) {
    for (const posted &p : pending_) {
      if (!p.r->complete) return false;
    }
    for (const posted &p : pending_) {
      if (p.r->kind == request_kind::recv) received(*p.r, steps_[p.step]);
      rt->requests.release(p.r);
    }
    pending_.clear();
    if (next_ == steps_.size()) return true;
    while (next_ < steps_.size()) {
      const step &s = steps_[next_++];
      if (s.kind == step_kind::fence) break;
      if (s.kind == step_kind::poll) {
        int err = MPI_SUCCESS;
        polling_ = !polls_[static_cast<std::size_t>(s.op)](err);
        if (err != MPI_SUCCESS && error_ == MPI_SUCCESS) error_ = err;
        if (polling_) {
          --next_;  // asked again at the next advance
          return false;
        }
        continue;
      }
      if (s.kind == step_kind::call) {
        // A copy: the call may add steps and calls, moving both vectors.
        const std::function<void(schedule &)> f = calls_[static_cast<std::size_t>(s.op)];
        f(*this);
        continue;
      }
      run(s);
    }
  }
}

void schedule_delete(schedule *s) {
  delete s;
}

void schedule_attach(request &r, std::unique_ptr<schedule> s, bool persistent) {
  r.sched = s.release();
  r.status_source = MPI_ANY_SOURCE;
  r.status_tag = MPI_ANY_TAG;
  if (persistent) {
    r.persistent.op = persistent_op::coll;
    r.persistent.comm = r.comm->handle;
    r.complete = true;  // inactive until started
    return;
  }
  schedule_start(r);
}

void schedule_start(request &r) {
  r.complete = false;
  r.active = true;
  r.status_error = MPI_SUCCESS;
  r.sched->restart();
  if (r.sched->advance()) {  // nothing to wait for (one rank, or no messages)
    r.status_error = r.sched->error();
    r.complete = true;
    return;
  }
  started().push_back(&r);
  if (progress_added.schedules == nullptr) progress_added.schedules = schedule_progress;
  progress_added.schedules_active = started().size();
  if (r.sched->polling()) ++progress_added.shared_waits;
}

int schedule_run(std::unique_ptr<schedule> s) {
  request *r = rt->requests.allocate(request_kind::coll, const_cast<communicator *>(&s->comm()));
  schedule_attach(*r, std::move(s), false);
  progress_until([r] { return r->complete; });
  const int err = r->status_error;
  rt->requests.release(r);
  return err;
}

int schedule_progress() {
  if (advancing) return 0;
  advancing = true;
  int done = 0;
  std::vector<request *> &list = started();
  // Completing a request may release it (MPI_Request_free), so the finished
  // ones leave the list first (into a list kept for the next call: no
  // allocation per completed collective; `advancing` keeps out a second
  // caller).
  static std::vector<request *> finished;
  finished.clear();
  std::size_t polling = 0;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&polling](request *r) {
                              if (!r->sched->advance()) {
                                polling += r->sched->polling() ? 1 : 0;
                                return false;
                              }
                              finished.push_back(r);
                              return true;
                            }),
             list.end());
  progress_added.schedules_active = list.size();
  progress_added.shared_waits = polling;
  for (request *r : finished) {
    r->status_error = r->sched->error();
    request_complete(*r);
    ++done;
  }
  advancing = false;
  return done;
}

}  // namespace iris::device
