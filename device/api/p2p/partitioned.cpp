// Partitioned communication (MPI-4.1 chapter 4): Psend_init, Precv_init,
// Pready, Pready_range, Pready_list, Parrived, with Start and the Wait/Test
// calls.
//
// The design is the simple one: a start sends the whole buffer as one
// message once every partition is marked ready, and the receive side's
// partitions all arrive when that message has. Partitioned requests match
// in the order they were initialised, per (communicator, peer, tag), never
// with ordinary messages:
//   - Psend_init gives each live partitioned send to a peer (per
//     communicator) one of 38 slots and sends the receiver a handshake
//     {user tag, slot} on the communicator's collective context with
//     tag_partitioned_init;
//   - the receiver reads the handshakes of a peer in order and gives the
//     n-th one with tag t to its n-th Precv_init from that peer with tag t;
//   - each start's data then travels on the collective context with tag
//     tag_partitioned_data + slot, which only that pair of requests uses.
// The tags (60..98) sit between the device's own (50..54) and the blocking
// collectives' (100..999), below create_group's and the schedules'. So at
// most 38 partitioned sends to one peer on one communicator may be live at
// once; one more is MPI_ERR_OTHER, said in one line.
#include <algorithm>
#include <bitset>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <type_traits>
#include <utility>
#include <vector>

#include "device/api/check.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

constexpr int tag_partitioned_init = 60;
constexpr int tag_partitioned_data = 61;
constexpr int partitioned_slots = 38;  // data tags 61..98

int data_tag(std::uint32_t slot) {
  return tag_partitioned_data + static_cast<int>(slot);
}

struct handshake {
  std::int32_t tag;
  std::uint32_t number;
};

struct precv_ext;

// What one rank knows of the partitioned traffic with one peer on one
// communicator (keyed by context and peer rank).
struct channel {
  std::bitset<partitioned_slots> used;  // slots of live partitioned sends to the peer
  std::deque<handshake> arrivals;       // handshakes not yet given to a receive
  std::vector<precv_ext *> waiting;     // receives without a handshake, in init order
  device::request *listen = nullptr;    // the posted receive of the next handshake
  handshake incoming{};
};

std::map<std::pair<std::uint32_t, int>, channel> &channels() {
  static std::map<std::pair<std::uint32_t, int>, channel> all;
  return all;
}

struct psend_ext final : device::request_ext {
  device::typed_buffer data;
  int dest = 0;
  std::uint32_t number = 0;
  std::vector<bool> ready;
  int missing = 0;
  handshake hello{};
  device::request *hello_send = nullptr;
  device::request *send = nullptr;

  std::bitset<partitioned_slots> *slots = nullptr;  // the channel's, to give the slot back

  ~psend_ext() override {
    if (slots != nullptr) slots->reset(number);
    for (device::request *part : {hello_send, send}) {
      if (part == nullptr) continue;
      part->freed = true;
      if (part->complete) device::rt->requests.release(part);
    }
  }
  void poll(device::request &r) override {
    if (!r.active) return;
    r.complete = missing == 0 && (send == nullptr || send->complete);
  }
  int finish(device::request &r, void *status) override {
    if (send != nullptr) device::rt->requests.release(send);
    send = nullptr;
    r.status_source = MPI_ANY_SOURCE;
    r.status_tag = MPI_ANY_TAG;
    r.status_bytes = 0;
    api::status_empty(static_cast<MPI_Status *>(status));
    return MPI_SUCCESS;
  }
  int peek(device::request &r, void *status) override {
    (void)r;
    api::status_empty(static_cast<MPI_Status *>(status));
    return MPI_SUCCESS;
  }
  void cancel(device::request &r) override { (void)r; }
  bool free(device::request &r) override {
    (void)r;
    return true;
  }
  int start(device::request &r) override {
    r.active = true;
    r.complete = false;
    ready.assign(ready.size(), false);
    missing = static_cast<int>(ready.size());
    return MPI_SUCCESS;
  }
  // Marks partition `p` ready; the last one sends the buffer.
  int mark(const char *call, device::request &r, int p) {
    if (p < 0 || p >= static_cast<int>(ready.size())) {
      return device::error_raise(r.comm, call, MPI_ERR_ARG,
                                 "partition %d out of range (the request has %zu)", p,
                                 ready.size());
    }
    if (ready[static_cast<std::size_t>(p)]) {
      return device::error_raise(r.comm, call, MPI_ERR_ARG,
                                 "partition %d is already marked ready in this round", p);
    }
    ready[static_cast<std::size_t>(p)] = true;
    if (--missing > 0 || dest == MPI_PROC_NULL) return MPI_SUCCESS;
    const communicator &c = *r.comm;
    const device::typed_status st =
        device::typed_send_start(c, c.collective_context(), data, dest, data_tag(number),
                                 device::send_mode::standard, true, send);
    return api::typed_result(call, c, st, data.packed_bytes());
  }
};

