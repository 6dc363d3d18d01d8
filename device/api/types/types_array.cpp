// Array datatypes built from the other constructors: MPI_Type_create_subarray
// and MPI_Type_create_darray (MPI-4.1 5.1.3, 5.1.4), and the Fortran 90
// parameterised types (Type_create_f90_integer/real/complex).
//
// Both array types are nested hvectors / hindexed_blocks over the old type,
// one level per dimension from the fastest-varying one out, resized to the
// extent of the whole global array (lower bound 0), as the standard's
// typemaps require.
#include <map>
#include <utility>
#include <vector>

#include "device/api/check.hpp"
#include "device/api/types/envelope.hpp"

using namespace iris;

namespace {

int fail(const char *call, int cls, const char *what, int i, int value) {
  return device::error_raise(nullptr, call, cls, "%s[%d] = %d is out of range", what, i, value);
}

int check_order(const char *call, int order) {
  if (order == MPI_ORDER_C || order == MPI_ORDER_FORTRAN) return MPI_SUCCESS;
  return device::error_raise(nullptr, call, MPI_ERR_ARG,
                             "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN", order);
}

// Builds, from the fastest dimension out, a type whose dimension d holds the
// element indices `picks[d]` of a global array of `sizes`; then resizes it
// to the global array. `dims` lists the dimensions fastest first.
int nest(const std::vector<std::vector<MPI_Aint>> &picks, const std::vector<int> &sizes,
         const std::vector<int> &fastest_first, MPI_Datatype old, MPI_Datatype *newtype) {
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(old, &lb, &extent);
  MPI_Datatype inner = old;
  MPI_Aint stride = extent;
  bool own = false;
  for (const int d : fastest_first) {
    const auto k = static_cast<std::size_t>(d);
    std::vector<MPI_Aint> displs;
    for (const MPI_Aint i : picks[k]) displs.push_back(i * stride);
    MPI_Datatype outer = MPI_DATATYPE_NULL;
    MPI_Type_create_hindexed_block(static_cast<int>(displs.size()), 1, displs.data(), inner,
                                   &outer);
    if (own) MPI_Type_free(&inner);
    inner = outer;
    own = true;
    stride *= sizes[k];
  }
  MPI_Type_create_resized(inner, 0, stride, newtype);
  if (own) MPI_Type_free(&inner);
  return MPI_SUCCESS;
}

std::vector<int> dimension_order(int ndims, int order) {
  std::vector<int> dims;
  for (int d = 0; d < ndims; ++d) dims.push_back(order == MPI_ORDER_C ? ndims - 1 - d : d);
  return dims;
}

// The indices of a dimension of `gsize` elements that process coordinate
// `coord` of `psize` owns under `distrib` with argument `darg`.
std::vector<MPI_Aint> owned(int gsize, int distrib, int darg, int psize, int coord) {
  std::vector<MPI_Aint> out;
  if (distrib == MPI_DISTRIBUTE_NONE) {
    for (int i = 0; i < gsize; ++i) out.push_back(i);
  } else if (distrib == MPI_DISTRIBUTE_BLOCK) {
    const int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
    for (long long i = static_cast<long long>(coord) * b; i < (coord + 1LL) * b && i < gsize; ++i) {
      out.push_back(static_cast<MPI_Aint>(i));
    }
  } else {
    const int k = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    for (int i = 0; i < gsize; ++i) {
      if ((i / k) % psize == coord) out.push_back(i);
    }
  }
  return out;
}

// Every element index (in old-type extents) of a nest of `picks`, in
// typemap order: the slowest dimension outermost.
void nest_offsets(const std::vector<std::vector<MPI_Aint>> &picks, const std::vector<int> &sizes,
                  const std::vector<int> &fastest_first, std::vector<MPI_Aint> &out) {
  std::vector<MPI_Aint> strides(sizes.size());
  MPI_Aint stride = 1;
  for (const int d : fastest_first) {
    strides[static_cast<std::size_t>(d)] = stride;
    stride *= sizes[static_cast<std::size_t>(d)];
  }
  out.assign(1, 0);
  for (auto d = fastest_first.rbegin(); d != fastest_first.rend(); ++d) {
    const auto k = static_cast<std::size_t>(*d);
    std::vector<MPI_Aint> next;
    for (const MPI_Aint base : out) {
      for (const MPI_Aint i : picks[k]) next.push_back(base + i * strides[k]);
    }
    out = std::move(next);
  }
}

}  // namespace

