// The large-count (`_c`) bindings of the datatype calls. Counts, block
// lengths and displacements that fit the int (or MPI_Aint) calls go through
// them; MPI_Type_contiguous_c and the Pack calls also take counts past
// 2^31-1 of a dense type (bigcount.hpp); the vector, indexed and struct
// constructors take block lengths (and vectors counts, indexed kinds
// displacements) past 2^31-1 of any type, built by the device directly
// (build_wide); a count of blocks past 2^31-1 for the indexed and struct
// kinds (arrays of 2^31 entries) is MPI_ERR_COUNT naming the call.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "device/api/check.hpp"
#include "device/api/types/bigcount.hpp"
#include "device/api/types/envelope.hpp"
#include "device/datatypes/dtype.hpp"

using namespace iris;
using iris::api::big_count;
using iris::api::fits_int;

namespace {

int too_large(const char *call, MPI_Count value, const char *what) {
  return device::error_raise(nullptr, call, MPI_ERR_COUNT,
                             "%s %lld is past 2^31-1, which Iris does not support here", what,
                             static_cast<long long>(value));
}

// `n` MPI_Counts as ints, or MPI_ERR_COUNT.
int ints_of(const char *call, MPI_Count n, const MPI_Count in[], std::vector<int> &out,
            const char *what) {
  out.clear();
  if (n > 0 && in == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "array of %s is NULL", what);
  }
  for (MPI_Count i = 0; i < n; ++i) {
    if (!fits_int(in[i])) return too_large(call, in[i], what);
    out.push_back(static_cast<int>(in[i]));
  }
  return MPI_SUCCESS;
}

int aints_of(const char *call, MPI_Count n, const MPI_Count in[], std::vector<MPI_Aint> &out) {
  out.clear();
  if (n > 0 && in == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "array of displacements is NULL");
  }
  for (MPI_Count i = 0; i < n; ++i) out.push_back(static_cast<MPI_Aint>(in[i]));
  return MPI_SUCCESS;
}

int count_of(const char *call, MPI_Count n, int &out, const char *what) {
  if (!fits_int(n)) return too_large(call, n, what);
  out = static_cast<int>(n);
  return MPI_SUCCESS;
}

// The packed bytes of `count` elements of `type`, or an error.
int packed_bytes(const char *call, MPI_Count count, MPI_Datatype type, const device::dtype *&t,
                 std::size_t &bytes) {
  if (int err = api::check_initialized(call)) return err;
  t = device::dtype_lookup(type);
  if (t == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                               static_cast<unsigned>(type));
  }
  if (count < 0) {
    return device::error_raise(nullptr, call, MPI_ERR_COUNT, "negative count %lld",
                               static_cast<long long>(count));
  }
  bytes = static_cast<std::size_t>(count) * t->packed_size;
  return MPI_SUCCESS;
}

bool all_fit(MPI_Count n, const MPI_Count in[]) {
  for (MPI_Count i = 0; i < n; ++i) {
    if (!fits_int(in[i])) return false;
  }
  return true;
}

// A constructor whose block lengths or displacements do not fit the int
// binding: the device builds blocks of any length directly (a block is one
// node of the type's tree whatever its length). `unit` turns displacements
// into bytes (the old type's extent for the indexed kinds, 1 for the
// h-kinds); `lens` has `count` entries, or one for the _block kinds. Such a
// type has no envelope record: MPI_Type_get_envelope reports it as
// MPI_COMBINER_NAMED.
int build_wide(const char *call, MPI_Count count, const MPI_Count lens[], bool one_len,
               const MPI_Count displs[], std::int64_t unit, const MPI_Datatype types[],
               bool is_struct, MPI_Datatype *newtype) {
  if (int err = api::check_initialized(call)) return err;
  if (count < 0) {
    return device::error_raise(nullptr, call, MPI_ERR_COUNT, "negative count %lld",
                               static_cast<long long>(count));
  }
  if (int err = api::check_not_null(call, nullptr, newtype, "newtype")) return err;
  if (count > 0 && (lens == nullptr || displs == nullptr || types == nullptr)) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG,
                               "an array of block lengths, displacements or types is NULL");
  }
  const auto n = static_cast<std::size_t>(count);
  std::vector<std::int64_t> bytes(n), blocks(n);
  std::vector<const device::dtype *> olds(n);
  for (std::size_t i = 0; i < n; ++i) {
    blocks[i] = lens[one_len ? 0 : i];
    if (blocks[i] < 0) {
      return device::error_raise(nullptr, call, MPI_ERR_ARG, "negative block length %lld",
                                 static_cast<long long>(blocks[i]));
    }
    olds[i] = device::dtype_lookup(types[is_struct ? i : 0]);
    if (olds[i] == nullptr) {
      return device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                                 static_cast<unsigned>(types[is_struct ? i : 0]));
    }
    bytes[i] = displs[i] * unit;
  }
  *newtype = device::dtype_register(device::dtype_from_wide_blocks(bytes, blocks, olds, is_struct));
  return MPI_SUCCESS;
}