struct precv_ext final : device::request_ext {
  device::typed_buffer data;
  int source = 0;
  int tag = 0;
  int partitions = 0;
  std::uint32_t context = 0;  // with source: its channel
  bool matched = false;
  std::uint32_t number = 0;
  device::request *recv = nullptr;
  int post_error = MPI_SUCCESS;

  ~precv_ext() override;
  void poll(device::request &r) override;
  int finish(device::request & /*r*/, void *status) override {
    if (source == MPI_PROC_NULL) {
      api::status_proc_null(static_cast<MPI_Status *>(status));
      return MPI_SUCCESS;
    }
    recv->status_tag = tag;  // the user's, not the wire's
    api::status_fill(static_cast<MPI_Status *>(status), *recv);
    const int error = recv->status_error;
    device::rt->requests.release(recv);
    recv = nullptr;
    return error;
  }
  int peek(device::request &r, void *status) override {
    (void)r;
    if (recv == nullptr) {
      api::status_proc_null(static_cast<MPI_Status *>(status));
    } else {
      recv->status_tag = tag;
      api::status_fill(static_cast<MPI_Status *>(status), *recv);
    }
    return MPI_SUCCESS;
  }
  void cancel(device::request &r) override { (void)r; }
  bool free(device::request &r) override {
    (void)r;
    return true;
  }
  int start(device::request &r) override {
    r.active = true;
    r.complete = false;
    poll(r);
    return post_error;
  }
};

channel &channel_of(const communicator &c, int peer) {
  return channels()[{c.context, peer}];
}

// Reads the peer's handshakes that have arrived and hands them to the
// waiting receives in order (the first handshake with a receive's tag).
void channel_poll(const communicator &c, int peer) {
  channel &ch = channel_of(c, peer);
  while (ch.listen != nullptr && ch.listen->complete) {
    ch.arrivals.push_back(ch.incoming);
    device::rt->requests.release(ch.listen);
    ch.listen = nullptr;
    if (!ch.waiting.empty()) {
      ch.listen = device::recv_start(c, c.collective_context(), &ch.incoming, sizeof(handshake),
                                     peer, tag_partitioned_init);
    }
  }
  for (auto w = ch.waiting.begin(); w != ch.waiting.end();) {
    const auto a = std::find_if(ch.arrivals.begin(), ch.arrivals.end(),
                                [&](const handshake &h) { return h.tag == (*w)->tag; });
    if (a == ch.arrivals.end()) {
      ++w;
      continue;
    }
    (*w)->matched = true;
    (*w)->number = a->number;
    ch.arrivals.erase(a);
    w = ch.waiting.erase(w);
  }
  if (ch.listen == nullptr && !ch.waiting.empty()) {
    ch.listen = device::recv_start(c, c.collective_context(), &ch.incoming, sizeof(handshake), peer,
                                   tag_partitioned_init);
  }
}

precv_ext::~precv_ext() {
  if (!matched && source != MPI_PROC_NULL) {
    std::erase(channels()[{context, source}].waiting, this);
  }
  if (recv != nullptr) {
    recv->freed = true;
    if (recv->complete) {
      device::rt->requests.release(recv);
    }
  }
}

