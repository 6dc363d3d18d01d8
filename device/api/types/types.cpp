// MPI bindings for datatypes: constructors, queries, names, Pack/Unpack.
#include <climits>
#include <cstring>
#include <vector>

#include "device/api/check.hpp"
#include "device/api/comm/attr.hpp"
#include "device/api/types/envelope.hpp"
#include "device/datatypes/dtype.hpp"

using namespace iris;
using iris::device::dtype;

namespace {

int type_of(const char *call, MPI_Datatype handle, const dtype *&out) {
  if (int err = api::check_initialized(call)) return err;
  out = device::dtype_lookup(handle);
  if (out != nullptr) return MPI_SUCCESS;
  return device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                             static_cast<unsigned>(handle));
}

int count_ok(const char *call, int count) {
  if (count >= 0) return MPI_SUCCESS;
  return device::error_raise(nullptr, call, MPI_ERR_COUNT, "negative count %d", count);
}

// The common end of every constructor: checks and registers.
int build(const char *call, int count, const int blocklens[], const MPI_Datatype types[],
          std::vector<std::int64_t> displs, bool is_struct, MPI_Datatype *newtype) {
  if (int err = count_ok(call, count)) return err;
  if (int err = api::check_not_null(call, nullptr, newtype, "newtype")) return err;
  std::vector<int> lens(static_cast<std::size_t>(count));
  std::vector<const dtype *> olds(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const auto k = static_cast<std::size_t>(i);
    lens[k] = blocklens[k];
    if (lens[k] < 0) {
      return device::error_raise(nullptr, call, MPI_ERR_ARG, "negative block length %d", lens[k]);
    }
    if (int err = type_of(call, types[is_struct ? k : 0], olds[k])) return err;
  }
  *newtype = device::dtype_register(device::dtype_from_blocks(displs, lens, olds, is_struct));
  return MPI_SUCCESS;
}

// Builders where every block has the same old type.
int build_same(const char *call, int count, const int blocklens[], MPI_Datatype old,
               const std::vector<std::int64_t> &displs, MPI_Datatype *newtype) {
  const MPI_Datatype one[1] = {old};
  return build(call, count, blocklens, one, displs, false, newtype);
}

// A vector is compiled in constant space, whatever its count (see
// device::dtype_vector).
int vector_of(const char *call, int count, int blocklength, std::int64_t stride_bytes,
              MPI_Datatype old, MPI_Datatype *newtype) {
  if (int err = count_ok(call, count)) return err;
  if (int err = api::check_not_null(call, nullptr, newtype, "newtype")) return err;
  if (blocklength < 0) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "negative block length %d", blocklength);
  }
  const dtype *t = nullptr;
  if (int err = type_of(call, old, t)) return err;
  *newtype = device::dtype_register(device::dtype_vector(
      static_cast<std::size_t>(count), static_cast<std::size_t>(blocklength), stride_bytes, *t));
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Type_contiguous(int count, MPI_Datatype old, MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_contiguous";
  if (int err = count_ok(call, count)) return err;
  const int len[1] = {count};
  return api::envelope_made(build_same(call, 1, len, old, {0}, newtype), newtype,
                            MPI_COMBINER_CONTIGUOUS, {count}, {}, {old});
}

int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype old,
                    MPI_Datatype *newtype) {
  const device::api_guard guard;
  const int err = vector_of("MPI_Type_vector", count, blocklength,
                            std::int64_t{stride} * device::dtype_extent(old), old, newtype);
  return api::envelope_made(err, newtype, MPI_COMBINER_VECTOR, {count, blocklength, stride}, {},
                            {old});
}

int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype old,
                            MPI_Datatype *newtype) {
  const device::api_guard guard;
  const int err = vector_of("MPI_Type_create_hvector", count, blocklength, stride, old, newtype);
  return api::envelope_made(err, newtype, MPI_COMBINER_HVECTOR, {count, blocklength}, {stride},
                            {old});
}

int MPI_Type_indexed(int count, const int blocklens[], const int displs[], MPI_Datatype old,
                     MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_indexed";
  if (int err = count_ok(call, count)) return err;
  std::vector<std::int64_t> bytes;
  for (int i = 0; i < count; ++i)
    bytes.push_back(std::int64_t{displs[i]} * device::dtype_extent(old));
  std::vector<int> ints{count};
  ints.insert(ints.end(), blocklens, blocklens + count);
  ints.insert(ints.end(), displs, displs + count);
  return api::envelope_made(build_same(call, count, blocklens, old, bytes, newtype), newtype,
                            MPI_COMBINER_INDEXED, std::move(ints), {}, {old});
}

int MPI_Type_create_hindexed(int count, const int blocklens[], const MPI_Aint displs[],
                             MPI_Datatype old, MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_hindexed";
  if (int err = count_ok(call, count)) return err;
  std::vector<int> ints{count};
  ints.insert(ints.end(), blocklens, blocklens + count);
  return api::envelope_made(build_same(call, count, blocklens, old,
                                       std::vector<std::int64_t>(displs, displs + count), newtype),
                            newtype, MPI_COMBINER_HINDEXED, std::move(ints),
                            std::vector<MPI_Aint>(displs, displs + count), {old});
}

