// The handlers of one-sided messages: the target's, which serves an
// origin's request (an accumulate, a compare-and-swap, a lock step, a PSCW
// notice) and answers it, and the origin's, which takes the answer. Both
// run from the AM layer's progress, the target's while it computes.
#include <cstring>
#include <deque>
#include <memory>

#include "device/am/counter.hpp"
#include "device/api/rma/atomics.hpp"
#include "device/api/rma/messages.hpp"
#include "device/runtime/progress.hpp"

using namespace iris;

namespace iris::api::rma {

namespace {

int request_handler = 0, reply_handler = 0;

// Reply bodies in flight: freed once their origin counter says sent.
std::deque<std::pair<iris_counter *, std::vector<std::byte>>> &replies_in_flight() {
  static std::deque<std::pair<iris_counter *, std::vector<std::byte>>> all;
  return all;
}

}  // namespace

void replies_collect() {
  auto &all = replies_in_flight();
  while (!all.empty() && all.front().first->value.load(std::memory_order_acquire) > 0) {
    device::counter_free(all.front().first);
    all.pop_front();
  }
}

bool inside(const window &w, std::uint64_t address, std::uint64_t bytes) {
  if (w.flavor == MPI_WIN_FLAVOR_DYNAMIC) {
    if (bytes == 0) return true;
    // In one attached region, or across adjacent ones.
    std::uint64_t last = 0;
    if (__builtin_add_overflow(address, bytes, &last)) return false;
    for (std::uint64_t at = address; at < last;) {
      std::uint64_t next = 0;
      for (const auto &[b, n] : w.attached) {
        if (at >= b && at - b < n) next = b + n;
      }
      if (next <= at) return false;
      at = next;
    }
    return true;
  }
  const auto base = reinterpret_cast<std::uintptr_t>(w.base);
  return address >= base && address - base <= static_cast<std::uint64_t>(w.size) &&
         bytes <= static_cast<std::uint64_t>(w.size) - (address - base);
}

namespace {

struct incoming {
  request_head head;
  int origin;
  std::vector<std::byte> data;
};

// Serves one request on this rank's part of `w` (messages.hpp): a put, a
// get (its bytes to `back`), an accumulate or a compare-and-swap (the old
// values to `back` when they return). Its status; nothing is written
// unless every segment lies in the window.
int serve(window &w, const request_head &h, const std::byte *data, std::size_t length,
          std::vector<std::byte> &back) {
  const std::size_t table = std::size_t{h.segments} * 2 * sizeof(std::uint64_t);
  if (length < table) return MPI_ERR_OTHER;
  auto pair_at = [data](std::size_t i) {
    std::uint64_t pair[2];
    std::memcpy(pair, data + i * sizeof pair, sizeof pair);
    return std::pair<std::uint64_t, std::size_t>{pair[0], static_cast<std::size_t>(pair[1])};
  };
  std::size_t total = 0;
  for (std::size_t i = 0; i < h.segments; ++i) {
    const auto [address, bytes] = pair_at(i);
    if (!inside(w, address, bytes)) return MPI_ERR_RMA_RANGE;
    total += bytes;
  }
  const std::byte *payload = data + table;
  const std::size_t payloads = length - table;
  auto here = [](std::uint64_t address) {
    return reinterpret_cast<std::byte *>(static_cast<std::uintptr_t>(address));
  };
  if (h.kind == message_kind::put || h.kind == message_kind::get) {
    // Straight from the table: no list to build.
    const bool put = h.kind == message_kind::put;
    if (payloads != (put ? total : 0)) return MPI_ERR_OTHER;
    if (!put) back.resize(total);
    std::size_t done = 0;
    for (std::size_t i = 0; i < h.segments; ++i) {
      const auto [address, bytes] = pair_at(i);
      if (put) {
        std::memcpy(here(address), payload + done, bytes);
      } else {
        std::memcpy(back.data() + done, here(address), bytes);
      }
      done += bytes;
    }
    return MPI_SUCCESS;
  }
  if (h.kind != message_kind::accumulate && h.kind != message_kind::compare_swap) {
    return MPI_ERR_OTHER;
  }
  segment_list segs(h.segments);
  for (std::size_t i = 0; i < segs.size(); ++i) segs[i] = pair_at(i);
  const bool cas = h.kind == message_kind::compare_swap;
  const device::dtype *b = device::dtype_lookup(h.basic);
  if (h.elem == 0 || h.elem > 64 || b == nullptr || !b->predefined || b->size != h.elem ||
      b->extent > 64 || total % h.elem != 0 || total * (cas ? 2 : 1) != payloads) {
    return MPI_ERR_OTHER;
  }
  if (h.fetching != 0 || cas) back.resize(total);
  const auto local = [&](std::uint64_t address, std::size_t) { return here(address); };
  std::byte *old = back.empty() ? nullptr : back.data();
  if (!w.mapped_elsewhere && !cas && b->extent == static_cast<std::int64_t>(h.elem)) {
    apply_whole(segs, local, payload, old, h.op, h.basic, *b);
  } else {
    apply_stream(segs, local, payload, cas ? payload + h.elem : nullptr, old, h.op, h.basic, *b,
                 w.ctl);
  }
  return MPI_SUCCESS;
}

// Serves a lazy lock's batch (messages.hpp) in order. A lock step not
// granted ends it before anything ran (`granted` 0). What each request
// with a token returns goes to `back` as a batch_part and its bytes. The
// first error, or MPI_SUCCESS.
int serve_batch(window &w, int origin, const std::vector<std::byte> &data,
                std::vector<std::byte> &back, std::int64_t &granted) {
  granted = 1;
  int status = MPI_SUCCESS;
  std::vector<std::byte> out;
  for (std::size_t at = 0; at < data.size();) {
    request_head h;
    std::uint64_t length = 0;
    if (data.size() - at < sizeof h + sizeof length) return MPI_ERR_OTHER;
    std::memcpy(&h, data.data() + at, sizeof h);
    std::memcpy(&length, data.data() + at + sizeof h, sizeof length);
    at += sizeof h + sizeof length;
    if (length > data.size() - at) return MPI_ERR_OTHER;
    const std::byte *body = data.data() + at;
    at += length;
    if (h.kind == message_kind::lock) {
      if (!lock_apply(*w.ctl, h.lock)) {
        granted = 0;
        return MPI_SUCCESS;
      }
      continue;
    }
    if (h.kind == message_kind::done) {
      // MPI_Win_complete's notice, after the epoch's ops (batch_complete).
      if (origin >= 0 && static_cast<std::size_t>(origin) < w.completes_from.size()) {
        ++w.completes_from[static_cast<std::size_t>(origin)];
      }
      continue;
    }
    out.clear();
    const int e = serve(w, h, body, length, out);
    if (e != MPI_SUCCESS && status == MPI_SUCCESS) status = e;
    if (h.token != no_token) {
      const batch_part part{h.token, e, out.size()};
      const auto *p = reinterpret_cast<const std::byte *>(&part);
      back.insert(back.end(), p, p + sizeof part);
      back.insert(back.end(), out.begin(), out.end());
    }
  }
  return status;
}

void request_done(MPI_Comm comm, void *info) {
  std::unique_ptr<incoming> in(static_cast<incoming *>(info));
  replies_collect();
  window *w = of_comm(comm);
  if (w == nullptr) return;  // freed: the origin broke MPI's rules
  const request_head &h = in->head;
  if (h.kind == message_kind::post || h.kind == message_kind::done) {
    auto &from = h.kind == message_kind::post ? w->posts_from : w->completes_from;
    if (in->origin >= 0 && static_cast<std::size_t>(in->origin) < from.size()) {
      ++from[static_cast<std::size_t>(in->origin)];
    }
    return;  // no answer
  }
  reply_head answer{h.token, MPI_SUCCESS, 0};
  std::vector<std::byte> back;
  if (h.kind == message_kind::lock) {
    answer.answer = lock_apply(*w->ctl, h.lock) ? 1 : 0;
  } else if (h.kind == message_kind::batch) {
    answer.status = serve_batch(*w, in->origin, in->data, back, answer.answer);
    // One nobody waits for (batch_complete's) is answered only to report
    // a failure, which its origin's next completion raises.
    if (h.token == no_token && answer.status == MPI_SUCCESS) return;
  } else {
    answer.status = serve(*w, h, in->data.data(), in->data.size(), back);
  }
  iris_counter *sent = device::counter_create();
  auto &flight = replies_in_flight();
  flight.emplace_back(sent, std::move(back));
  const std::vector<std::byte> &body = flight.back().second;
  device::am_request(route_to(*w, in->origin), reply_handler, &answer, sizeof answer, body.data(),
                     body.size(), sent);
}

void *request_arrived(MPI_Comm comm, int origin, const void *uhdr, int uhdr_len, MPI_Aint data_len,
                      MPIX_Am_completion_fn **completion, void **user_info) {
  (void)comm;
  auto *in = new incoming{};
  if (uhdr_len == sizeof(request_head)) std::memcpy(&in->head, uhdr, sizeof(request_head));
  in->origin = origin;
  in->data.resize(static_cast<std::size_t>(data_len));
  *completion = request_done;
  *user_info = in;
  return data_len > 0 ? in->data.data() : static_cast<void *>(in);
}

struct reply_arrival {
  window *w;
  std::uint32_t token;
  reply_head head;
};

void note_error(window &w, int status) {
  if (status == MPI_SUCCESS || w.error != MPI_SUCCESS) return;
  w.error = status;
  w.why = status == MPI_ERR_RMA_RANGE
              ? "an operation's target range lies outside the target's window"
              : "the target could not apply an operation";
}

// A granted batch's answers, each to the fetch slot its request named.
void parts_take(window &w, const fetch &batch) {
  const std::vector<std::byte> &data = batch.staging;
  for (std::size_t at = 0; data.size() - at >= sizeof(batch_part);) {
    batch_part part;
    std::memcpy(&part, data.data() + at, sizeof part);
    at += sizeof part;
    if (part.length > data.size() - at) break;
    if (part.token < w.fetches.size() && w.fetches[part.token].used &&
        w.fetches[part.token].target == batch.target) {
      fetch &f = w.fetches[part.token];
      f.replied = true;
      f.status = part.status;
      const auto *p = data.data() + at;
      f.staging.assign(p, p + part.length);
    }
    at += part.length;
  }
}

void reply_done(MPI_Comm, void *info) {
  std::unique_ptr<reply_arrival> r(static_cast<reply_arrival *>(info));
  window &w = *r->w;
  if (r->token >= w.fetches.size()) return;
  fetch &f = w.fetches[r->token];
  f.replied = true;
  f.status = r->head.status;
  f.lock_answer = r->head.answer;
  --w.targets[static_cast<std::size_t>(f.target)].replies;
  if (f.batch && f.lock_answer != 0) parts_take(w, w.fetches[r->token]);
  note_error(w, f.status);
  if (f.free_on_reply) fetch_free(w, r->token);
}

void *reply_arrived(MPI_Comm comm, int, const void *uhdr, int uhdr_len, MPI_Aint data_len,
                    MPIX_Am_completion_fn **completion, void **user_info) {
  window *w = of_comm(comm);
  if (w == nullptr || uhdr_len != sizeof(reply_head)) return nullptr;
  reply_head head;
  std::memcpy(&head, uhdr, sizeof head);
  if (head.token == no_token) {
    // A failure of a batch nobody waits for: the next completion raises it.
    note_error(*w, head.status);
    return nullptr;
  }
  auto *r = new reply_arrival{w, 0, {}};
  std::memcpy(&r->head, uhdr, sizeof(reply_head));
  r->token = r->head.token;
  *completion = reply_done;
  *user_info = r;
  if (r->token >= w->fetches.size()) return nullptr;
  fetch &f = w->fetches[r->token];
  f.staging.resize(static_cast<std::size_t>(data_len));
  return data_len > 0 ? f.staging.data() : static_cast<void *>(r);
}

}  // namespace

int request_handler_id() {
  return request_handler;
}
int reply_handler_id() {
  return reply_handler;
}

void replies_drain() {
  device::progress_until([] {
    for (const auto &[sent, body] : replies_in_flight()) {
      if (sent->value.load(std::memory_order_acquire) == 0) return false;
    }
    return true;
  });
  replies_collect();
}

void handlers_register() {
  static bool done = false;
  if (done) return;
  done = true;
  request_handler = device::am_register_internal(request_arrived);
  reply_handler = device::am_register_internal(reply_arrived);
}

}  // namespace iris::api::rma
