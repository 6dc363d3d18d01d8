// MPI_Pack_external, MPI_Unpack_external and MPI_Pack_external_size for the
// "external32" representation (MPI-4.1 19.1.13): every basic element
// big-endian, at the standard's sizes (MPI_LONG and MPI_UNSIGNED_LONG take
// 4 bytes; a value that does not fit is MPI_ERR_CONVERSION), the pair types
// without their padding, complex types as two reals. Long double types
// (MPI_LONG_DOUBLE, MPI_REAL16 and their complex types, which are long
// double here) are IEEE quad in external32: the x87 80-bit format widens to
// it exactly and narrows back with its low fraction bits cut; a platform
// whose long double is neither (nor quad itself) refuses them with
// MPI_ERR_UNSUPPORTED_DATAREP.
//
// The typemap is walked through the constructor records (envelope.hpp),
// since the flattened form keeps bytes, not basic types.
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string_view>
#include <vector>

#include "device/api/check.hpp"
#include "device/api/types/envelope.hpp"

using namespace iris;

namespace {

enum class kind : std::uint8_t { raw, sint, uint, real, quad, unsupported };

// How this platform's long double becomes IEEE quad: x87's 80 bits (64 of
// significand, the integer bit explicit), quad itself, or neither.
constexpr int long_double_digits = std::numeric_limits<long double>::digits;
constexpr kind long_double_kind =
    long_double_digits == 64 || long_double_digits == 113 ? kind::quad : kind::unsupported;

struct basic_rep {
  int native;    // bytes in memory
  int external;  // bytes in external32
  int parts;     // 2 for complex types (each part converted alone)
  kind how;
};

// The representation of a basic (not pair) predefined type.
basic_rep rep_of(MPI_Datatype t) {
  switch (t) {
    case MPI_CHAR:
    case MPI_SIGNED_CHAR:
    case MPI_UNSIGNED_CHAR:
    case MPI_BYTE:
    case MPI_PACKED:
    case MPI_C_BOOL:
    case MPI_CXX_BOOL:
    case MPI_INT8_T:
    case MPI_UINT8_T:
    case MPI_CHARACTER:
    case MPI_INTEGER1:
    case MPI_LOGICAL1:
      return {1, 1, 1, kind::raw};
    case MPI_SHORT:
    case MPI_INT16_T:
    case MPI_INTEGER2:
    case MPI_LOGICAL2:
      return {2, 2, 1, kind::sint};
    case MPI_UNSIGNED_SHORT:
    case MPI_UINT16_T:
      return {2, 2, 1, kind::uint};
    case MPI_INT:
    case MPI_INT32_T:
    case MPI_INTEGER:
    case MPI_INTEGER4:
    case MPI_LOGICAL:
    case MPI_LOGICAL4:
      return {4, 4, 1, kind::sint};
    case MPI_UNSIGNED:
    case MPI_UINT32_T:
    case MPI_WCHAR:
      return {4, 4, 1, kind::uint};
    case MPI_LONG:
      return {8, 4, 1, kind::sint};
    case MPI_UNSIGNED_LONG:
      return {8, 4, 1, kind::uint};
    case MPI_LONG_LONG:
    case MPI_INT64_T:
    case MPI_AINT:
    case MPI_OFFSET:
    case MPI_COUNT:
    case MPI_INTEGER8:
    case MPI_LOGICAL8:
      return {8, 8, 1, kind::sint};
    case MPI_UNSIGNED_LONG_LONG:
    case MPI_UINT64_T:
      return {8, 8, 1, kind::uint};
    case MPI_FLOAT:
    case MPI_REAL:
    case MPI_REAL4:
      return {4, 4, 1, kind::real};
    case MPI_DOUBLE:
    case MPI_DOUBLE_PRECISION:
    case MPI_REAL8:
      return {8, 8, 1, kind::real};
    case MPI_C_FLOAT_COMPLEX:
    case MPI_COMPLEX:
    case MPI_COMPLEX8:
    case MPI_CXX_FLOAT_COMPLEX:
      return {8, 8, 2, kind::real};
    case MPI_C_DOUBLE_COMPLEX:
    case MPI_DOUBLE_COMPLEX:
    case MPI_COMPLEX16:
    case MPI_CXX_DOUBLE_COMPLEX:
      return {16, 16, 2, kind::real};
    case MPI_INTEGER16:
      return {16, 16, 1, kind::sint};
    case MPI_LONG_DOUBLE:
    case MPI_REAL16:
      return {16, 16, 1, long_double_kind};
    case MPI_C_LONG_DOUBLE_COMPLEX:
    case MPI_CXX_LONG_DOUBLE_COMPLEX:
    case MPI_COMPLEX32:
      return {32, 32, 2, long_double_kind};
    default:
      return {0, 0, 1, kind::unsupported};
  }
}

using visit = std::function<int(MPI_Aint offset, MPI_Datatype basic)>;

// The members of a pair type (MINLOC/MAXLOC), or false.
bool pair_members(MPI_Datatype t, MPI_Datatype &value, MPI_Aint &index_at) {
  switch (t) {
    case MPI_FLOAT_INT:
      value = MPI_FLOAT, index_at = 4;
      return true;
    case MPI_DOUBLE_INT:
      value = MPI_DOUBLE, index_at = 8;
      return true;
    case MPI_LONG_INT:
      value = MPI_LONG, index_at = 8;
      return true;
    case MPI_2INT:
    case MPI_2INTEGER:
      value = MPI_INT, index_at = 4;
      return true;
    case MPI_SHORT_INT:
      value = MPI_SHORT, index_at = 4;
      return true;
    case MPI_LONG_DOUBLE_INT:
      value = MPI_LONG_DOUBLE, index_at = 16;
      return true;
    default:
      return false;
  }
}

// Calls `f` for every basic element of one element of `t` at `at`, in
// typemap order. MPI_ERR_TYPE for a type made before its constructor was
// recorded.
int walk(MPI_Datatype t, MPI_Aint at, const visit &f) {
  const device::dtype *d = device::dtype_lookup(t);
  if (d == nullptr) return MPI_ERR_TYPE;
  if (d->predefined) {
    if (d->size == 0) return MPI_SUCCESS;  // MPI_LB, MPI_UB: bounds, no data
    MPI_Datatype value = MPI_DATATYPE_NULL;
    MPI_Aint index_at = 0;
    if (!pair_members(t, value, index_at)) return f(at, t);
    if (int err = f(at, value)) return err;
    return f(at + index_at, MPI_INT);
  }
  const api::envelope *e = api::envelope_of(t);
  if (e == nullptr) return MPI_ERR_TYPE;
  const std::vector<int> &v = e->ints;
  const std::vector<MPI_Aint> &a = e->aints;
  auto run = [&](MPI_Datatype old, MPI_Aint from, int n) -> int {
    const MPI_Aint ext = device::dtype_extent(old);
    for (int j = 0; j < n; ++j) {
      if (int err = walk(old, from + j * ext, f)) return err;
    }
    return MPI_SUCCESS;
  };
  const MPI_Datatype old = e->types.empty() ? MPI_DATATYPE_NULL : e->types[0];
  const MPI_Aint ext = device::dtype_extent(old);
  switch (e->combiner) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:
      return walk(old, at, f);
    // The f90 types are copies of the Fortran type of their size.
    case MPI_COMBINER_F90_INTEGER:
      return f(at, d->size == 1   ? MPI_INTEGER1
                   : d->size == 2 ? MPI_INTEGER2
                   : d->size == 4 ? MPI_INTEGER4
                                  : MPI_INTEGER8);
    case MPI_COMBINER_F90_REAL:
      return f(at, d->size == 4 ? MPI_REAL4 : d->size == 8 ? MPI_REAL8 : MPI_REAL16);
    case MPI_COMBINER_F90_COMPLEX:
      return f(at, d->size == 8 ? MPI_COMPLEX8 : d->size == 16 ? MPI_COMPLEX16 : MPI_COMPLEX32);
    case MPI_COMBINER_CONTIGUOUS: {
      const MPI_Count n = v.empty() ? e->counts[0] : v[0];  // a _c count past 2^31-1
      for (MPI_Count j = 0; j < n; ++j) {
        if (int err = walk(old, at + static_cast<MPI_Aint>(j) * ext, f)) return err;
      }
      return MPI_SUCCESS;
    }
    case MPI_COMBINER_VECTOR:
      for (int i = 0; i < v[0]; ++i) {
        if (int err = run(old, at + MPI_Aint{i} * v[2] * ext, v[1])) return err;
      }
      return MPI_SUCCESS;
    case MPI_COMBINER_HVECTOR:
      for (int i = 0; i < v[0]; ++i) {
        if (int err = run(old, at + i * a[0], v[1])) return err;
      }
      return MPI_SUCCESS;
    case MPI_COMBINER_INDEXED:
      for (int i = 0; i < v[0]; ++i) {
        const int len = v[std::size_t(1 + i)], disp = v[std::size_t(1 + v[0] + i)];
        if (int err = run(old, at + disp * ext, len)) return err;
      }
      return MPI_SUCCESS;
    case MPI_COMBINER_HINDEXED:
      for (int i = 0; i < v[0]; ++i) {
        if (int err = run(old, at + a[std::size_t(i)], v[std::size_t(1 + i)])) return err;
      }
      return MPI_SUCCESS;
    case MPI_COMBINER_INDEXED_BLOCK:
      for (int i = 0; i < v[0]; ++i) {
        if (int err = run(old, at + v[std::size_t(2 + i)] * ext, v[1])) return err;
      }
      return MPI_SUCCESS;
    case MPI_COMBINER_HINDEXED_BLOCK:
      for (int i = 0; i < v[0]; ++i) {
        if (int err = run(old, at + a[std::size_t(i)], v[1])) return err;
      }
      return MPI_SUCCESS;
    case MPI_COMBINER_STRUCT:
      for (int i = 0; i < v[0]; ++i) {
        if (int err =
                run(e->types[std::size_t(i)], at + a[std::size_t(i)], v[std::size_t(1 + i)])) {
          return err;
        }
      }
      return MPI_SUCCESS;
    case MPI_COMBINER_SUBARRAY:
    case MPI_COMBINER_DARRAY: {
      std::vector<MPI_Aint> offsets;
      api::array_offsets(*e, offsets);
      for (const MPI_Aint o : offsets) {
        if (int err = walk(old, at + o * ext, f)) return err;
      }
      return MPI_SUCCESS;
    }
    default:
      return MPI_ERR_TYPE;
  }
}

