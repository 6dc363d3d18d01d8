// Datatype calls beside the constructors of types.cpp: hindexed_block, the
// MPI_Count extent queries, address arithmetic, Type_match_size, and the
// MPI-1 names removed in MPI-3 that old codes still call (as MPICH keeps
// them): MPI_Address, Type_extent, Type_lb, Type_ub, Type_struct,
// Type_hvector, Type_hindexed.
#include <cstdint>
#include <vector>

#include "device/api/check.hpp"
#include "device/api/types/envelope.hpp"

using namespace iris;

namespace {

const device::dtype *type_checked(const char *call, MPI_Datatype handle, int &err) {
  err = api::check_initialized(call);
  if (err != MPI_SUCCESS) return nullptr;
  const device::dtype *t = device::dtype_lookup(handle);
  if (t == nullptr) {
    err = device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                              static_cast<unsigned>(handle));
  }
  return t;
}

}  // namespace

extern "C" {

int MPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint displs[],
                                   MPI_Datatype oldtype, MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_hindexed_block";
  if (int err = api::check_initialized(call)) return err;
  if (count < 0) {
    return device::error_raise(nullptr, call, MPI_ERR_COUNT, "negative count %d", count);
  }
  if (count > 0) {
    if (int err = api::check_not_null(call, nullptr, displs, "array_of_displacements")) return err;
  }
  std::vector<int> lens(static_cast<std::size_t>(count), blocklength);
  return api::envelope_made(MPI_Type_create_hindexed(count, lens.data(), displs, oldtype, newtype),
                            newtype, MPI_COMBINER_HINDEXED_BLOCK, {count, blocklength},
                            std::vector<MPI_Aint>(displs, displs + count), {oldtype});
}

int MPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent) {
  const device::api_guard guard;
  const char *call = "MPI_Type_get_extent_x";
  int err = MPI_SUCCESS;
  const device::dtype *t = type_checked(call, datatype, err);
  if (t == nullptr) return err;
  if (lb == nullptr || extent == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "lb or extent is NULL");
  }
  *lb = t->lb;
  *extent = t->extent;
  return MPI_SUCCESS;
}

int MPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent) {
  const device::api_guard guard;
  const char *call = "MPI_Type_get_true_extent_x";
  int err = MPI_SUCCESS;
  const device::dtype *t = type_checked(call, datatype, err);
  if (t == nullptr) return err;
  if (lb == nullptr || extent == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "true_lb or true_extent is NULL");
  }
  *lb = t->true_lb;
  *extent = t->true_extent;
  return MPI_SUCCESS;
}

MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp) {
  return static_cast<MPI_Aint>(static_cast<std::uintptr_t>(base) +
                               static_cast<std::uintptr_t>(disp));
}

MPI_Aint MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2) {
  return static_cast<MPI_Aint>(static_cast<std::uintptr_t>(addr1) -
                               static_cast<std::uintptr_t>(addr2));
}

// MPI-4.1: the predefined pair type of (value_type, index_type), or
// MPI_DATATYPE_NULL when there is none.
int MPI_Type_get_value_index(MPI_Datatype value_type, MPI_Datatype index_type,
                             MPI_Datatype *pair_type) {
  const device::api_guard guard;
  const char *call = "MPI_Type_get_value_index";
  int err = MPI_SUCCESS;
  if (type_checked(call, value_type, err) == nullptr) return err;
  if (type_checked(call, index_type, err) == nullptr) return err;
  if (int e = api::check_not_null(call, nullptr, pair_type, "pair_type")) return e;
  *pair_type = MPI_DATATYPE_NULL;
  if (index_type == MPI_INT) {
    *pair_type = value_type == MPI_FLOAT         ? MPI_FLOAT_INT
                 : value_type == MPI_DOUBLE      ? MPI_DOUBLE_INT
                 : value_type == MPI_LONG        ? MPI_LONG_INT
                 : value_type == MPI_INT         ? MPI_2INT
                 : value_type == MPI_SHORT       ? MPI_SHORT_INT
                 : value_type == MPI_LONG_DOUBLE ? MPI_LONG_DOUBLE_INT
                                                 : MPI_DATATYPE_NULL;
  } else if (index_type == MPI_INTEGER && value_type == MPI_INTEGER) {
    *pair_type = MPI_2INTEGER;
  } else if (index_type == MPI_REAL && value_type == MPI_REAL) {
    *pair_type = MPI_2REAL;
  } else if (index_type == MPI_DOUBLE_PRECISION && value_type == MPI_DOUBLE_PRECISION) {
    *pair_type = MPI_2DOUBLE_PRECISION;
  }
  return MPI_SUCCESS;
}

// MPI-1 names removed in MPI-3.
int MPI_Address(const void *location, MPI_Aint *address) {
  const device::api_guard guard;
  return MPI_Get_address(location, address);
}

int MPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent) {
  const device::api_guard guard;
  const char *call = "MPI_Type_extent";
  int err = MPI_SUCCESS;
  const device::dtype *t = type_checked(call, datatype, err);
  if (t == nullptr) return err;
  if (int e = api::check_not_null(call, nullptr, extent, "extent")) return e;
  *extent = static_cast<MPI_Aint>(t->extent);
  return MPI_SUCCESS;
}

int MPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement) {
  const device::api_guard guard;
  const char *call = "MPI_Type_lb";
  int err = MPI_SUCCESS;
  const device::dtype *t = type_checked(call, datatype, err);
  if (t == nullptr) return err;
  if (int e = api::check_not_null(call, nullptr, displacement, "displacement")) return e;
  *displacement = static_cast<MPI_Aint>(t->lb);
  return MPI_SUCCESS;
}

int MPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement) {
  const device::api_guard guard;
  const char *call = "MPI_Type_ub";
  int err = MPI_SUCCESS;
  const device::dtype *t = type_checked(call, datatype, err);
  if (t == nullptr) return err;
  if (int e = api::check_not_null(call, nullptr, displacement, "displacement")) return e;
  *displacement = static_cast<MPI_Aint>(t->lb + t->extent);
  return MPI_SUCCESS;
}

int MPI_Type_struct(int count, int blocklens[], MPI_Aint displs[], MPI_Datatype types[],
                    MPI_Datatype *newtype) {
  const device::api_guard guard;
  return MPI_Type_create_struct(count, blocklens, displs, types, newtype);
}

int MPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                     MPI_Datatype *newtype) {
  const device::api_guard guard;
  return MPI_Type_create_hvector(count, blocklength, stride, oldtype, newtype);
}

int MPI_Type_hindexed(int count, int blocklens[], MPI_Aint displs[], MPI_Datatype oldtype,
                      MPI_Datatype *newtype) {
  const device::api_guard guard;
  return MPI_Type_create_hindexed(count, blocklens, displs, oldtype, newtype);
}

}  // extern "C"
