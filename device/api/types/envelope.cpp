// MPI_Type_get_envelope and MPI_Type_get_contents over the records that
// the constructors leave (envelope.hpp).
#include "device/api/types/envelope.hpp"

#include <algorithm>
#include <climits>
#include <map>
#include <utility>

#include "device/api/check.hpp"

using namespace iris;

namespace iris::api {
namespace {

std::map<MPI_Datatype, envelope> &records() {
  static std::map<MPI_Datatype, envelope> all;
  return all;
}

// A new handle for a copy of derived type `type`, with a record of its own
// (its inner types copied again): each record owns the copies it names, and
// envelope_forget frees them with it.
MPI_Datatype private_copy(MPI_Datatype type) {
  const device::dtype *t = device::dtype_lookup(type);
  if (t == nullptr || t->predefined) return type;
  device::dtype copy = *t;
  copy.name.clear();
  const MPI_Datatype made = device::dtype_register(std::move(copy));
  if (const envelope *e = envelope_of(type)) {
    const envelope inner = *e;  // recording may move the records
    envelope_record(made, inner.combiner, inner.ints, inner.aints, inner.types, inner.counts);
  }
  return made;
}

}  // namespace

void envelope_record(MPI_Datatype made, int combiner, std::vector<int> ints,
                     std::vector<MPI_Aint> aints, const std::vector<MPI_Datatype> &types,
                     std::vector<MPI_Count> counts) {
  envelope e;
  e.combiner = combiner;
  e.ints = std::move(ints);
  e.aints = std::move(aints);
  e.counts = std::move(counts);
  for (const MPI_Datatype t : types) e.types.push_back(private_copy(t));
  envelope_forget(made);  // a record it had, with its copies
  records()[made] = std::move(e);
}

int envelope_made(int err, const MPI_Datatype *made, int combiner, std::vector<int> ints,
                  std::vector<MPI_Aint> aints, const std::vector<MPI_Datatype> &types) {
  if (err == MPI_SUCCESS)
    envelope_record(*made, combiner, std::move(ints), std::move(aints), types);
  return err;
}

const envelope *envelope_of(MPI_Datatype type) {
  const auto it = records().find(type);
  return it != records().end() ? &it->second : nullptr;
}

void envelope_forget(MPI_Datatype type) {
  const auto it = records().find(type);
  if (it == records().end()) return;
  const std::vector<MPI_Datatype> copies = std::move(it->second.types);
  records().erase(it);
  for (const MPI_Datatype copy : copies) {
    const device::dtype *t = device::dtype_lookup(copy);
    if (t == nullptr || t->predefined) continue;
    envelope_forget(copy);
    type_release(copy);
  }
}

void type_release(MPI_Datatype type) {
  device::dtype_release(type, device::rt == nullptr || device::rt->requests.live() == 0);
}

}  // namespace iris::api

namespace {

int envelope_checked(const char *call, MPI_Datatype datatype, const device::dtype *&t) {
  if (int err = api::check_initialized(call)) return err;
  t = device::dtype_lookup(datatype);
  if (t == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                               static_cast<unsigned>(datatype));
  }
  return MPI_SUCCESS;
}

// MPI_Type_get_envelope(_c): the sizes of the record's arrays (all 0 and
// MPI_COMBINER_NAMED for a predefined type).
int envelope(const char *call, MPI_Datatype datatype, MPI_Count &ni, MPI_Count &na, MPI_Count &nc,
             MPI_Count &nd, int *combiner) {
  const device::dtype *t = nullptr;
  if (int err = envelope_checked(call, datatype, t)) return err;
  if (combiner == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "an output argument is NULL");
  }
  const api::envelope *e = api::envelope_of(datatype);
  if (t->predefined || e == nullptr) {
    ni = na = nc = nd = 0;
    *combiner = MPI_COMBINER_NAMED;
    return MPI_SUCCESS;
  }
  ni = static_cast<MPI_Count>(e->ints.size());
  na = static_cast<MPI_Count>(e->aints.size());
  nc = static_cast<MPI_Count>(e->counts.size());
  nd = static_cast<MPI_Count>(e->types.size());
  *combiner = e->combiner;
  return MPI_SUCCESS;
}