int MPI_Type_create_indexed_block(int count, int blocklength, const int displs[], MPI_Datatype old,
                                  MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_indexed_block";
  if (int err = count_ok(call, count)) return err;
  std::vector<int> lens(static_cast<std::size_t>(count), blocklength);
  std::vector<std::int64_t> bytes;
  for (int i = 0; i < count; ++i)
    bytes.push_back(std::int64_t{displs[i]} * device::dtype_extent(old));
  std::vector<int> ints{count, blocklength};
  ints.insert(ints.end(), displs, displs + count);
  return api::envelope_made(build_same(call, count, lens.data(), old, bytes, newtype), newtype,
                            MPI_COMBINER_INDEXED_BLOCK, std::move(ints), {}, {old});
}

int MPI_Type_create_struct(int count, const int blocklens[], const MPI_Aint displs[],
                           const MPI_Datatype types[], MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_struct";
  if (int err = count_ok(call, count)) return err;
  std::vector<int> ints{count};
  ints.insert(ints.end(), blocklens, blocklens + count);
  return api::envelope_made(build(call, count, blocklens, types,
                                  std::vector<std::int64_t>(displs, displs + count), true, newtype),
                            newtype, MPI_COMBINER_STRUCT, std::move(ints),
                            std::vector<MPI_Aint>(displs, displs + count),
                            std::vector<MPI_Datatype>(types, types + count));
}

int MPI_Type_create_resized(MPI_Datatype old, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_resized";
  const dtype *t = nullptr;
  if (int err = type_of(call, old, t)) return err;
  if (int err = api::check_not_null(call, nullptr, newtype, "newtype")) return err;
  *newtype = device::dtype_register(device::dtype_resized(*t, lb, extent));
  api::envelope_record(*newtype, MPI_COMBINER_RESIZED, {}, {lb, extent}, {old});
  return MPI_SUCCESS;
}

int MPI_Type_dup(MPI_Datatype old, MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_dup";
  const dtype *t = nullptr;
  if (int err = type_of(call, old, t)) return err;
  if (int err = api::check_not_null(call, nullptr, newtype, "newtype")) return err;
  dtype copy = *t;
  copy.predefined = false;
  copy.name.clear();
  const MPI_Datatype made = device::dtype_register(std::move(copy));  // committed if old was
  if (int err = api::attrs_copy(call, nullptr, device::attr_kind::type, old, made)) {
    api::type_release(made);
    return err;
  }
  *newtype = made;
  api::envelope_record(made, MPI_COMBINER_DUP, {}, {}, {old});
  return MPI_SUCCESS;
}

int MPI_Type_commit(MPI_Datatype *handle) {
  const device::api_guard guard;
  const char *call = "MPI_Type_commit";
  if (int err = api::check_not_null(call, nullptr, handle, "datatype")) return err;
  const dtype *t = nullptr;
  if (int err = type_of(call, *handle, t)) return err;
  device::dtype_lookup_mutable(*handle)->committed = true;
  return MPI_SUCCESS;
}

int MPI_Type_free(MPI_Datatype *handle) {
  const device::api_guard guard;
  const char *call = "MPI_Type_free";
  if (int err = api::check_not_null(call, nullptr, handle, "datatype")) return err;
  const dtype *t = nullptr;
  if (int err = type_of(call, *handle, t)) return err;
  if (t->predefined) {
    return device::error_raise(nullptr, call, MPI_ERR_TYPE,
                               "predefined datatype %s cannot be freed", t->name.c_str());
  }
  // The delete callbacks first: when one fails, the type stays.
  if (int err = api::attrs_delete_all(call, nullptr, device::attr_kind::type, *handle)) return err;
  api::envelope_forget(*handle);
  api::type_release(*handle);
  *handle = MPI_DATATYPE_NULL;
  return MPI_SUCCESS;
}

int MPI_Type_size_x(MPI_Datatype handle, MPI_Count *size) {
  const device::api_guard guard;
  const dtype *t = nullptr;
  if (int err = type_of("MPI_Type_size", handle, t)) return err;
  if (int err = api::check_not_null("MPI_Type_size", nullptr, size, "size")) return err;
  *size = static_cast<MPI_Count>(t->size);
  return MPI_SUCCESS;
}

int MPI_Type_size(MPI_Datatype handle, int *size) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Type_size", nullptr, size, "size")) return err;
  MPI_Count n = 0;
  if (int err = MPI_Type_size_x(handle, &n)) return err;
  *size = n <= INT_MAX ? static_cast<int>(n) : MPI_UNDEFINED;  // MPI_Type_size_c has it
  return MPI_SUCCESS;
}