void precv_ext::poll(device::request &r) {
  if (!r.active) return;
  if (source == MPI_PROC_NULL) {
    r.complete = true;
    return;
  }
  const communicator &c = *r.comm;
  if (!matched) channel_poll(c, source);
  if (matched && recv == nullptr && post_error == MPI_SUCCESS) {
    device::request *out = nullptr;
    post_error = api::typed_result(
        "MPI_Start", c,
        device::typed_recv_start(c, c.collective_context(), data, source, data_tag(number), out),
        data.packed_bytes());
    recv = out;
  }
  r.complete = recv != nullptr && recv->complete;
}

int check_partitions(const char *call, const communicator &c, int partitions, MPI_Count count,
                     MPI_Info info, MPI_Request *request) {
  if (partitions < 1) {
    return device::error_raise(&c, call, MPI_ERR_ARG, "partitions %d (at least 1)", partitions);
  }
  if (count < 0 || count * partitions > 0x7fffffff) {
    return device::error_raise(&c, call, MPI_ERR_COUNT,
                               "count %lld per partition times %d partitions is not in 0..2^31-1",
                               static_cast<long long>(count), partitions);
  }
  (void)info;  // no hints are read
  return api::check_not_null(call, &c, request, "request");
}

int psend_init(const char *call, const void *buf, int partitions, MPI_Count count,
               MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Info info,
               MPI_Request *request) {
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = check_partitions(call, *c, partitions, count, info, request)) return err;
  device::typed_buffer tb;
  const int total = static_cast<int>(count * partitions);
  if (int err = api::check_typed_send(call, buf, total, type, dest, tag, comm, c, tb)) return err;
  device::request *r = device::rt->requests.allocate(device::request_kind::send, c);
  auto *ext = new psend_ext;
  ext->data = tb;
  ext->dest = dest;
  ext->ready.assign(static_cast<std::size_t>(partitions), false);
  if (dest != MPI_PROC_NULL) {
    channel &ch = channel_of(*c, dest);
    if (ch.used.all()) {
      delete ext;
      device::rt->requests.release(r);
      return device::error_raise(c, call, MPI_ERR_OTHER,
                                 "%d partitioned sends to rank %d on this communicator are live "
                                 "already (the most Iris supports); free one first",
                                 partitioned_slots, dest);
    }
    std::uint32_t slot = 0;
    while (ch.used.test(slot)) ++slot;
    ch.used.set(slot);
    ext->slots = &ch.used;
    ext->number = slot;
    ext->hello = {tag, ext->number};
    ext->hello_send =
        device::send_start(*c, c->collective_context(), &ext->hello, sizeof(handshake), dest,
                           tag_partitioned_init, device::send_mode::standard, true);
  }
  r->ext = ext;
  r->persistent.op = device::persistent_op::ext;
  r->unpack_type = tb.type;
  r->complete = true;  // inactive until started
  *request = device::request_handle(*r);
  return MPI_SUCCESS;
}

int precv_init(const char *call, void *buf, int partitions, MPI_Count count, MPI_Datatype type,
               int source, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = check_partitions(call, *c, partitions, count, info, request)) return err;
  if (source == MPI_ANY_SOURCE || tag == MPI_ANY_TAG) {
    return device::error_raise(c, call, MPI_ERR_ARG,
                               "partitioned receives take no wildcards (source %d, tag %d)", source,
                               tag);
  }
  device::typed_buffer tb;
  const int total = static_cast<int>(count * partitions);
  if (int err = api::check_typed_buffer(call, *c, buf, total, type, tb)) return err;
  if (int err = api::check_source(call, *c, source)) return err;
  if (int err = api::check_recv_tag(call, *c, tag)) return err;
  device::request *r = device::rt->requests.allocate(device::request_kind::recv, c);
  auto *ext = new precv_ext;
  ext->data = tb;
  ext->source = source;
  ext->tag = tag;
  ext->partitions = partitions;
  ext->context = c->context;
  if (source != MPI_PROC_NULL) channel_of(*c, source).waiting.push_back(ext);
  r->ext = ext;
  r->persistent.op = device::persistent_op::ext;
  r->unpack_type = tb.type;
  r->complete = true;  // inactive until started
  *request = device::request_handle(*r);
  return MPI_SUCCESS;
}

