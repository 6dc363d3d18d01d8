#include "device/datatypes/datatype.hpp"

#include <cstdint>
#include <iterator>

#include "include/mpi.h"

namespace iris::device {
namespace {

struct builtin {
  MPI_Datatype handle;
  int size;
  const char *name;
};

// Indexed by the low byte of the handle.
constexpr builtin builtins[] = {
    {MPI_DATATYPE_NULL, 0, "MPI_DATATYPE_NULL"},
    {MPI_CHAR, 1, "MPI_CHAR"},
    {MPI_SIGNED_CHAR, 1, "MPI_SIGNED_CHAR"},
    {MPI_UNSIGNED_CHAR, 1, "MPI_UNSIGNED_CHAR"},
    {MPI_BYTE, 1, "MPI_BYTE"},
    {MPI_SHORT, 2, "MPI_SHORT"},
    {MPI_UNSIGNED_SHORT, 2, "MPI_UNSIGNED_SHORT"},
    {MPI_INT, 4, "MPI_INT"},
    {MPI_UNSIGNED, 4, "MPI_UNSIGNED"},
    {MPI_LONG, 8, "MPI_LONG"},
    {MPI_UNSIGNED_LONG, 8, "MPI_UNSIGNED_LONG"},
    {MPI_LONG_LONG_INT, 8, "MPI_LONG_LONG_INT"},
    {MPI_UNSIGNED_LONG_LONG, 8, "MPI_UNSIGNED_LONG_LONG"},
    {MPI_FLOAT, 4, "MPI_FLOAT"},
    {MPI_DOUBLE, 8, "MPI_DOUBLE"},
    {MPI_LONG_DOUBLE, 16, "MPI_LONG_DOUBLE"},
    {MPI_WCHAR, 4, "MPI_WCHAR"},
    {MPI_C_BOOL, 1, "MPI_C_BOOL"},
    {MPI_INT8_T, 1, "MPI_INT8_T"},
    {MPI_INT16_T, 2, "MPI_INT16_T"},
    {MPI_INT32_T, 4, "MPI_INT32_T"},
    {MPI_INT64_T, 8, "MPI_INT64_T"},
    {MPI_UINT8_T, 1, "MPI_UINT8_T"},
    {MPI_UINT16_T, 2, "MPI_UINT16_T"},
    {MPI_UINT32_T, 4, "MPI_UINT32_T"},
    {MPI_UINT64_T, 8, "MPI_UINT64_T"},
    {MPI_AINT, 8, "MPI_AINT"},
    {MPI_OFFSET, 8, "MPI_OFFSET"},
    {MPI_COUNT, 8, "MPI_COUNT"},
    {MPI_PACKED, 1, "MPI_PACKED"},
    {MPI_C_FLOAT_COMPLEX, 8, "MPI_C_COMPLEX"},  // its synonym, the MPI-2.2 name
    {MPI_C_DOUBLE_COMPLEX, 16, "MPI_C_DOUBLE_COMPLEX"},
    {MPI_C_LONG_DOUBLE_COMPLEX, 32, "MPI_C_LONG_DOUBLE_COMPLEX"},
    {MPI_FLOAT_INT, 8, "MPI_FLOAT_INT"},
    {MPI_DOUBLE_INT, 12, "MPI_DOUBLE_INT"},
    {MPI_LONG_INT, 12, "MPI_LONG_INT"},
    {MPI_2INT, 8, "MPI_2INT"},
    {MPI_SHORT_INT, 6, "MPI_SHORT_INT"},
    {MPI_LONG_DOUBLE_INT, 20, "MPI_LONG_DOUBLE_INT"},
    // Fortran and C++ (their kernels: op.cpp)
    {MPI_CHARACTER, 1, "MPI_CHARACTER"},
    {MPI_LOGICAL, 4, "MPI_LOGICAL"},
    {MPI_INTEGER, 4, "MPI_INTEGER"},
    {MPI_REAL, 4, "MPI_REAL"},
    {MPI_DOUBLE_PRECISION, 8, "MPI_DOUBLE_PRECISION"},
    {MPI_COMPLEX, 8, "MPI_COMPLEX"},
    {MPI_DOUBLE_COMPLEX, 16, "MPI_DOUBLE_COMPLEX"},
    {MPI_INTEGER1, 1, "MPI_INTEGER1"},
    {MPI_INTEGER2, 2, "MPI_INTEGER2"},
    {MPI_INTEGER4, 4, "MPI_INTEGER4"},
    {MPI_INTEGER8, 8, "MPI_INTEGER8"},
    {MPI_REAL4, 4, "MPI_REAL4"},
    {MPI_REAL8, 8, "MPI_REAL8"},
    {MPI_REAL16, 16, "MPI_REAL16"},
    {MPI_COMPLEX8, 8, "MPI_COMPLEX8"},
    {MPI_COMPLEX16, 16, "MPI_COMPLEX16"},
    {MPI_COMPLEX32, 32, "MPI_COMPLEX32"},
    {MPI_2INTEGER, 8, "MPI_2INTEGER"},
    {MPI_2REAL, 8, "MPI_2REAL"},
    {MPI_2DOUBLE_PRECISION, 16, "MPI_2DOUBLE_PRECISION"},
    {MPI_CXX_BOOL, 1, "MPI_CXX_BOOL"},
    {MPI_CXX_FLOAT_COMPLEX, 8, "MPI_CXX_FLOAT_COMPLEX"},
    {MPI_CXX_DOUBLE_COMPLEX, 16, "MPI_CXX_DOUBLE_COMPLEX"},
    {MPI_CXX_LONG_DOUBLE_COMPLEX, 32, "MPI_CXX_LONG_DOUBLE_COMPLEX"},
    {MPI_INTEGER16, 16, "MPI_INTEGER16"},
    // MPI-1's bound markers: no data (dtype.cpp's predefined() marks them)
    {MPI_LB, 0, "MPI_LB"},
    {MPI_UB, 0, "MPI_UB"},
    {MPI_LOGICAL1, 1, "MPI_LOGICAL1"},
    {MPI_LOGICAL2, 2, "MPI_LOGICAL2"},
    {MPI_LOGICAL4, 4, "MPI_LOGICAL4"},
    {MPI_LOGICAL8, 8, "MPI_LOGICAL8"},
};

static_assert(sizeof(long) == 8 && sizeof(long double) == 16 && sizeof(wchar_t) == 4,
              "the predefined datatype extents assume the x86-64 Linux ABI");

const builtin *lookup(int handle) {
  const auto index = static_cast<std::uint32_t>(handle) & 0xffU;
  if (index == 0 || index >= std::size(builtins)) return nullptr;
  return builtins[index].handle == handle ? &builtins[index] : nullptr;
}

}  // namespace

std::size_t datatype_extent(int handle) {
  if (lookup(handle) == nullptr) return 0;
  return (static_cast<std::uint32_t>(handle) >> 8) & 0xffffU;
}

const char *datatype_name(int handle) {
  const builtin *b = lookup(handle);
  return b != nullptr ? b->name : nullptr;
}

int datatype_handle(unsigned index) {
  if (index == 0 || index >= std::size(builtins)) return 0;
  return builtins[index].handle;
}

int datatype_size(int handle) {
  const builtin *b = lookup(handle);
  return b != nullptr ? b->size : 0;
}

}  // namespace iris::device
