#include "device/datatypes/op.hpp"

#include <algorithm>
#include <climits>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <type_traits>
#include <vector>

#include "device/base/handle.hpp"
#include "device/datatypes/datatype.hpp"
#include "device/datatypes/dtype.hpp"

namespace iris::device {
namespace {

constexpr int predefined_ops = 15;  // MPI_OP_NULL and MPI_MAX .. MPI_NO_OP

enum op_index : int {
  max = 1,
  min,
  sum,
  prod,
  land,
  band,
  lor,
  bor,
  lxor,
  bxor,
  maxloc,
  minloc,
  replace,
  no_op
};

constexpr const char *op_names[predefined_ops] = {
    "MPI_OP_NULL", "MPI_MAX",    "MPI_MIN",    "MPI_SUM",     "MPI_PROD",
    "MPI_LAND",    "MPI_BAND",   "MPI_LOR",    "MPI_BOR",     "MPI_LXOR",
    "MPI_BXOR",    "MPI_MAXLOC", "MPI_MINLOC", "MPI_REPLACE", "MPI_NO_OP"};

struct user_op {
  MPI_User_function *function = nullptr;
  MPI_User_function_c *function_c = nullptr;  // MPI_Op_create_c
  bool commutative = false;
  bool freed = false;  // MPI_Op_free came while operations held it
  int holds = 0;       // pending operations that use it (op_hold)
  bool live() const { return function != nullptr || function_c != nullptr; }
};
// Indexed by handle index - predefined_ops; a free slot has no function.
std::vector<user_op> user_ops;

int index_of(int handle) {
  if (!handle_is(handle, handle_kind::op)) return -1;
  return static_cast<int>(handle_index(handle));
}

// The slot of a user op, freed or not, while it has a function.
user_op *user_slot(int handle) {
  const int index = index_of(handle) - predefined_ops;
  if (index < 0 || index >= static_cast<int>(user_ops.size())) return nullptr;
  return user_ops[index].live() ? &user_ops[index] : nullptr;
}

// A user op whose handle is live (not freed).
const user_op *user_lookup(int handle) {
  const user_op *u = user_slot(handle);
  return u != nullptr && !u->freed ? u : nullptr;
}

// --- kernels: inout[i] = in[i] o inout[i] -------------------------------

using kernel = void (*)(const void *in, void *inout, std::size_t count);

// The operands never overlap but at the same element (in == inout), which
// an element-wise loop computes alike in any order; so the loops vectorize
// without run-time alias checks. The build's -O2 keeps GCC's "very cheap"
// vectorizer, which gives up on loops that need a remainder loop: these ask
// for the dynamic cost model (8x on MPI_CHAR sums, 2x on int). On x86-64
// each loop is built twice, for AVX2 and for the baseline, and `loop` takes
// the one the processor runs: SSE2 has no 32- or 64-bit integer max, min or
// multiply, nor a byte multiply (bench/ops.c, 256 KiB in cache, us: long
// max 15.9 -> 7.5, int max 8.9 -> 5.4, int prod 11.1 -> 5.4, long land
// 18.0 -> 5.9; none slower). The choice is made in the program, not by
// the loader (an ifunc, target_clones): an ifunc's resolver runs before
// ThreadSanitizer's runtime has started, and crashed under it.
template <typename T, typename F>
[[gnu::always_inline]] inline void loop_body(const void *in, void *inout, std::size_t count) {
  const T *__restrict a = static_cast<const T *>(in);
  T *__restrict b = static_cast<T *>(inout);
  for (std::size_t i = 0; i < count; ++i) b[i] = F::apply(a[i], b[i]);
}

template <typename T, typename F>
[[gnu::optimize("tree-vectorize", "vect-cost-model=dynamic")]] void loop_baseline(
    const void *in, void *inout, std::size_t count) {
  loop_body<T, F>(in, inout, count);
}

#if defined(__x86_64__)
template <typename T, typename F>
[[gnu::optimize("tree-vectorize", "vect-cost-model=dynamic"), gnu::target("avx2")]] void loop_avx2(
    const void *in, void *inout, std::size_t count) {
  loop_body<T, F>(in, inout, count);
}

bool cpu_has_avx2() {
  static const bool yes = [] {
    __builtin_cpu_init();  // may run before libgcc's own constructor
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return yes;
}
#endif

template <typename T, typename F>
void loop(const void *in, void *inout, std::size_t count) {
#if defined(__x86_64__)
  if (cpu_has_avx2()) {
    loop_avx2<T, F>(in, inout, count);
    return;
  }
#endif
  loop_baseline<T, F>(in, inout, count);
}

// Integer sums and products wrap (in unsigned arithmetic, at least as wide as
// unsigned int) instead of overflowing, which C++ leaves undefined.
template <typename T>
using wrap_t = std::common_type_t<std::make_unsigned_t<T>, unsigned>;

struct f_max {
  template <typename T>
  static T apply(T a, T b) {
    return a > b ? a : b;
  }
};
struct f_min {
  template <typename T>
  static T apply(T a, T b) {
    return a < b ? a : b;
  }
};
struct f_sum {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<wrap_t<T>>(a) + static_cast<wrap_t<T>>(b));
    } else {
      return a + b;
    }
  }
};
struct f_prod {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<wrap_t<T>>(a) * static_cast<wrap_t<T>>(b));
    } else {
      return a * b;
    }
  }
};
struct f_land {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a != T{} && b != T{});
  }
};
struct f_lor {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a != T{} || b != T{});
  }
};
struct f_lxor {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>((a != T{}) != (b != T{}));
  }
};
struct f_band {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a & b);
  }
};
struct f_bor {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a | b);
  }
};
struct f_bxor {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a ^ b);
  }
};