// The partitioned request named by `handle`, of the wanted kind, started.
template <typename Ext>
int partitioned_of(const char *call, MPI_Request handle, device::request *&r, Ext *&ext) {
  if (int err = api::check_initialized(call)) return err;
  r = device::rt->requests.from_handle(handle);
  ext = r != nullptr ? dynamic_cast<Ext *>(r->ext) : nullptr;
  if (ext == nullptr) {
    return device::error_raise(
        nullptr, call, MPI_ERR_REQUEST, "request 0x%x is not a partitioned %s request",
        static_cast<unsigned>(handle), std::is_same_v<Ext, psend_ext> ? "send" : "receive");
  }
  if (!r->active) {
    return device::error_raise(r->comm, call, MPI_ERR_REQUEST,
                               "partitioned request 0x%x is not started (call MPI_Start first)",
                               static_cast<unsigned>(handle));
  }
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Psend_init(const void *buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                   int dest, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return psend_init("MPI_Psend_init", buf, partitions, count, datatype, dest, tag, comm, info,
                    request);
}

int MPI_Precv_init(void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int source,
                   int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return precv_init("MPI_Precv_init", buf, partitions, count, datatype, source, tag, comm, info,
                    request);
}

int MPI_Pready(int partition, MPI_Request request) {
  const device::api_guard guard;
  device::request *r = nullptr;
  psend_ext *ext = nullptr;
  if (int err = partitioned_of("MPI_Pready", request, r, ext)) return err;
  return ext->mark("MPI_Pready", *r, partition);
}

int MPI_Pready_range(int partition_low, int partition_high, MPI_Request request) {
  const device::api_guard guard;
  const char *call = "MPI_Pready_range";
  device::request *r = nullptr;
  psend_ext *ext = nullptr;
  if (int err = partitioned_of(call, request, r, ext)) return err;
  if (partition_low > partition_high) {
    return device::error_raise(r->comm, call, MPI_ERR_ARG, "empty range %d..%d", partition_low,
                               partition_high);
  }
  for (int p = partition_low; p <= partition_high; ++p) {
    if (int err = ext->mark(call, *r, p)) return err;
  }
  return MPI_SUCCESS;
}

int MPI_Pready_list(int length, const int array_of_partitions[], MPI_Request request) {
  const device::api_guard guard;
  const char *call = "MPI_Pready_list";
  device::request *r = nullptr;
  psend_ext *ext = nullptr;
  if (int err = partitioned_of(call, request, r, ext)) return err;
  if (length < 0 || (length > 0 && array_of_partitions == nullptr)) {
    return device::error_raise(r->comm, call, MPI_ERR_ARG, "invalid partition list of %d", length);
  }
  for (int i = 0; i < length; ++i) {
    if (int err = ext->mark(call, *r, array_of_partitions[i])) return err;
  }
  return MPI_SUCCESS;
}

int MPI_Parrived(MPI_Request request, int partition, int *flag) {
  const device::api_guard guard;
  const char *call = "MPI_Parrived";
  device::request *r = nullptr;
  precv_ext *ext = nullptr;
  if (int err = partitioned_of(call, request, r, ext)) return err;
  if (int err = api::check_not_null(call, r->comm, flag, "flag")) return err;
  if (partition < 0 || partition >= ext->partitions) {
    return device::error_raise(r->comm, call, MPI_ERR_ARG,
                               "partition %d out of range (the request has %d)", partition,
                               ext->partitions);
  }
  if (!r->complete) {
    ext->poll(*r);
    if (!r->complete) device::progress_poll();
    ext->poll(*r);
  }
  *flag = r->complete ? 1 : 0;
  return MPI_SUCCESS;
}

}  // extern "C"
