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
  std::vector<std::byte> old;
  if (h.kind == message_kind::lock) {
    answer.answer = lock_apply(*w->ctl, h.lock) ? 1 : 0;
  } else {
    const std::size_t table = h.segments * 2 * sizeof(std::uint64_t);
    if (in->data.size() < table || h.elem == 0 || h.elem > 64) {
      answer.status = MPI_ERR_OTHER;
    } else {
      const auto *seg = reinterpret_cast<const std::uint64_t *>(in->data.data());
      const std::byte *operand = in->data.data() + table;
      const std::size_t operands = in->data.size() - table;
      const device::dtype *b = device::dtype_lookup(h.basic);
      std::size_t total = 0;
      segment_list segs;
      for (std::uint32_t i = 0; i < h.segments; ++i) {
        if (!inside(*w, seg[2 * i], seg[2 * i + 1])) answer.status = MPI_ERR_RMA_RANGE;
        segs.emplace_back(seg[2 * i], seg[2 * i + 1]);
        total += seg[2 * i + 1];
      }
      const std::size_t per = h.kind == message_kind::compare_swap ? 2 : 1;
      if (answer.status == MPI_SUCCESS &&
          (b == nullptr || !b->predefined || b->size != h.elem || b->extent > 64 ||
           total % h.elem != 0 || total * per != operands)) {
        answer.status = MPI_ERR_OTHER;
      }
      if (answer.status == MPI_SUCCESS) {
        if (h.fetching != 0 || h.kind == message_kind::compare_swap) old.resize(total);
        const bool cas = h.kind == message_kind::compare_swap;
        apply_stream(
            segs,
            [](std::uint64_t address, std::size_t) {
              return reinterpret_cast<std::byte *>(static_cast<std::uintptr_t>(address));
            },
            operand, cas ? operand + h.elem : nullptr, old.empty() ? nullptr : old.data(), h.op,
            h.basic, *b, w->ctl);
      }
    }
  }
  iris_counter *sent = device::counter_create();
  auto &flight = replies_in_flight();
  flight.emplace_back(sent, std::move(old));
  const std::vector<std::byte> &body = flight.back().second;
  device::am_send(route_to(*w, in->origin), reply_handler, &answer, sizeof answer, body.data(),
                  body.size(), 0, sent, nullptr);
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

void reply_done(MPI_Comm, void *info) {
  std::unique_ptr<reply_arrival> r(static_cast<reply_arrival *>(info));
  window &w = *r->w;
  if (r->token >= w.fetches.size()) return;
  fetch &f = w.fetches[r->token];
  f.replied = true;
  f.status = r->head.status;
  f.lock_answer = r->head.answer;
  --w.targets[static_cast<std::size_t>(f.target)].replies;
  if (f.free_on_reply) f = fetch{};
  if (f.status != MPI_SUCCESS && w.error == MPI_SUCCESS) {
    w.error = f.status;
    w.why = f.status == MPI_ERR_RMA_RANGE
                ? "an accumulate's target range lies outside the target's window"
                : "the target could not apply an accumulate";
  }
}

void *reply_arrived(MPI_Comm comm, int, const void *uhdr, int uhdr_len, MPI_Aint data_len,
                    MPIX_Am_completion_fn **completion, void **user_info) {
  window *w = of_comm(comm);
  if (w == nullptr || uhdr_len != sizeof(reply_head)) return nullptr;
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