namespace iris::api {

bool array_offsets(const envelope &e, std::vector<MPI_Aint> &out) {
  const std::vector<int> &v = e.ints;
  if (e.combiner == MPI_COMBINER_SUBARRAY) {
    const int n = v[0];
    std::vector<std::vector<MPI_Aint>> picks(static_cast<std::size_t>(n));
    std::vector<int> sizes;
    for (int d = 0; d < n; ++d) {
      sizes.push_back(v[std::size_t(1 + d)]);
      for (int i = 0; i < v[std::size_t(1 + n + d)]; ++i) {
        picks[std::size_t(d)].push_back(v[std::size_t(1 + 2 * n + d)] + i);
      }
    }
    nest_offsets(picks, sizes, dimension_order(n, v[std::size_t(1 + 3 * n)]), out);
    return true;
  }
  if (e.combiner == MPI_COMBINER_DARRAY) {
    const int size = v[0], rank = v[1], n = v[2];
    auto at = [&](int block, int d) { return v[std::size_t(3 + block * n + d)]; };
    std::vector<int> coords(static_cast<std::size_t>(n));
    for (int d = n - 1, r = rank; d >= 0; --d) {
      coords[std::size_t(d)] = r % at(3, d);
      r /= at(3, d);
    }
    (void)size;
    std::vector<std::vector<MPI_Aint>> picks;
    std::vector<int> sizes;
    for (int d = 0; d < n; ++d) {
      sizes.push_back(at(0, d));
      picks.push_back(owned(at(0, d), at(1, d), at(2, d), at(3, d), coords[std::size_t(d)]));
    }
    nest_offsets(picks, sizes, dimension_order(n, v[std::size_t(3 + 4 * n)]), out);
    return true;
  }
  return false;
}

}  // namespace iris::api

extern "C" {

int MPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[], const int starts[],
                             int order, MPI_Datatype oldtype, MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_subarray";
  if (int err = api::check_initialized(call)) return err;
  if (ndims < 1) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "ndims %d (at least 1)", ndims);
  }
  if (sizes == nullptr || subsizes == nullptr || starts == nullptr || newtype == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "an array argument is NULL");
  }
  if (int err = check_order(call, order)) return err;
  if (device::dtype_lookup(oldtype) == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                               static_cast<unsigned>(oldtype));
  }
  std::vector<std::vector<MPI_Aint>> picks(static_cast<std::size_t>(ndims));
  for (int d = 0; d < ndims; ++d) {
    if (sizes[d] < 1) return fail(call, MPI_ERR_ARG, "array_of_sizes", d, sizes[d]);
    if (subsizes[d] < 0 || subsizes[d] > sizes[d]) {
      return fail(call, MPI_ERR_ARG, "array_of_subsizes", d, subsizes[d]);
    }
    if (starts[d] < 0 || starts[d] > sizes[d] - subsizes[d]) {
      return fail(call, MPI_ERR_ARG, "array_of_starts", d, starts[d]);
    }
    for (int i = 0; i < subsizes[d]; ++i)
      picks[static_cast<std::size_t>(d)].push_back(starts[d] + i);
  }
  const std::vector<int> gs(sizes, sizes + ndims);
  nest(picks, gs, dimension_order(ndims, order), oldtype, newtype);
  std::vector<int> ints{ndims};
  ints.insert(ints.end(), sizes, sizes + ndims);
  ints.insert(ints.end(), subsizes, subsizes + ndims);
  ints.insert(ints.end(), starts, starts + ndims);
  ints.push_back(order);
  api::envelope_record(*newtype, MPI_COMBINER_SUBARRAY, std::move(ints), {}, {oldtype});
  return MPI_SUCCESS;
}