// MPI_Type_get_contents(_c): `max_counts` -1 for the int form, which has no
// large counts to give.
int contents(const char *call, MPI_Datatype datatype, MPI_Count max_integers,
             MPI_Count max_addresses, MPI_Count max_counts, MPI_Count max_datatypes,
             int array_of_integers[], MPI_Aint array_of_addresses[],
             MPI_Count array_of_large_counts[], MPI_Datatype array_of_datatypes[]) {
  const device::dtype *t = nullptr;
  if (int err = envelope_checked(call, datatype, t)) return err;
  const api::envelope *e = api::envelope_of(datatype);
  if (t->predefined || e == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG,
                               "datatype 0x%x is predefined (MPI_COMBINER_NAMED): it has no "
                               "contents",
                               static_cast<unsigned>(datatype));
  }
  if (max_counts < 0 && !e->counts.empty()) {
    return device::error_raise(nullptr, call, MPI_ERR_VALUE_TOO_LARGE,
                               "datatype 0x%x was built with counts past 2^31-1: its contents "
                               "need MPI_Type_get_contents_c",
                               static_cast<unsigned>(datatype));
  }
  const auto size = [](const auto &v) { return static_cast<MPI_Count>(v.size()); };
  if (max_integers < size(e->ints) || max_addresses < size(e->aints) ||
      max_datatypes < size(e->types) || (max_counts >= 0 && max_counts < size(e->counts))) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG,
                               "arrays too small: the type has %zu integers, %zu addresses, %zu "
                               "large counts and %zu datatypes",
                               e->ints.size(), e->aints.size(), e->counts.size(), e->types.size());
  }
  if ((!e->ints.empty() && array_of_integers == nullptr) ||
      (!e->aints.empty() && array_of_addresses == nullptr) ||
      (!e->counts.empty() && array_of_large_counts == nullptr) ||
      (!e->types.empty() && array_of_datatypes == nullptr)) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "an output array is NULL");
  }
  std::copy(e->ints.begin(), e->ints.end(), array_of_integers);
  std::copy(e->aints.begin(), e->aints.end(), array_of_addresses);
  std::copy(e->counts.begin(), e->counts.end(), array_of_large_counts);
  const std::vector<MPI_Datatype> inner = e->types;  // the copies below may grow the records
  for (std::size_t i = 0; i < inner.size(); ++i) {
    const device::dtype *it = device::dtype_lookup(inner[i]);
    if (it == nullptr || it->predefined) {
      array_of_datatypes[i] = inner[i];
      continue;
    }
    device::dtype copy = *it;
    const MPI_Datatype made = device::dtype_register(std::move(copy));
    if (const api::envelope *ie = api::envelope_of(inner[i])) {
      const api::envelope keep = *ie;
      api::envelope_record(made, keep.combiner, keep.ints, keep.aints, keep.types, keep.counts);
    }
    array_of_datatypes[i] = made;
  }
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                          int *num_datatypes, int *combiner) {
  const device::api_guard guard;
  const char *call = "MPI_Type_get_envelope";
  if (num_integers == nullptr || num_addresses == nullptr || num_datatypes == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "an output argument is NULL");
  }
  MPI_Count ni = 0, na = 0, nc = 0, nd = 0;
  if (int err = envelope(call, datatype, ni, na, nc, nd, combiner)) return err;
  if (nc != 0) {
    return device::error_raise(nullptr, call, MPI_ERR_VALUE_TOO_LARGE,
                               "datatype 0x%x was built with counts past 2^31-1: its envelope "
                               "needs MPI_Type_get_envelope_c",
                               static_cast<unsigned>(datatype));
  }
  *num_integers = static_cast<int>(ni);
  *num_addresses = static_cast<int>(na);
  *num_datatypes = static_cast<int>(nd);
  return MPI_SUCCESS;
}

int MPI_Type_get_envelope_c(MPI_Datatype datatype, MPI_Count *num_integers,
                            MPI_Count *num_addresses, MPI_Count *num_large_counts,
                            MPI_Count *num_datatypes, int *combiner) {
  const device::api_guard guard;
  const char *call = "MPI_Type_get_envelope_c";
  if (num_integers == nullptr || num_addresses == nullptr || num_large_counts == nullptr ||
      num_datatypes == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "an output argument is NULL");
  }
  return envelope(call, datatype, *num_integers, *num_addresses, *num_large_counts, *num_datatypes,
                  combiner);
}

int MPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
                          int max_datatypes, int array_of_integers[], MPI_Aint array_of_addresses[],
                          MPI_Datatype array_of_datatypes[]) {
  const device::api_guard guard;
  return contents("MPI_Type_get_contents", datatype, max_integers, max_addresses, -1, max_datatypes,
                  array_of_integers, array_of_addresses, nullptr, array_of_datatypes);
}

int MPI_Type_get_contents_c(MPI_Datatype datatype, MPI_Count max_integers, MPI_Count max_addresses,
                            MPI_Count max_large_counts, MPI_Count max_datatypes,
                            int array_of_integers[], MPI_Aint array_of_addresses[],
                            MPI_Count array_of_large_counts[], MPI_Datatype array_of_datatypes[]) {
  const device::api_guard guard;
  return contents("MPI_Type_get_contents_c", datatype, max_integers, max_addresses,
                  max_large_counts, max_datatypes, array_of_integers, array_of_addresses,
                  array_of_large_counts, array_of_datatypes);
}

}  // extern "C"