// Big-endian bytes of the `n`-byte integer or real at `from` (little-endian
// host) into `to`; and back.
void swap_copy(const std::byte *from, std::byte *to, int n) {
  for (int i = 0; i < n; ++i) to[i] = from[n - 1 - i];
}

// One long double at `from` as big-endian IEEE quad at `to`, and back. x87:
// the sign and the 15-bit exponent carry over (the same bias), the
// significand's 63 bits after its explicit integer bit become the top of
// quad's 112-bit fraction (denormals, infinities and NaNs included); back,
// the integer bit is 1 unless the exponent is 0, and the fraction's low 49
// bits are cut.
void quad_encode(const std::byte *from, std::byte *to) {
  if constexpr (long_double_digits == 113) {
    swap_copy(from, to, 16);
  } else {
    std::uint64_t significand = 0;
    std::uint16_t sign_exponent = 0;
    std::memcpy(&significand, from, 8);
    std::memcpy(&sign_exponent, from + 8, 2);
    const std::uint64_t fraction = significand & ~(std::uint64_t{1} << 63);
    const std::uint64_t hi = std::uint64_t{sign_exponent} << 48 | fraction >> 15;
    const std::uint64_t lo = fraction << 49;
    swap_copy(reinterpret_cast<const std::byte *>(&hi), to, 8);
    swap_copy(reinterpret_cast<const std::byte *>(&lo), to + 8, 8);
  }
}