// MPI_Type_vector_c and _hvector_c past 2^31-1: the device's vector takes
// any count and block length in constant space.
int vector_wide(const char *call, MPI_Count count, MPI_Count blocklength, std::int64_t stride,
                MPI_Datatype oldtype, MPI_Datatype *newtype) {
  if (int err = api::check_initialized(call)) return err;
  if (count < 0 || blocklength < 0) {
    return device::error_raise(nullptr, call, MPI_ERR_COUNT,
                               "negative count %lld or block length %lld",
                               static_cast<long long>(count), static_cast<long long>(blocklength));
  }
  if (int err = api::check_not_null(call, nullptr, newtype, "newtype")) return err;
  const device::dtype *t = device::dtype_lookup(oldtype);
  if (t == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                               static_cast<unsigned>(oldtype));
  }
  *newtype = device::dtype_register(device::dtype_vector(
      static_cast<std::size_t>(count), static_cast<std::size_t>(blocklength), stride, *t));
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Type_contiguous_c(MPI_Count count, MPI_Datatype oldtype, MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_contiguous_c";
  if (fits_int(count)) return MPI_Type_contiguous(static_cast<int>(count), oldtype, newtype);
  if (int err = api::check_not_null(call, nullptr, newtype, "newtype")) return err;
  big_count b;
  if (int err = b.set(call, MPI_COMM_WORLD, count, oldtype)) return err;
  *newtype = b.release();
  // Built from pieces, it reports what the program asked for.
  api::envelope_record(*newtype, MPI_COMBINER_CONTIGUOUS, {}, {}, {oldtype}, {count});
  return MPI_SUCCESS;
}

int MPI_Type_vector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                      MPI_Datatype oldtype, MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_vector_c";
  if (!fits_int(count) || !fits_int(blocklength) || !fits_int(stride)) {
    return vector_wide(call, count, blocklength, stride * device::dtype_extent(oldtype), oldtype,
                       newtype);
  }
  int n = 0, len = 0, st = 0;
  if (int err = count_of(call, count, n, "count")) return err;
  if (int err = count_of(call, blocklength, len, "blocklength")) return err;
  if (int err = count_of(call, stride, st, "stride")) return err;
  return MPI_Type_vector(n, len, st, oldtype, newtype);
}

int MPI_Type_create_hvector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                              MPI_Datatype oldtype, MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_hvector_c";
  if (!fits_int(count) || !fits_int(blocklength)) {
    return vector_wide(call, count, blocklength, stride, oldtype, newtype);
  }
  int n = 0, len = 0;
  if (int err = count_of(call, count, n, "count")) return err;
  if (int err = count_of(call, blocklength, len, "blocklength")) return err;
  return MPI_Type_create_hvector(n, len, static_cast<MPI_Aint>(stride), oldtype, newtype);
}

int MPI_Type_indexed_c(MPI_Count count, const MPI_Count blocklens[], const MPI_Count displs[],
                       MPI_Datatype oldtype, MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_indexed_c";
  if (fits_int(count) && (!all_fit(count, blocklens) || !all_fit(count, displs))) {
    return build_wide(call, count, blocklens, false, displs, device::dtype_extent(oldtype),
                      &oldtype, false, newtype);
  }
  int n = 0;
  std::vector<int> lens, ds;
  if (int err = count_of(call, count, n, "count")) return err;
  if (int err = ints_of(call, count, blocklens, lens, "block length")) return err;
  if (int err = ints_of(call, count, displs, ds, "displacement")) return err;
  return MPI_Type_indexed(n, lens.data(), ds.data(), oldtype, newtype);
}

int MPI_Type_create_hindexed_c(MPI_Count count, const MPI_Count blocklens[],
                               const MPI_Count displs[], MPI_Datatype oldtype,
                               MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_hindexed_c";
  if (fits_int(count) && !all_fit(count, blocklens)) {
    return build_wide(call, count, blocklens, false, displs, 1, &oldtype, false, newtype);
  }
  int n = 0;
  std::vector<int> lens;
  std::vector<MPI_Aint> ds;
  if (int err = count_of(call, count, n, "count")) return err;
  if (int err = ints_of(call, count, blocklens, lens, "block length")) return err;
  if (int err = aints_of(call, count, displs, ds)) return err;
  return MPI_Type_create_hindexed(n, lens.data(), ds.data(), oldtype, newtype);
}

int MPI_Type_create_indexed_block_c(MPI_Count count, MPI_Count blocklength,
                                    const MPI_Count displs[], MPI_Datatype oldtype,
                                    MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_indexed_block_c";
  if (fits_int(count) && (!fits_int(blocklength) || !all_fit(count, displs))) {
    return build_wide(call, count, &blocklength, true, displs, device::dtype_extent(oldtype),
                      &oldtype, false, newtype);
  }
  int n = 0, len = 0;
  std::vector<int> ds;
  if (int err = count_of(call, count, n, "count")) return err;
  if (int err = count_of(call, blocklength, len, "blocklength")) return err;
  if (int err = ints_of(call, count, displs, ds, "displacement")) return err;
  return MPI_Type_create_indexed_block(n, len, ds.data(), oldtype, newtype);
}

