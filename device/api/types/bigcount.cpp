// The large-count (`_c`) bindings of point-to-point calls and the status
// and buffer calls (see bigcount.hpp for how a count past 2^31-1 travels).
// The datatype `_c` calls are in types_c.cpp.
#include "device/api/types/bigcount.hpp"

#include <cstdint>
#include <limits>

#include "device/api/check.hpp"

using namespace iris;

namespace iris::api {

big_count::~big_count() {
  if (made_ != MPI_DATATYPE_NULL) MPI_Type_free(&made_);
}

int big_count::set(const char *call, MPI_Comm comm, MPI_Count count, MPI_Datatype type) {
  if (fits_int(count)) {
    count_ = static_cast<int>(count);
    type_ = type;
    return MPI_SUCCESS;
  }
  const communicator *c = device::rt != nullptr ? device::comm_lookup(comm) : nullptr;
  if (int err = check_initialized(call)) return err;
  if (count < 0) {
    return device::error_raise(c, call, MPI_ERR_COUNT, "negative count %lld",
                               static_cast<long long>(count));
  }
  const device::dtype *t = device::dtype_lookup(type);
  if (t == nullptr) {
    return device::error_raise(c, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                               static_cast<unsigned>(type));
  }
  const bool dense = t->tree->k == device::dtype_node::kind::run && t->lb == 0 &&
                     t->extent == static_cast<std::int64_t>(t->size);
  if (!dense) {
    return device::error_raise(
        c, call, MPI_ERR_COUNT,
        "count %lld is past 2^31-1, which Iris supports only for types whose data is one "
        "contiguous block",
        static_cast<long long>(count));
  }
  if (t->extent == 0 || count > std::numeric_limits<std::int64_t>::max() / t->extent) {
    return device::error_raise(c, call, MPI_ERR_COUNT, "count %lld of %lld-byte elements overflows",
                               static_cast<long long>(count), static_cast<long long>(t->extent));
  }
  constexpr int piece_shift = 20;
  const MPI_Count pieces = count >> piece_shift;
  const int rest = static_cast<int>(count & ((MPI_Count{1} << piece_shift) - 1));
  MPI_Datatype piece = MPI_DATATYPE_NULL, body = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(1 << piece_shift, type, &piece);
  MPI_Type_contiguous(static_cast<int>(pieces), piece, &body);
  if (rest == 0) {
    made_ = body;
  } else {
    MPI_Datatype tail = MPI_DATATYPE_NULL;
    MPI_Type_contiguous(rest, type, &tail);
    const int lens[2] = {1, 1};
    const MPI_Aint displs[2] = {0, static_cast<MPI_Aint>((pieces << piece_shift) * t->extent)};
    const MPI_Datatype types[2] = {body, tail};
    MPI_Type_create_struct(2, lens, displs, types, &made_);
    MPI_Type_free(&tail);
    MPI_Type_free(&body);
  }
  MPI_Type_free(&piece);
  MPI_Type_commit(&made_);
  device::dtype *made = device::dtype_lookup_derived(made_);
  made->wide_of = type;
  made->wide_count = static_cast<std::size_t>(count);
  count_ = 1;
  type_ = made_;
  return MPI_SUCCESS;
}

}  // namespace iris::api

using iris::api::big_count;

extern "C" {

int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Send_c", comm, count, datatype)) return err;
  return MPI_Send(buf, b.count(), b.type(), dest, tag, comm);
}

int MPI_Ssend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Ssend_c", comm, count, datatype)) return err;
  return MPI_Ssend(buf, b.count(), b.type(), dest, tag, comm);
}

int MPI_Rsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Rsend_c", comm, count, datatype)) return err;
  return MPI_Rsend(buf, b.count(), b.type(), dest, tag, comm);
}

int MPI_Bsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Bsend_c", comm, count, datatype)) return err;
  return MPI_Bsend(buf, b.count(), b.type(), dest, tag, comm);
}

int MPI_Isend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Isend_c", comm, count, datatype)) return err;
  return MPI_Isend(buf, b.count(), b.type(), dest, tag, comm, request);
}

int MPI_Issend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Issend_c", comm, count, datatype)) return err;
  return MPI_Issend(buf, b.count(), b.type(), dest, tag, comm, request);
}

int MPI_Irsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Irsend_c", comm, count, datatype)) return err;
  return MPI_Irsend(buf, b.count(), b.type(), dest, tag, comm, request);
}

int MPI_Ibsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Ibsend_c", comm, count, datatype)) return err;
  return MPI_Ibsend(buf, b.count(), b.type(), dest, tag, comm, request);
}