int MPI_Type_get_extent(MPI_Datatype handle, MPI_Aint *lb, MPI_Aint *extent) {
  const device::api_guard guard;
  const char *call = "MPI_Type_get_extent";
  const dtype *t = nullptr;
  if (int err = type_of(call, handle, t)) return err;
  if (lb == nullptr || extent == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "lb or extent is NULL");
  }
  *lb = static_cast<MPI_Aint>(t->lb);
  *extent = static_cast<MPI_Aint>(t->extent);
  return MPI_SUCCESS;
}

int MPI_Type_get_true_extent(MPI_Datatype handle, MPI_Aint *lb, MPI_Aint *extent) {
  const device::api_guard guard;
  const char *call = "MPI_Type_get_true_extent";
  const dtype *t = nullptr;
  if (int err = type_of(call, handle, t)) return err;
  if (lb == nullptr || extent == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "true_lb or true_extent is NULL");
  }
  *lb = static_cast<MPI_Aint>(t->true_lb);
  *extent = static_cast<MPI_Aint>(t->true_extent);
  return MPI_SUCCESS;
}

int MPI_Type_get_name(MPI_Datatype handle, char *name, int *resultlen) {
  const device::api_guard guard;
  const char *call = "MPI_Type_get_name";
  const dtype *t = nullptr;
  if (int err = type_of(call, handle, t)) return err;
  if (name == nullptr || resultlen == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "type_name or resultlen is NULL");
  }
  std::memcpy(name, t->name.c_str(), t->name.size() + 1);
  *resultlen = static_cast<int>(t->name.size());
  return MPI_SUCCESS;
}

int MPI_Type_set_name(MPI_Datatype handle, const char *name) {
  const device::api_guard guard;
  const char *call = "MPI_Type_set_name";
  const dtype *t = nullptr;
  if (int err = type_of(call, handle, t)) return err;
  if (int err = api::check_not_null(call, nullptr, name, "type_name")) return err;
  device::dtype_lookup_mutable(handle)->name.assign(name, strnlen(name, MPI_MAX_OBJECT_NAME - 1));
  return MPI_SUCCESS;
}

int MPI_Get_address(const void *location, MPI_Aint *address) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Get_address", nullptr, address, "address")) return err;
  *address = static_cast<MPI_Aint>(reinterpret_cast<std::uintptr_t>(location));
  return MPI_SUCCESS;
}

int MPI_Pack_size(int incount, MPI_Datatype handle, MPI_Comm comm, int *size) {
  const device::api_guard guard;
  const char *call = "MPI_Pack_size";
  api::communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  const dtype *t = nullptr;
  if (int err = type_of(call, handle, t)) return err;
  if (int err = count_ok(call, incount)) return err;
  if (int err = api::check_not_null(call, c, size, "size")) return err;
  *size = static_cast<int>(static_cast<std::size_t>(incount) * t->packed_size);
  return MPI_SUCCESS;
}

int MPI_Pack(const void *inbuf, int incount, MPI_Datatype handle, void *outbuf, int outsize,
             int *position, MPI_Comm comm) {
  const device::api_guard guard;
  const char *call = "MPI_Pack";
  api::communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  const dtype *t = nullptr;
  if (int err = type_of(call, handle, t)) return err;
  if (int err = count_ok(call, incount)) return err;
  if (position == nullptr || *position < 0) {
    return device::error_raise(c, call, MPI_ERR_ARG, "invalid position");
  }
  const std::size_t bytes = static_cast<std::size_t>(incount) * t->packed_size;
  if (static_cast<std::size_t>(*position) + bytes > static_cast<std::size_t>(outsize)) {
    return device::error_raise(c, call, MPI_ERR_TRUNCATE,
                               "%zu bytes do not fit at position %d of a %d-byte buffer", bytes,
                               *position, outsize);
  }
  device::dtype_pack_range(inbuf, incount, *t, 0, bytes,
                           static_cast<std::byte *>(outbuf) + *position);
  *position += static_cast<int>(bytes);
  return MPI_SUCCESS;
}

int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
               MPI_Datatype handle, MPI_Comm comm) {
  const device::api_guard guard;
  const char *call = "MPI_Unpack";
  api::communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  const dtype *t = nullptr;
  if (int err = type_of(call, handle, t)) return err;
  if (int err = count_ok(call, outcount)) return err;
  if (position == nullptr || *position < 0) {
    return device::error_raise(c, call, MPI_ERR_ARG, "invalid position");
  }
  const std::size_t bytes = static_cast<std::size_t>(outcount) * t->packed_size;
  if (static_cast<std::size_t>(*position) + bytes > static_cast<std::size_t>(insize)) {
    return device::error_raise(c, call, MPI_ERR_TRUNCATE,
                               "%zu bytes asked at position %d of a %d-byte buffer", bytes,
                               *position, insize);
  }
  device::dtype_unpack_range(static_cast<const std::byte *>(inbuf) + *position, 0, bytes, outbuf,
                             outcount, *t);
  *position += static_cast<int>(bytes);
  return MPI_SUCCESS;
}

}  // extern "C"