void quad_decode(const std::byte *from, std::byte *to) {
  if constexpr (long_double_digits == 113) {
    swap_copy(from, to, 16);
  } else {
    std::uint64_t hi = 0;
    std::uint64_t lo = 0;
    swap_copy(from, reinterpret_cast<std::byte *>(&hi), 8);
    swap_copy(from + 8, reinterpret_cast<std::byte *>(&lo), 8);
    const auto sign_exponent = static_cast<std::uint16_t>(hi >> 48);
    const bool normal = (sign_exponent & 0x7fff) != 0;
    const std::uint64_t significand =
        (normal ? std::uint64_t{1} << 63 : 0) | (hi & 0xffff'ffff'ffffULL) << 15 | lo >> 49;
    std::memset(to, 0, 16);  // the 6 padding bytes too
    std::memcpy(to, &significand, 8);
    std::memcpy(to + 8, &sign_exponent, 2);
  }
}

int encode(const std::byte *native, std::byte *out, const basic_rep &r) {
  const int part = r.native / r.parts;
  if (r.how == kind::quad) {
    for (int p = 0; p < r.parts; ++p) quad_encode(native + p * part, out + p * part);
    return MPI_SUCCESS;
  }
  if (r.native == r.external) {
    for (int p = 0; p < r.parts; ++p) swap_copy(native + p * part, out + p * part, part);
    return MPI_SUCCESS;
  }
  // 8 bytes in memory, 4 in external32: MPI_LONG, MPI_UNSIGNED_LONG.
  std::int64_t v = 0;
  std::memcpy(&v, native, 8);
  const bool fits = r.how == kind::sint ? (v >= INT32_MIN && v <= INT32_MAX)
                                        : static_cast<std::uint64_t>(v) <= UINT32_MAX;
  if (!fits) return MPI_ERR_CONVERSION;
  const auto low = static_cast<std::uint32_t>(v);
  swap_copy(reinterpret_cast<const std::byte *>(&low), out, 4);
  return MPI_SUCCESS;
}