int MPI_Type_create_darray(int size, int rank, int ndims, const int gsizes[], const int distribs[],
                           const int dargs[], const int psizes[], int order, MPI_Datatype oldtype,
                           MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_darray";
  if (int err = api::check_initialized(call)) return err;
  if (size < 1 || rank < 0 || rank >= size || ndims < 1) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "size %d, rank %d, ndims %d", size, rank,
                               ndims);
  }
  if (gsizes == nullptr || distribs == nullptr || dargs == nullptr || psizes == nullptr ||
      newtype == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "an array argument is NULL");
  }
  if (int err = check_order(call, order)) return err;
  if (device::dtype_lookup(oldtype) == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                               static_cast<unsigned>(oldtype));
  }
  long long grid = 1;
  for (int d = 0; d < ndims; ++d) {
    if (psizes[d] < 1) return fail(call, MPI_ERR_ARG, "array_of_psizes", d, psizes[d]);
    grid *= psizes[d];
  }
  if (grid != size) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG,
                               "the process grid has %lld processes, not size %d", grid, size);
  }
  // The process grid is row-major whatever `order` is (MPI-4.1 5.1.4).
  std::vector<int> coords(static_cast<std::size_t>(ndims));
  for (int d = ndims - 1, r = rank; d >= 0; --d) {
    coords[static_cast<std::size_t>(d)] = r % psizes[d];
    r /= psizes[d];
  }
  std::vector<std::vector<MPI_Aint>> picks(static_cast<std::size_t>(ndims));
  for (int d = 0; d < ndims; ++d) {
    const auto k = static_cast<std::size_t>(d);
    if (gsizes[d] < 1) return fail(call, MPI_ERR_ARG, "array_of_gsizes", d, gsizes[d]);
    const int dist = distribs[d];
    if (dist != MPI_DISTRIBUTE_BLOCK && dist != MPI_DISTRIBUTE_CYCLIC &&
        dist != MPI_DISTRIBUTE_NONE) {
      return fail(call, MPI_ERR_ARG, "array_of_distribs", d, dist);
    }
    if (dargs[d] != MPI_DISTRIBUTE_DFLT_DARG && dargs[d] < 1) {
      return fail(call, MPI_ERR_ARG, "array_of_dargs", d, dargs[d]);
    }
    if (dist == MPI_DISTRIBUTE_NONE && psizes[d] != 1) {
      return fail(call, MPI_ERR_ARG, "array_of_psizes (MPI_DISTRIBUTE_NONE needs 1)", d, psizes[d]);
    }
    if (dist == MPI_DISTRIBUTE_BLOCK && dargs[d] != MPI_DISTRIBUTE_DFLT_DARG &&
        static_cast<long long>(dargs[d]) * psizes[d] < gsizes[d]) {
      return fail(call, MPI_ERR_ARG, "array_of_dargs (blocks too small to cover the array)", d,
                  dargs[d]);
    }
    picks[k] = owned(gsizes[d], dist, dargs[d], psizes[d], coords[k]);
  }
  const std::vector<int> gs(gsizes, gsizes + ndims);
  nest(picks, gs, dimension_order(ndims, order), oldtype, newtype);
  std::vector<int> ints{size, rank, ndims};
  ints.insert(ints.end(), gsizes, gsizes + ndims);
  ints.insert(ints.end(), distribs, distribs + ndims);
  ints.insert(ints.end(), dargs, dargs + ndims);
  ints.insert(ints.end(), psizes, psizes + ndims);
  ints.push_back(order);
  api::envelope_record(*newtype, MPI_COMBINER_DARRAY, std::move(ints), {}, {oldtype});
  return MPI_SUCCESS;
}

}  // extern "C"

// Fortran 90 parameterised types: the smallest predefined Fortran type of
// the asked precision and range, as a committed type whose envelope tells
// how it was asked for. One handle per distinct request; never to be freed.
namespace {

int f90_type(const char *call, int combiner, std::vector<int> args, MPI_Datatype base,
             MPI_Datatype *newtype) {
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, newtype, "newtype")) return err;
  if (base == MPI_DATATYPE_NULL) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG,
                               "no predefined type has precision/range (%d, %d)", args[0],
                               args.size() > 1 ? args[1] : 0);
  }
  static std::map<std::pair<int, std::vector<int>>, MPI_Datatype> made;
  auto &slot = made[{combiner, args}];
  if (slot == 0) {
    device::dtype copy = *device::dtype_lookup(base);
    copy.predefined = false;  // its envelope is the f90 combiner, not NAMED
    slot = device::dtype_register(std::move(copy));
    api::envelope_record(slot, combiner, args, {}, {});
  }
  *newtype = slot;
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Type_create_f90_integer(int r, MPI_Datatype *newtype) {
  const device::api_guard guard;
  const MPI_Datatype base = r <= 2    ? MPI_INTEGER1
                            : r <= 4  ? MPI_INTEGER2
                            : r <= 9  ? MPI_INTEGER4
                            : r <= 18 ? MPI_INTEGER8
                                      : MPI_DATATYPE_NULL;
  return f90_type("MPI_Type_create_f90_integer", MPI_COMBINER_F90_INTEGER, {r}, base, newtype);
}

// MPI_UNDEFINED for p or r: no requirement on it.
static MPI_Datatype real_of(int p, int r, MPI_Datatype four, MPI_Datatype eight,
                            MPI_Datatype sixteen) {
  const int pp = p == MPI_UNDEFINED ? 0 : p, rr = r == MPI_UNDEFINED ? 0 : r;
  if (pp <= 6 && rr <= 37) return four;
  if (pp <= 15 && rr <= 307) return eight;
  if (pp <= 18 && rr <= 4931) return sixteen;  // x86 long double
  return MPI_DATATYPE_NULL;
}

int MPI_Type_create_f90_real(int p, int r, MPI_Datatype *newtype) {
  const device::api_guard guard;
  return f90_type("MPI_Type_create_f90_real", MPI_COMBINER_F90_REAL, {p, r},
                  real_of(p, r, MPI_REAL4, MPI_REAL8, MPI_REAL16), newtype);
}

int MPI_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype) {
  const device::api_guard guard;
  return f90_type("MPI_Type_create_f90_complex", MPI_COMBINER_F90_COMPLEX, {p, r},
                  real_of(p, r, MPI_COMPLEX8, MPI_COMPLEX16, MPI_COMPLEX32), newtype);
}

}  // extern "C"