// The C layouts of MPI_FLOAT_INT .. MPI_LONG_DOUBLE_INT.
template <typename V>
struct value_index {
  V value;
  int index;
};
static_assert(sizeof(value_index<double>) == 16 && sizeof(value_index<short>) == 8 &&
              sizeof(value_index<long double>) == 32);

// Ties keep the lower index, whichever operand holds it.
struct f_maxloc {
  template <typename P>
  static P apply(P a, P b) {
    if (a.value > b.value) return a;
    if (b.value > a.value) return b;
    return {a.value, std::min(a.index, b.index)};
  }
};
struct f_minloc {
  template <typename P>
  static P apply(P a, P b) {
    if (a.value < b.value) return a;
    if (b.value < a.value) return b;
    return {a.value, std::min(a.index, b.index)};
  }
};

template <typename T>
kernel arithmetic(int op) {
  switch (op) {
    case max:
      return loop<T, f_max>;
    case min:
      return loop<T, f_min>;
    case sum:
      return loop<T, f_sum>;
    case prod:
      return loop<T, f_prod>;
    default:
      return nullptr;
  }
}

template <typename T>
kernel logical(int op) {
  switch (op) {
    case land:
      return loop<T, f_land>;
    case lor:
      return loop<T, f_lor>;
    case lxor:
      return loop<T, f_lxor>;
    default:
      return nullptr;
  }
}

template <typename T>
kernel bitwise(int op) {
  switch (op) {
    case band:
      return loop<T, f_band>;
    case bor:
      return loop<T, f_bor>;
    case bxor:
      return loop<T, f_bxor>;
    default:
      return nullptr;
  }
}

__extension__ using int128 = __int128;  // gfortran's INTEGER(16)

// C integer types take every op but the pair ones. So do the
// multi-language types (MPI_AINT, MPI_OFFSET, MPI_COUNT): the standard's
// table leaves them out of the logical ops, but MPICH and Open MPI take
// them there too, and MPICH's coll/allred tests use them.
template <typename T>
kernel integer(int op) {
  if (kernel k = arithmetic<T>(op)) return k;
  if (kernel k = bitwise<T>(op)) return k;
  return logical<T>(op);
}

template <typename T>
kernel complex(int op) {
  if (op == sum) return loop<T, f_sum>;
  if (op == prod) return loop<T, f_prod>;
  return nullptr;
}

// As loop, field by field: a pair type is its value and its int, not the
// C struct's tail padding, so the last pair of a buffer may end right after
// its int (a typed_image spans exactly the type's bytes).
template <typename V, typename F>
void loop_pairs(const void *in, void *inout, std::size_t count) {
  using pair = value_index<V>;
  const auto *a = static_cast<const std::byte *>(in);
  auto *b = static_cast<std::byte *>(inout);
  for (std::size_t i = 0; i < count; ++i, a += sizeof(pair), b += sizeof(pair)) {
    pair x{};
    pair y{};
    std::memcpy(&x.value, a + offsetof(pair, value), sizeof(V));
    std::memcpy(&x.index, a + offsetof(pair, index), sizeof(int));
    std::memcpy(&y.value, b + offsetof(pair, value), sizeof(V));
    std::memcpy(&y.index, b + offsetof(pair, index), sizeof(int));
    const pair r = F::apply(x, y);
    std::memcpy(b + offsetof(pair, value), &r.value, sizeof(V));
    std::memcpy(b + offsetof(pair, index), &r.index, sizeof(int));
  }
}