int MPI_Type_create_hindexed_block_c(MPI_Count count, MPI_Count blocklength,
                                     const MPI_Count displs[], MPI_Datatype oldtype,
                                     MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_hindexed_block_c";
  if (fits_int(count) && !fits_int(blocklength)) {
    return build_wide(call, count, &blocklength, true, displs, 1, &oldtype, false, newtype);
  }
  int n = 0, len = 0;
  std::vector<MPI_Aint> ds;
  if (int err = count_of(call, count, n, "count")) return err;
  if (int err = count_of(call, blocklength, len, "blocklength")) return err;
  if (int err = aints_of(call, count, displs, ds)) return err;
  return MPI_Type_create_hindexed_block(n, len, ds.data(), oldtype, newtype);
}

int MPI_Type_create_struct_c(MPI_Count count, const MPI_Count blocklens[], const MPI_Count displs[],
                             const MPI_Datatype types[], MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_struct_c";
  if (fits_int(count) && !all_fit(count, blocklens)) {
    return build_wide(call, count, blocklens, false, displs, 1, types, true, newtype);
  }
  int n = 0;
  std::vector<int> lens;
  std::vector<MPI_Aint> ds;
  if (int err = count_of(call, count, n, "count")) return err;
  if (int err = ints_of(call, count, blocklens, lens, "block length")) return err;
  if (int err = aints_of(call, count, displs, ds)) return err;
  return MPI_Type_create_struct(n, lens.data(), ds.data(), types, newtype);
}

int MPI_Type_create_resized_c(MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent,
                              MPI_Datatype *newtype) {
  const device::api_guard guard;
  return MPI_Type_create_resized(oldtype, static_cast<MPI_Aint>(lb), static_cast<MPI_Aint>(extent),
                                 newtype);
}

int MPI_Type_get_extent_c(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent) {
  const device::api_guard guard;
  return MPI_Type_get_extent_x(datatype, lb, extent);
}

int MPI_Type_get_true_extent_c(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent) {
  const device::api_guard guard;
  return MPI_Type_get_true_extent_x(datatype, lb, extent);
}

int MPI_Type_size_c(MPI_Datatype datatype, MPI_Count *size) {
  const device::api_guard guard;
  return MPI_Type_size_x(datatype, size);
}

int MPI_Pack_size_c(MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm, MPI_Count *size) {
  const device::api_guard guard;
  const char *call = "MPI_Pack_size_c";
  api::communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, size, "size")) return err;
  const device::dtype *t = nullptr;
  std::size_t bytes = 0;
  if (int err = packed_bytes(call, incount, datatype, t, bytes)) return err;
  *size = static_cast<MPI_Count>(bytes);
  return MPI_SUCCESS;
}

int MPI_Pack_c(const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf,
               MPI_Count outsize, MPI_Count *position, MPI_Comm comm) {
  const device::api_guard guard;
  const char *call = "MPI_Pack_c";
  api::communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  big_count b;
  if (int err = b.set(call, comm, incount, datatype)) return err;
  const device::dtype *t = nullptr;
  std::size_t bytes = 0;
  if (int err = packed_bytes(call, b.count(), b.type(), t, bytes)) return err;
  if (position == nullptr || *position < 0) {
    return device::error_raise(c, call, MPI_ERR_ARG, "invalid position");
  }
  if (static_cast<std::size_t>(*position) + bytes > static_cast<std::size_t>(outsize)) {
    return device::error_raise(c, call, MPI_ERR_TRUNCATE,
                               "%zu bytes do not fit at position %lld of a %lld-byte buffer", bytes,
                               static_cast<long long>(*position), static_cast<long long>(outsize));
  }
  device::dtype_pack_range(inbuf, b.count(), *t, 0, bytes,
                           static_cast<std::byte *>(outbuf) + *position);
  *position += static_cast<MPI_Count>(bytes);
  return MPI_SUCCESS;
}

int MPI_Unpack_c(const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf,
                 MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm) {
  const device::api_guard guard;
  const char *call = "MPI_Unpack_c";
  api::communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  big_count b;
  if (int err = b.set(call, comm, outcount, datatype)) return err;
  const device::dtype *t = nullptr;
  std::size_t bytes = 0;
  if (int err = packed_bytes(call, b.count(), b.type(), t, bytes)) return err;
  if (position == nullptr || *position < 0) {
    return device::error_raise(c, call, MPI_ERR_ARG, "invalid position");
  }
  if (static_cast<std::size_t>(*position) + bytes > static_cast<std::size_t>(insize)) {
    return device::error_raise(c, call, MPI_ERR_TRUNCATE,
                               "%zu bytes asked at position %lld of a %lld-byte buffer", bytes,
                               static_cast<long long>(*position), static_cast<long long>(insize));
  }
  device::dtype_unpack_range(static_cast<const std::byte *>(inbuf) + *position, 0, bytes, outbuf,
                             b.count(), *t);
  *position += static_cast<MPI_Count>(bytes);
  return MPI_SUCCESS;
}

}  // extern "C"