void decode(const std::byte *in, std::byte *native, const basic_rep &r) {
  const int part = r.native / r.parts;
  if (r.how == kind::quad) {
    for (int p = 0; p < r.parts; ++p) quad_decode(in + p * part, native + p * part);
    return;
  }
  if (r.native == r.external) {
    for (int p = 0; p < r.parts; ++p) swap_copy(in + p * part, native + p * part, part);
    return;
  }
  std::uint32_t low = 0;
  swap_copy(in, reinterpret_cast<std::byte *>(&low), 4);
  const std::int64_t v =
      r.how == kind::sint ? std::int64_t{static_cast<std::int32_t>(low)} : std::int64_t{low};
  std::memcpy(native, &v, 8);
}

int check_datarep(const char *call, const char *datarep) {
  if (int err = api::check_initialized(call)) return err;
  if (datarep != nullptr && std::string_view(datarep) == "external32") return MPI_SUCCESS;
  return device::error_raise(nullptr, call, MPI_ERR_UNSUPPORTED_DATAREP,
                             "data representation \"%s\" (only \"external32\")",
                             datarep != nullptr ? datarep : "(null)");
}

// The external32 bytes of `count` elements of `type`.
int external_size(const char *call, MPI_Count count, MPI_Datatype type, MPI_Count &bytes) {
  if (count < 0) {
    return device::error_raise(nullptr, call, MPI_ERR_COUNT, "negative count %lld",
                               static_cast<long long>(count));
  }
  MPI_Count one = 0;
  bool unsupported = false;
  const int err = walk(type, 0, [&](MPI_Aint, MPI_Datatype b) {
    const basic_rep r = rep_of(b);
    if (r.how == kind::unsupported) unsupported = true;
    one += r.external;
    return MPI_SUCCESS;
  });
  if (err != MPI_SUCCESS) {
    return device::error_raise(nullptr, call, MPI_ERR_TYPE,
                               "datatype 0x%x: invalid, or its typemap is unknown",
                               static_cast<unsigned>(type));
  }
  if (unsupported) {
    return device::error_raise(nullptr, call, MPI_ERR_UNSUPPORTED_DATAREP,
                               "long double types have no external32 conversion on this "
                               "platform (its long double is neither x87 nor IEEE quad)");
  }
  bytes = one * count;
  return MPI_SUCCESS;
}

int pack_external(const char *call, const char *datarep, const void *inbuf, MPI_Count incount,
                  MPI_Datatype type, void *outbuf, MPI_Count outsize, MPI_Count &position) {
  if (int err = check_datarep(call, datarep)) return err;
  MPI_Count bytes = 0;
  if (int err = external_size(call, incount, type, bytes)) return err;
  if (position < 0 || position + bytes > outsize) {
    return device::error_raise(nullptr, call, MPI_ERR_TRUNCATE,
                               "%lld bytes do not fit at position %lld of a %lld-byte buffer",
                               static_cast<long long>(bytes), static_cast<long long>(position),
                               static_cast<long long>(outsize));
  }
  auto *out = static_cast<std::byte *>(outbuf) + position;
  const auto *in = static_cast<const std::byte *>(inbuf);
  const MPI_Aint ext = device::dtype_extent(type);
  for (MPI_Count i = 0; i < incount; ++i) {
    const int err = walk(type, static_cast<MPI_Aint>(i) * ext, [&](MPI_Aint at, MPI_Datatype b) {
      const basic_rep r = rep_of(b);
      if (int e = encode(in + at, out, r)) return e;
      out += r.external;
      return MPI_SUCCESS;
    });
    if (err != MPI_SUCCESS) {
      return device::error_raise(nullptr, call, err,
                                 "an MPI_LONG or MPI_UNSIGNED_LONG value does not fit the 4 "
                                 "bytes external32 gives it");
    }
  }
  position += bytes;
  return MPI_SUCCESS;
}