int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
               MPI_Comm comm, MPI_Status *status) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Recv_c", comm, count, datatype)) return err;
  return MPI_Recv(buf, b.count(), b.type(), source, tag, comm, status);
}

int MPI_Irecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Irecv_c", comm, count, datatype)) return err;
  return MPI_Irecv(buf, b.count(), b.type(), source, tag, comm, request);
}

int MPI_Sendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                   int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                   int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
  const device::api_guard guard;
  big_count s, r;
  if (int err = s.set("MPI_Sendrecv_c", comm, sendcount, sendtype)) return err;
  if (int err = r.set("MPI_Sendrecv_c", comm, recvcount, recvtype)) return err;
  return MPI_Sendrecv(sendbuf, s.count(), s.type(), dest, sendtag, recvbuf, r.count(), r.type(),
                      source, recvtag, comm, status);
}

int MPI_Sendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag,
                           int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Sendrecv_replace_c", comm, count, datatype)) return err;
  return MPI_Sendrecv_replace(buf, b.count(), b.type(), dest, sendtag, source, recvtag, comm,
                              status);
}

int MPI_Isendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                    int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                    int source, int recvtag, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  big_count s, r;
  if (int err = s.set("MPI_Isendrecv_c", comm, sendcount, sendtype)) return err;
  if (int err = r.set("MPI_Isendrecv_c", comm, recvcount, recvtype)) return err;
  return MPI_Isendrecv(sendbuf, s.count(), s.type(), dest, sendtag, recvbuf, r.count(), r.type(),
                       source, recvtag, comm, request);
}

int MPI_Isendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                            int sendtag, int source, int recvtag, MPI_Comm comm,
                            MPI_Request *request) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Isendrecv_replace_c", comm, count, datatype)) return err;
  return MPI_Isendrecv_replace(buf, b.count(), b.type(), dest, sendtag, source, recvtag, comm,
                               request);
}

int MPI_Send_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Send_init_c", comm, count, datatype)) return err;
  return MPI_Send_init(buf, b.count(), b.type(), dest, tag, comm, request);
}

int MPI_Ssend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Ssend_init_c", comm, count, datatype)) return err;
  return MPI_Ssend_init(buf, b.count(), b.type(), dest, tag, comm, request);
}

int MPI_Rsend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Rsend_init_c", comm, count, datatype)) return err;
  return MPI_Rsend_init(buf, b.count(), b.type(), dest, tag, comm, request);
}

int MPI_Bsend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Bsend_init_c", comm, count, datatype)) return err;
  return MPI_Bsend_init(buf, b.count(), b.type(), dest, tag, comm, request);
}

int MPI_Recv_init_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                    MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Recv_init_c", comm, count, datatype)) return err;
  return MPI_Recv_init(buf, b.count(), b.type(), source, tag, comm, request);
}

int MPI_Mrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message,
                MPI_Status *status) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Mrecv_c", MPI_COMM_WORLD, count, datatype)) return err;
  return MPI_Mrecv(buf, b.count(), b.type(), message, status);
}

int MPI_Imrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message,
                 MPI_Request *request) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Imrecv_c", MPI_COMM_WORLD, count, datatype)) return err;
  return MPI_Imrecv(buf, b.count(), b.type(), message, request);
}

int MPI_Psend_init_c(const void *buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                     int dest, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return MPI_Psend_init(buf, partitions, count, datatype, dest, tag, comm, info, request);
}

int MPI_Precv_init_c(void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int source,
                     int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return MPI_Precv_init(buf, partitions, count, datatype, source, tag, comm, info, request);
}

int MPI_Get_count_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count) {
  const device::api_guard guard;
  const char *call = "MPI_Get_count_c";
  if (int err = api::check_not_null(call, nullptr, status, "status")) return err;
  if (int err = api::check_not_null(call, nullptr, count, "count")) return err;
  const device::dtype *t = device::dtype_lookup(datatype);
  if (t == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                               static_cast<unsigned>(datatype));
  }
  const auto bytes = static_cast<std::size_t>(status->iris_bytes);
  *count = t->packed_size == 0           ? 0
           : bytes % t->packed_size == 0 ? static_cast<MPI_Count>(bytes / t->packed_size)
                                         : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int MPI_Get_elements_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count) {
  const device::api_guard guard;
  return MPI_Get_elements_x(status, datatype, count);
}

int MPI_Status_set_elements_c(MPI_Status *status, MPI_Datatype datatype, MPI_Count count) {
  const device::api_guard guard;
  return MPI_Status_set_elements_x(status, datatype, count);
}

}  // extern "C"
