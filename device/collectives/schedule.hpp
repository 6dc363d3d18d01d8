// Schedules: a collective as a list of steps held by one MPI request and
// advanced by the progress engine, so that the program computes while the
// messages move (nonblocking and persistent collectives, device/api/nbc*.cpp).
//
// Lifecycle: a binding builds a schedule (send, recv, reduce and copy steps,
// cut into rounds by fences), hands it to a request with schedule_attach,
// and starts it with schedule_start (MPI_I* at once, MPI_*_init at each
// MPI_Start). A round starts all its steps in order (reduce and copy run on
// the spot, sends and receives are posted); the next round starts when every
// message of this one has completed. After the last round the request
// completes and the Wait and Test calls finish it as any other.
//
// Traffic: every message goes on the communicator's collective context, so it
// never matches point-to-point traffic, with a tag of its own: tag_nbc_base
// + the communicator's collective sequence number (taken when the schedule is
// built; MPI has every rank start its collectives in the same order) << 8 +
// a sub-tag (the neighbourhood collectives tell directions apart with it).
// Two schedules outstanding on one communicator therefore never match each
// other's messages, and between two ranks messages of one schedule match in
// the order they were posted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "device/core/comm.hpp"
#include "device/core/request.hpp"
#include "device/protocols/typed.hpp"
#include "include/mpi.h"

namespace iris::device {

// A schedule's tags on the collective context start at tag_nbc_base
// (comm.hpp), above everything the device's other collectives use.
inline constexpr int nbc_sequence_mask = 0xfffff;
inline constexpr int nbc_sub_tags = 256;

class schedule {
 public:
  // A schedule over `comm`, taking its next collective sequence number.
  explicit schedule(communicator &comm);
  // A schedule for a blocking collective, run to its end before the call
  // returns: its messages carry `tag` (one of the blocking collectives'
  // tags, below tag_nbc_base) and no sequence number is taken, so nothing
  // of `comm` changes.
  schedule(const communicator &comm, int tag);
  ~schedule();
  schedule(const schedule &) = delete;
  schedule &operator=(const schedule &) = delete;
  // A schedule's memory, and that of its step, call and poll lists, come
  // back to a few kept on this thread when it is freed: a nonblocking call
  // builds one each time (6-8 mallocs a call before).
  static void *operator new(std::size_t bytes);
  static void operator delete(void *p, std::size_t bytes);

  const communicator &comm() const { return *comm_; }
  // Over an intercommunicator, sends and receives name ranks of the remote
  // group until address_local(true), then ranks of the local group (on its
  // own collective context), until address_local(false). group() is the
  // communicator they address now (comm() over an intracommunicator).
  void address_local(bool local) { on_local_ = local && local_ != nullptr; }
  const communicator &group() const { return on_local_ ? *local_ : *comm_; }

  // Steps, in order. `sub` is a sub-tag (0 .. nbc_sub_tags - 1).
  void send(const typed_buffer &what, int to, int sub = 0);
  // A send that, once this schedule has met an error (a count mismatch
  // seen by an earlier round's receive), sends one byte more than `what`
  // holds instead, so that the receiver is told too: the allreduce
  // algorithms pass a mismatch on to every rank this way.
  void send_told(const typed_buffer &what, int to, int sub = 0);
  void recv(const typed_buffer &where, int from, int sub = 0);
  // A receive whose message must fill `where` exactly, as in a broadcast,
  // where every rank passes the same count: a shorter message is
  // MPI_ERR_TRUNCATE as a longer one is. Returns the step, for relay().
  std::size_t recv_exact(const typed_buffer &where, int from, int sub = 0);
  // Sends on what the receive step `received` (from recv_exact) brought:
  // the whole buffer when the message fit, only what arrived when it was
  // short, and one byte more than the buffer holds when it was truncated,
  // so that the ranks below are told of a count mismatch too.
  void relay(std::size_t received, int to, int sub = 0);
  // inout = in o inout for `count` elements of `datatype` (device::op_apply).
  void reduce(const typed_buffer &in, const typed_buffer &inout, int op, int datatype);
  void copy(const typed_buffer &from, const typed_buffer &to);
  // Ends the round: later steps start once its messages have completed.
  void fence();
  // Runs `f` when the schedule reaches this step (after the messages of the
  // rounds before it). `f` may add steps at the end: a schedule whose next
  // rounds depend on what arrived (the context agreement of MPI_Comm_idup).
  void call(std::function<void(schedule &)> f);
  // A step that waits until `ready` returns true, asking it again at each
  // advance and never blocking: a collective through the node's shared
  // segment (node.hpp), whose peers' stores no message announces. `ready`
  // sets its argument to an error class when it fails.
  void poll(std::function<bool(int &)> ready);
  // Whether the schedule waits at a poll step.
  bool polling() const { return polling_; }

  // Memory for partial results that lives as long as the schedule, laid out
  // as `count` elements of `type`.
  typed_buffer scratch(int count, const dtype &type);

  // The engine (schedule.cpp).
  void restart();
  // Moves on as far as completed messages allow; true once all is done.
  bool advance();
  int error() const { return error_; }

 private:
  struct kept;
  static kept *kept_here();
  void take_kept();
  enum class step_kind : std::uint8_t { send, recv, reduce, copy, fence, call, relay, poll };
  struct step {
    step_kind kind;
    typed_buffer a;  // send: data; recv: where; reduce: in; copy: from
    typed_buffer b;  // reduce: inout; copy: to
    int peer = 0;
    int sub = 0;
    int op = 0;  // reduce: the op; call, poll: its index in calls_, polls_
    int datatype = 0;
    bool local = false;         // send, recv: to a rank of the local group
    std::size_t elements = 0;   // reduce: elements of `datatype`
    std::int64_t extent = 0;    // reduce: of one element of `datatype`
    bool exact = false;         // recv: a short message is an error too; send: told
    std::size_t received = 0;   // recv: bytes that arrived; relay: the recv step
    int outcome = MPI_SUCCESS;  // recv: its error class
  };
  // A posted send or receive and the step that posted it.
  struct posted {
    request *r;
    std::size_t step;
  };
  void run(const step &s);
  void received(const request &r, step &s);
  typed_buffer relayed(const step &received);

  communicator *comm_;
  std::unique_ptr<communicator> local_;  // an intercommunicator's local group
  bool on_local_ = false;
  int tag_;
  std::vector<step> steps_;
  std::vector<std::unique_ptr<typed_image>> images_;
  std::vector<std::function<void(schedule &)>> calls_;
  std::vector<std::function<bool(int &)>> polls_;
  bool polling_ = false;
  std::vector<posted> pending_;
  std::vector<std::byte> longer_;             // a truncated receive's data and one byte
  std::vector<std::vector<std::byte>> told_;  // what send_told steps sent after an error
  std::size_t next_ = 0;
  int error_ = MPI_SUCCESS;
};

// Gives `s` to request `r` (which frees it when released) and marks `r` as
// a collective. A persistent one waits for MPI_Start; anything else starts.
void schedule_attach(request &r, std::unique_ptr<schedule> s, bool persistent);
// Starts (again) the schedule of `r`.
void schedule_start(request &r);
// Runs `s` to its end here (blocking collectives) and returns its error
// class.
int schedule_run(std::unique_ptr<schedule> s);
// Advances every started schedule (called by progress_poll, as
// progress_added.schedules, while any is started). Returns how many
// completed.
int schedule_progress();

}  // namespace iris::device