template <typename V>
kernel location(int op) {
  if (op == maxloc) return loop_pairs<V, f_maxloc>;
  if (op == minloc) return loop_pairs<V, f_minloc>;
  return nullptr;
}

kernel kernel_for(int op, int datatype) {
  switch (static_cast<std::uint32_t>(datatype) & 0xffU) {
    case 1:  // MPI_CHAR: the C char integer type, as MPICH and Open MPI take it
      return integer<char>(op);
    case 2:
      return integer<signed char>(op);
    case 3:
      return integer<unsigned char>(op);
    case 4:
      return bitwise<unsigned char>(op);  // MPI_BYTE
    case 5:
      return integer<short>(op);
    case 6:
      return integer<unsigned short>(op);
    case 7:
      return integer<int>(op);
    case 8:
      return integer<unsigned>(op);
    case 9:
      return integer<long>(op);
    case 10:
      return integer<unsigned long>(op);
    case 11:
      return integer<long long>(op);
    case 12:
      return integer<unsigned long long>(op);
    case 13:
      return arithmetic<float>(op);
    case 14:
      return arithmetic<double>(op);
    case 15:
      return arithmetic<long double>(op);
    case 17:
      return logical<bool>(op);
    case 18:
      return integer<std::int8_t>(op);
    case 19:
      return integer<std::int16_t>(op);
    case 20:
      return integer<std::int32_t>(op);
    case 21:
      return integer<std::int64_t>(op);
    case 22:
      return integer<std::uint8_t>(op);
    case 23:
      return integer<std::uint16_t>(op);
    case 24:
      return integer<std::uint32_t>(op);
    case 25:
      return integer<std::uint64_t>(op);
    case 26:
      return integer<MPI_Aint>(op);
    case 27:
      return integer<MPI_Offset>(op);
    case 28:
      return integer<MPI_Count>(op);
    case 30:
      return complex<std::complex<float>>(op);
    case 31:
      return complex<std::complex<double>>(op);
    case 32:
      return complex<std::complex<long double>>(op);
    case 33:
      return location<float>(op);
    case 34:
      return location<double>(op);
    case 35:
      return location<long>(op);
    case 36:
      return location<int>(op);
    case 37:
      return location<short>(op);
    case 38:
      return location<long double>(op);
    // Fortran and C++ types: the kernels of their C equivalents.
    case 40:  // MPI_LOGICAL
      return logical<int>(op);
    case 41:  // MPI_INTEGER
    case 48:  // MPI_INTEGER4
      return integer<std::int32_t>(op);
    case 42:  // MPI_REAL
    case 50:  // MPI_REAL4
      return arithmetic<float>(op);
    case 43:  // MPI_DOUBLE_PRECISION
    case 51:  // MPI_REAL8
      return arithmetic<double>(op);
    case 52:  // MPI_REAL16
      return arithmetic<long double>(op);
    case 44:  // MPI_COMPLEX
    case 53:  // MPI_COMPLEX8
    case 60:  // MPI_CXX_FLOAT_COMPLEX
      return complex<std::complex<float>>(op);
    case 45:  // MPI_DOUBLE_COMPLEX
    case 54:  // MPI_COMPLEX16
    case 61:  // MPI_CXX_DOUBLE_COMPLEX
      return complex<std::complex<double>>(op);
    case 55:  // MPI_COMPLEX32
    case 62:  // MPI_CXX_LONG_DOUBLE_COMPLEX
      return complex<std::complex<long double>>(op);
    case 46:  // MPI_INTEGER1
      return integer<std::int8_t>(op);
    case 47:  // MPI_INTEGER2
      return integer<std::int16_t>(op);
    case 49:  // MPI_INTEGER8
      return integer<std::int64_t>(op);
    case 63:  // MPI_INTEGER16
      return integer<int128>(op);
    case 56:  // MPI_2INTEGER
      return location<int>(op);
    case 59:  // MPI_CXX_BOOL
      return logical<bool>(op);
    case 66:  // MPI_LOGICAL1
      return logical<std::int8_t>(op);
    case 67:  // MPI_LOGICAL2
      return logical<std::int16_t>(op);
    case 68:  // MPI_LOGICAL4
      return logical<std::int32_t>(op);
    case 69:  // MPI_LOGICAL8
      return logical<std::int64_t>(op);
    default:
      return nullptr;  // MPI_WCHAR, MPI_PACKED, MPI_CHARACTER: no arithmetic
  }
}