int unpack_external(const char *call, const char *datarep, const void *inbuf, MPI_Count insize,
                    MPI_Count &position, void *outbuf, MPI_Count outcount, MPI_Datatype type) {
  if (int err = check_datarep(call, datarep)) return err;
  MPI_Count bytes = 0;
  if (int err = external_size(call, outcount, type, bytes)) return err;
  if (position < 0 || position + bytes > insize) {
    return device::error_raise(nullptr, call, MPI_ERR_TRUNCATE,
                               "%lld bytes asked at position %lld of a %lld-byte buffer",
                               static_cast<long long>(bytes), static_cast<long long>(position),
                               static_cast<long long>(insize));
  }
  const auto *in = static_cast<const std::byte *>(inbuf) + position;
  auto *out = static_cast<std::byte *>(outbuf);
  const MPI_Aint ext = device::dtype_extent(type);
  for (MPI_Count i = 0; i < outcount; ++i) {
    (void)walk(type, static_cast<MPI_Aint>(i) * ext, [&](MPI_Aint at, MPI_Datatype b) {
      const basic_rep r = rep_of(b);
      decode(in, out + at, r);
      in += r.external;
      return MPI_SUCCESS;
    });
  }
  position += bytes;
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype,
                           MPI_Aint *size) {
  const device::api_guard guard;
  const char *call = "MPI_Pack_external_size";
  if (int err = check_datarep(call, datarep)) return err;
  if (int err = api::check_not_null(call, nullptr, size, "size")) return err;
  MPI_Count bytes = 0;
  if (int err = external_size(call, incount, datatype, bytes)) return err;
  *size = static_cast<MPI_Aint>(bytes);
  return MPI_SUCCESS;
}

int MPI_Pack_external_size_c(const char datarep[], MPI_Count incount, MPI_Datatype datatype,
                             MPI_Count *size) {
  const device::api_guard guard;
  const char *call = "MPI_Pack_external_size_c";
  if (int err = check_datarep(call, datarep)) return err;
  if (int err = api::check_not_null(call, nullptr, size, "size")) return err;
  return external_size(call, incount, datatype, *size);
}

int MPI_Pack_external(const char datarep[], const void *inbuf, int incount, MPI_Datatype datatype,
                      void *outbuf, MPI_Aint outsize, MPI_Aint *position) {
  const device::api_guard guard;
  const char *call = "MPI_Pack_external";
  if (int err = api::check_not_null(call, nullptr, position, "position")) return err;
  MPI_Count pos = *position;
  const int err = pack_external(call, datarep, inbuf, incount, datatype, outbuf, outsize, pos);
  if (err == MPI_SUCCESS) *position = static_cast<MPI_Aint>(pos);
  return err;
}

int MPI_Pack_external_c(const char datarep[], const void *inbuf, MPI_Count incount,
                        MPI_Datatype datatype, void *outbuf, MPI_Count outsize,
                        MPI_Count *position) {
  const device::api_guard guard;
  const char *call = "MPI_Pack_external_c";
  if (int err = api::check_not_null(call, nullptr, position, "position")) return err;
  return pack_external(call, datarep, inbuf, incount, datatype, outbuf, outsize, *position);
}

int MPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize,
                        MPI_Aint *position, void *outbuf, int outcount, MPI_Datatype datatype) {
  const device::api_guard guard;
  const char *call = "MPI_Unpack_external";
  if (int err = api::check_not_null(call, nullptr, position, "position")) return err;
  MPI_Count pos = *position;
  const int err = unpack_external(call, datarep, inbuf, insize, pos, outbuf, outcount, datatype);
  if (err == MPI_SUCCESS) *position = static_cast<MPI_Aint>(pos);
  return err;
}

int MPI_Unpack_external_c(const char datarep[], const void *inbuf, MPI_Count insize,
                          MPI_Count *position, void *outbuf, MPI_Count outcount,
                          MPI_Datatype datatype) {
  const device::api_guard guard;
  const char *call = "MPI_Unpack_external_c";
  if (int err = api::check_not_null(call, nullptr, position, "position")) return err;
  return unpack_external(call, datarep, inbuf, insize, *position, outbuf, outcount, datatype);
}

}  // extern "C"