// What the standard allows each predefined op on, for the error message.
const char *allowed_types(int op) {
  switch (op) {
    case max:
    case min:
      return "integer and floating-point types";
    case sum:
    case prod:
      return "integer, floating-point and complex types";
    case land:
    case lor:
    case lxor:
      return "C integer types and MPI_C_BOOL";
    case band:
    case bor:
    case bxor:
      return "integer types and MPI_BYTE";
    default:
      return "the pair types (MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, "
             "MPI_SHORT_INT, MPI_LONG_DOUBLE_INT)";
  }
}

}  // namespace

bool op_valid(int handle) {
  const int index = index_of(handle);
  if (index > 0 && index < predefined_ops) return true;
  return user_lookup(handle) != nullptr;
}

bool op_commutative(int handle) {
  const int index = index_of(handle);
  if (index == replace || index == no_op) return false;
  if (index > 0 && index < predefined_ops) return true;
  const user_op *u = user_lookup(handle);
  return u != nullptr && u->commutative;
}

const char *op_name(int handle) {
  const int index = index_of(handle);
  return index >= 0 && index < predefined_ops ? op_names[index] : "user op";
}

const char *op_type_mismatch(int op, int datatype) {
  if (!op_valid(op)) return "invalid op";
  const dtype *t = dtype_lookup(datatype);
  if (t == nullptr) return "invalid datatype";
  if (t->wide_of != 0) return op_type_mismatch(op, t->wide_of);
  const int index = index_of(op);
  // A user op decides for itself, on any type; the predefined ones need a
  // predefined type, as the standard says; replace and no-op only move data.
  if (index >= predefined_ops) return nullptr;
  if (!t->predefined) return "predefined types only";
  if (index == replace || index == no_op) return nullptr;
  return kernel_for(index, datatype) != nullptr ? nullptr : allowed_types(index);
}

void op_apply(int op, const void *in, void *inout, std::size_t count, int datatype,
              std::int64_t extent) {
  if (const dtype *t = dtype_lookup(datatype); t != nullptr && t->wide_of != 0) {
    count *= t->wide_count;
    datatype = t->wide_of;
    extent = dtype_lookup(datatype)->extent;
  }
  const int index = index_of(op);
  if (index == replace || count == 0) return;  // x o y = y: inout already holds y
  if (index == no_op) {
    std::memmove(inout, in, count * static_cast<std::size_t>(extent));
    return;
  }
  if (index < predefined_ops) {
    kernel_for(index, datatype)(in, inout, count);
    return;
  }
  const user_op *u = user_slot(op);
  MPI_Datatype type = datatype;
  if (u->function_c != nullptr) {
    auto len = static_cast<MPI_Count>(count);
    u->function_c(const_cast<void *>(in), inout, &len, &type);
    return;
  }
  // The user function takes an int count: feed it in pieces that fit.
  for (std::size_t done = 0; done < count;) {
    const int chunk = static_cast<int>(std::min<std::size_t>(count - done, INT_MAX));
    int len = chunk;
    const auto skip = static_cast<std::int64_t>(done) * extent;
    u->function(const_cast<std::byte *>(static_cast<const std::byte *>(in) + skip),
                static_cast<std::byte *>(inout) + skip, &len, &type);
    done += static_cast<std::size_t>(chunk);
  }
}

int op_create(MPI_User_function *function, bool commutative) {
  std::size_t slot = 0;
  while (slot < user_ops.size() && user_ops[slot].live()) ++slot;
  if (slot == user_ops.size()) user_ops.emplace_back();
  user_ops[slot] = {function, nullptr, commutative};
  return handle_make(handle_kind::op, static_cast<std::size_t>(slot + predefined_ops));
}

int op_create_c(MPI_User_function_c *function, bool commutative) {
  const int handle = op_create(nullptr, commutative);
  user_ops[static_cast<std::size_t>(index_of(handle) - predefined_ops)].function_c = function;
  return handle;
}

bool op_free(int handle) {
  if (user_lookup(handle) == nullptr) return false;
  user_op &u = user_ops[static_cast<std::size_t>(index_of(handle) - predefined_ops)];
  if (u.holds > 0) {
    u.freed = true;  // op_unhold empties the slot
  } else {
    u = {};
  }
  return true;
}

void op_hold(int handle) {
  if (user_op *u = user_slot(handle)) ++u->holds;
}

void op_unhold(int handle) {
  user_op *u = user_slot(handle);
  if (u == nullptr) return;
  if (--u->holds == 0 && u->freed) *u = {};
}

}  // namespace iris::device
