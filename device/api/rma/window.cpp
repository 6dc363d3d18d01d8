// Windows: creation in the four flavors, MPI_Win_free, what a window says of
// itself (attributes, group, name) and its error handlers.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "device/am/am.hpp"
#include "device/am/counter.hpp"
#include "device/am/exposure.hpp"
#include "device/api/env/info.hpp"
#include "device/api/rma/rma.hpp"
#include "device/base/handle.hpp"
#include "device/communicators/attr.hpp"
#include "device/runtime/runtime.hpp"

using namespace iris;
using iris::api::communicator;

namespace iris::api::rma {

namespace {

constexpr std::size_t control_bytes = sizeof(control);
// Where the memory of an MPI_Win_allocate(_shared) window starts after the
// control blocks: half a page in, not at a page's start. A copy between
// two buffers at nearly the same offset in their pages stalls on 4K
// aliasing (a load waits behind a store to the same low 12 address bits),
// and a program's large malloc'ed buffers start 16 bytes into a page: a
// 32 KiB get into one from page-aligned window memory ran at 0.86 of Open
// MPI's, whose windows start 264 bytes in. 64-byte aligned.
constexpr std::size_t base_skew = 2048 + 64;

// Windows by handle index (0: MPI_WIN_NULL). Under the call lock.
std::vector<std::unique_ptr<window>> &windows() {
  static std::vector<std::unique_ptr<window>> all(1);
  return all;
}

// Bases exposed by windows, with how many windows share each (two windows
// may lie over the same memory; the exposure table holds a base once).
std::map<std::uintptr_t, int> &exposed_bases() {
  static std::map<std::uintptr_t, int> all;
  return all;
}

// Exposes [base, base + bytes) to the node's ranks and the AM layer (false:
// the table is full).
bool expose(void *base, std::size_t bytes) {
  if (base == nullptr) return true;
  auto &bases = exposed_bases();
  const auto at = reinterpret_cast<std::uintptr_t>(base);
  if (auto it = bases.find(at); it != bases.end()) {
    ++it->second;
    return true;
  }
  std::uint64_t block = 0, offset = 0, block_bytes = 0;
  device::am_block_of(base, bytes, block, offset, block_bytes);
  const int err = device::exposure_add(base, bytes, block, offset, block_bytes);
  if (err == MPI_ERR_NO_MEM) return false;
  // MPI_ERR_ARG: the program exposed it itself (MPIX_Expose); it stays so.
  if (err == MPI_SUCCESS) bases[at] = 1;
  device::am_exposures_changed();
  return true;
}

void conceal(void *base) {
  if (base == nullptr) return;
  auto &bases = exposed_bases();
  auto it = bases.find(reinterpret_cast<std::uintptr_t>(base));
  if (it == bases.end()) return;
  if (--it->second > 0) return;
  bases.erase(it);
  device::exposure_remove(base);
  device::am_exposures_changed();
}

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

// `bytes` of zeroed memory that the node's ranks map when they can.
void *allocate(std::size_t bytes, bool &block) {
  bytes = round_up(bytes, 4096);
  void *p = device::am_alloc_mem(bytes);
  block = p != nullptr;
  if (p == nullptr) p = std::aligned_alloc(4096, bytes);
  if (p != nullptr) std::memset(p, 0, bytes);
  return p;
}

void release(void *p, bool block, std::size_t mapped) {
  if (p == nullptr) return;
  if (mapped != 0) {
    munmap(p, mapped);
    return;
  }
  if (!block || !device::am_free_mem(p)) std::free(p);
}

// The memory of an MPI_Win_allocate_shared window, `bytes` of it, mapped
// in every rank of the window: a POSIX shared-memory object that the
// lowest rank makes (its space reserved: a full /dev/shm fails here, not at
// a later store) and every rank maps; its name goes once all have it.
// nullptr, with the reason in `why`, when it cannot.
void *shared_segment(window &w, std::size_t bytes, std::string &why) {
  static unsigned sequence = 0;
  char name[64] = {};
  if (w.comm->rank == 0) {
    std::snprintf(name, sizeof name, "/iris-win.%d.%u", static_cast<int>(getpid()), ++sequence);
    const int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) != 0) err = errno;
    if (fd >= 0 && err == 0) err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (fd >= 0) close(fd);
    if (err != 0) {
      if (fd >= 0) shm_unlink(name);
      why = std::string("/dev/shm") + name + ": " + std::strerror(err);
      name[0] = '\0';
    }
  }
  MPI_Bcast(name, sizeof name, MPI_CHAR, 0, w.comm->handle);
  void *at = nullptr;
  if (name[0] != '\0') {
    const int fd = shm_open(name, O_RDWR, 0);
    if (fd >= 0) {
      at = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (at == MAP_FAILED) at = nullptr;
      close(fd);
    }
    if (at == nullptr && why.empty()) why = std::string("cannot map ") + name;
  } else if (why.empty()) {
    why = "the lowest rank could not make the shared memory";
  }
  MPI_Barrier(w.comm->handle);
  if (w.comm->rank == 0 && name[0] != '\0') shm_unlink(name);
  w.owned = at;
  w.owned_mapped = at != nullptr ? bytes : 0;
  return at;
}

// What each rank tells the others at creation.
struct card {
  std::uint64_t base, size, control;
  std::int64_t disp_unit;
  std::uint64_t region[2];  // its memory as the netmod's RMA names it
  std::uint64_t remote;     // 1: region is valid
};

// The window's own communicator: the same ranks on a context of its own
// (no attribute callbacks run, unlike MPI_Comm_dup), so that its messages
// and collectives never meet the program's.
device::communicator *own_comm(const communicator &c) {
  const std::uint32_t context = device::context_agree(c);
  const int handle = device::comm_register(c.world_rank, context, MPI_ERRORS_RETURN);
  return device::comm_lookup(handle);
}

int new_handle(std::unique_ptr<window> w) {
  auto &all = windows();
  std::size_t i = 1;
  while (i < all.size() && all[i] != nullptr) ++i;
  if (i == all.size()) all.emplace_back();
  const int handle = static_cast<int>(
      (static_cast<unsigned>(device::handle_kind::win) << device::handle_kind_shift) |
      static_cast<unsigned>(i));
  w->handle = handle;
  all[i] = std::move(w);
  return handle;
}

// Every rank's card, and what is mapped of each here.
int exchange(const char *call, const communicator &user, window &w) {
  const card mine{reinterpret_cast<std::uintptr_t>(w.base),
                  static_cast<std::uint64_t>(w.size),
                  reinterpret_cast<std::uintptr_t>(w.ctl),
                  w.disp_unit,
                  {w.region[0], w.region[1]},
                  w.exposed_by != nullptr ? 1U : 0U};
  std::vector<card> all(static_cast<std::size_t>(w.comm->size));
  if (int err = MPI_Allgather(&mine, sizeof(card), MPI_BYTE, all.data(), sizeof(card), MPI_BYTE,
                              w.comm->handle)) {
    return device::error_raise(&user, call, err, "the ranks could not exchange their windows");
  }
  w.targets.resize(all.size());
  w.posts_from.assign(all.size(), 0);
  w.completes_from.assign(all.size(), 0);
  w.posts_seen.assign(std::min(all.size(), notice_ranks), 0);
  w.completes_seen.assign(std::min(all.size(), notice_ranks), 0);
  for (std::size_t r = 0; r < all.size(); ++r) {
    target &t = w.targets[r];
    t.world = w.comm->world_rank[r];
    t.base = all[r].base;
    t.size = all[r].size;
    t.control = all[r].control;
    t.disp_unit = all[r].disp_unit;
    if (static_cast<int>(r) == w.comm->rank) {
      t.mapped = static_cast<std::byte *>(w.base);
      t.ctl = w.ctl;
      continue;
    }
    if (t.size > 0 && t.base != 0) t.mapped = device::am_mapped(t.world, t.base, t.size);
    t.ctl = reinterpret_cast<control *>(device::am_mapped(t.world, t.control, control_bytes));
    t.remote = all[r].remote == 1 && t.mapped == nullptr;
    t.region[0] = all[r].region[0];
    t.region[1] = all[r].region[1];
  }
  if (w.flavor == MPI_WIN_FLAVOR_DYNAMIC) return MPI_SUCCESS;
  // How many of the others map each rank's memory: this rank's count.
  std::vector<int> maps(all.size(), 0);
  for (std::size_t r = 0; r < all.size(); ++r) {
    maps[r] = static_cast<int>(r) != w.comm->rank && w.targets[r].mapped != nullptr ? 1 : 0;
  }
  int mapping_me = 1;
  if (int err =
          MPI_Reduce_scatter_block(maps.data(), &mapping_me, 1, MPI_INT, MPI_SUM, w.comm->handle)) {
    return device::error_raise(&user, call, err, "the ranks could not tell who maps whose memory");
  }
  w.mapped_elsewhere = mapping_me > 0;
  return MPI_SUCCESS;
}

// The hints a window knows, with Iris's values: what MPI_Win_get_info
// gives. Iris acts on none of them (its accumulates are atomic per element
// whatever the ops, in order whatever the ordering asked for), but a
// program reads back what it set.
constexpr const char *known_hints[][2] = {
    {"accumulate_ordering", "rar,raw,war,waw"},
    {"accumulate_ops", "same_op_no_op"},
    {"no_locks", "false"},
    {"same_size", "false"},
    {"same_disp_unit", "false"},
    {"alloc_shared_noncontig", "false"},
    {"mpi_accumulate_granularity", "0"},
};

// The program's values for the known hints replace the window's.
void hints_take(window &w, const api::info_entries &given) {
  if (w.hints.empty()) {
    for (const auto &[key, value] : known_hints) w.hints.emplace_back(key, value);
  }
  for (const auto &[key, value] : given) {
    for (auto &hint : w.hints) {
      if (hint.first == key) hint.second = value;
    }
  }
}

int create_checks(const char *call, MPI_Comm comm, MPI_Aint size, std::int64_t disp_unit,
                  MPI_Win *win, communicator *&c) {
  if (int err = check_intracomm(call, comm, c)) return err;
  if (int err = check_not_null(call, c, win, "win")) return err;
  if (size < 0) return device::error_raise(c, call, MPI_ERR_SIZE, "negative size %td", size);
  if (disp_unit <= 0) {
    return device::error_raise(c, call, MPI_ERR_DISP, "displacement unit %lld is not positive",
                               static_cast<long long>(disp_unit));
  }
  return MPI_SUCCESS;
}

// This rank's memory made writable and readable by the netmod's RMA, where
// it has that (ofi with FI_RMA; IRIS_NET_RMA=1): peers on other nodes then
// put and get without this rank's help.
void expose_remote(window &w, std::size_t bytes) {
  if (w.flavor == MPI_WIN_FLAVOR_DYNAMIC || bytes == 0) return;
  for (const auto &t : device::rt->transports) {
    if (t->window_expose(w.base, bytes, w.region)) {
      w.exposed_by = t.get();
      return;
    }
  }
}

void destroy(window &w) {
  if (w.exposed_by != nullptr) w.exposed_by->window_conceal(w.region);
  conceal(w.ctl);
  if (w.flavor == MPI_WIN_FLAVOR_DYNAMIC) {
    for (const auto &[base, bytes] : w.attached) conceal(reinterpret_cast<void *>(base));
  } else if (w.size > 0) {
    conceal(w.base);
  }
  release(w.owned, w.owned_block, w.owned_mapped);
  if (w.acks != nullptr) device::counter_free(w.acks);
  device::comm_release(w.comm->handle);
}

// Creation in any flavor: the window's communicator, its memory (`base`
// and `size` for create; allocated for allocate and shared; none for
// dynamic), its control block, exposed, and the exchange.
int create(const char *call, MPI_Comm comm, MPI_Info info, int flavor, void *base, MPI_Aint size,
           std::int64_t disp_unit, MPI_Win *win, void *baseptr) {
  communicator *c = nullptr;
  if (int err = create_checks(call, comm, size, disp_unit, win, c)) return err;
  for (const int w : c->world_rank) {
    if (w >= device::rt->size) {
      return device::error_raise(c, call, MPI_ERR_UNSUPPORTED_OPERATION,
                                 "windows over processes of other jobs (MPI_Comm_connect/accept) "
                                 "are not supported yet");
    }
  }
  api::info_entries given;
  if (int err = api::info_read(call, c, info, given)) return err;
  if (flavor != MPI_WIN_FLAVOR_CREATE && flavor != MPI_WIN_FLAVOR_DYNAMIC) {
    if (int err = check_not_null(call, c, baseptr, "baseptr")) return err;
  }
  handlers_register();
  auto w = std::make_unique<window>();
  w->acks = device::counter_create();
  w->comm = own_comm(*c);
  w->flavor = flavor;
  w->disp_unit = disp_unit;
  w->errhandler = MPI_ERRORS_ARE_FATAL;
  hints_take(*w, given);
  const auto bytes = static_cast<std::size_t>(size);
  if (flavor == MPI_WIN_FLAVOR_SHARED) {
    // One segment for all, made by the lowest rank, contiguous across
    // ranks (MPI's default): rank r's memory follows rank r-1's. Control
    // blocks first, one per rank.
    for (int r = 1; r < c->size; ++r) {
      if (device::comm_node_of(*c, r) != device::comm_node_of(*c, 0)) {
        destroy(*w);
        return device::error_raise(c, call, MPI_ERR_RMA_SHARED,
                                   "ranks 0 and %d of the communicator are on different nodes "
                                   "(MPI_Comm_split_type with MPI_COMM_TYPE_SHARED gives a "
                                   "communicator whose ranks share memory)",
                                   r);
      }
    }
    std::vector<MPI_Aint> sizes(static_cast<std::size_t>(c->size));
    MPI_Allgather(&size, 1, MPI_AINT, sizes.data(), 1, MPI_AINT, w->comm->handle);
    std::size_t total = control_bytes * sizes.size() + base_skew, mine = 0;
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      if (static_cast<int>(r) == c->rank) mine = total;
      total += round_up(static_cast<std::size_t>(sizes[r]), 64);
    }
    std::string why;
    auto *whole = static_cast<std::byte *>(shared_segment(*w, total, why));
    int mapped = whole != nullptr ? 1 : 0, all_mapped = 0;
    MPI_Allreduce(&mapped, &all_mapped, 1, MPI_INT, MPI_MIN, w->comm->handle);
    if (all_mapped == 0) {
      destroy(*w);
      return device::error_raise(c, call, MPI_ERR_RMA_SHARED, "cannot share %zu bytes: %s", total,
                                 why.empty() ? "another rank could not map them" : why.c_str());
    }
    w->ctl = reinterpret_cast<control *>(whole + control_bytes * static_cast<std::size_t>(c->rank));
    w->base = size > 0 ? whole + mine : nullptr;  // no memory: NULL, as MPICH gives
    w->size = size;
  } else if (flavor == MPI_WIN_FLAVOR_ALLOCATE) {
    auto *p = static_cast<std::byte *>(allocate(control_bytes + base_skew + bytes, w->owned_block));
    if (p == nullptr) {
      destroy(*w);
      return device::error_raise(c, call, MPI_ERR_NO_MEM, "cannot allocate %zu bytes", bytes);
    }
    w->owned = p;
    w->ctl = reinterpret_cast<control *>(p);
    w->base = p + control_bytes + base_skew;
    w->size = size;
  } else {
    w->ctl = static_cast<control *>(allocate(control_bytes, w->owned_block));
    w->owned = w->ctl;
    w->base = flavor == MPI_WIN_FLAVOR_CREATE ? base : nullptr;
    w->size = flavor == MPI_WIN_FLAVOR_CREATE ? size : 0;
  }
  const bool exposed_memory = w->size == 0 || expose(w->base, bytes);
  if (w->ctl == nullptr || !expose(w->ctl, control_bytes) || !exposed_memory) {
    destroy(*w);
    return device::error_raise(c, call, MPI_ERR_NO_MEM,
                               "cannot expose the window (at most %zu regions exposed)",
                               device::exposure_slots);
  }
  expose_remote(*w, bytes);
  if (int err = exchange(call, *c, *w)) {
    destroy(*w);
    return err;
  }
  if (flavor == MPI_WIN_FLAVOR_SHARED) {
    // Every rank's memory and control block as this rank maps the block.
    std::byte *whole =
        reinterpret_cast<std::byte *>(w->ctl) - control_bytes * static_cast<std::size_t>(c->rank);
    std::size_t at = control_bytes * w->targets.size() + base_skew;
    for (std::size_t r = 0; r < w->targets.size(); ++r) {
      target &t = w->targets[r];
      t.ctl = reinterpret_cast<control *>(whole + control_bytes * r);
      t.mapped = whole + at;
      at += round_up(static_cast<std::size_t>(t.size), 64);
    }
  }
  if (baseptr != nullptr && flavor != MPI_WIN_FLAVOR_CREATE) {
    std::memcpy(baseptr, &w->base, sizeof(void *));
  }
  // Whether every rank maps every other's memory and control block: then
  // no op ever needs a target's handler, and no progress thread is wanted
  // for this window (nor the call lock it brings to every binding).
  int mapped_here = w->flavor == MPI_WIN_FLAVOR_DYNAMIC ? 0 : 1;
  for (const target &t : w->targets) {
    if (t.ctl == nullptr || (t.size > 0 && t.mapped == nullptr)) mapped_here = 0;
  }
  // Known here before any rank returns (the reduction waits for every
  // rank): a peer's first lock or accumulate message may arrive as soon as
  // it does, and finds the window by its communicator (of_comm).
  const int own = w->comm->handle;
  *win = new_handle(std::move(w));
  int mapped_everywhere = 0;
  MPI_Allreduce(&mapped_here, &mapped_everywhere, 1, MPI_INT, MPI_MIN, own);
  // Last: a progress thread may poll from here.
  if (mapped_everywhere == 0) device::am_progress_wanted();
  return MPI_SUCCESS;
}

// A predefined window attribute's value lives in the window.
struct attribute_values {
  MPI_Aint size;
  int disp_unit, flavor, model;
};
std::map<int, attribute_values> &attribute_store() {
  static std::map<int, attribute_values> all;
  return all;
}

}  // namespace

bool predefined_attr(window &w, int keyval, void **out) {
  attribute_values &v = attribute_store()[w.handle];
  v = {w.size, static_cast<int>(w.disp_unit), w.flavor, MPI_WIN_UNIFIED};
  switch (keyval) {
    case MPI_WIN_BASE:
      *out = w.base;
      return true;
    case MPI_WIN_SIZE:
      *out = &v.size;
      return true;
    case MPI_WIN_DISP_UNIT:
      *out = &v.disp_unit;
      return true;
    case MPI_WIN_CREATE_FLAVOR:
      *out = &v.flavor;
      return true;
    case MPI_WIN_MODEL:
      *out = &v.model;
      return true;
    default:
      return false;
  }
}

window *lookup(MPI_Win handle) {
  if (!device::handle_is(handle, device::handle_kind::win)) return nullptr;
  const std::size_t i = device::handle_index(handle);
  auto &all = windows();
  return i > 0 && i < all.size() ? all[i].get() : nullptr;
}

window *of_comm(int comm) {
  for (const auto &w : windows()) {
    if (w != nullptr && w->comm->handle == comm) return w.get();
  }
  return nullptr;
}

int check_window(const char *call, MPI_Win handle, window *&out) {
  if (int err = check_initialized(call)) return err;
  out = lookup(handle);
  if (out == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_WIN, "invalid window handle 0x%x",
                               static_cast<unsigned>(handle));
  }
  return MPI_SUCCESS;
}

int raise(const window &w, const char *call, int error_class, const char *format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  return device::error_raise_object(w.errhandler, w.handle, call, error_class, "%s", text);
}

void close_all() {
  replies_drain();
  for (auto &w : windows()) {
    if (w == nullptr) continue;
    destroy(*w);
    w.reset();
  }
}

}  // namespace iris::api::rma

using namespace iris::api::rma;

extern "C" {

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                   MPI_Win *win) {
  const device::api_guard guard;
  return create("MPI_Win_create", comm, info, MPI_WIN_FLAVOR_CREATE, base, size, disp_unit, win,
                nullptr);
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                     MPI_Win *win) {
  const device::api_guard guard;
  return create("MPI_Win_allocate", comm, info, MPI_WIN_FLAVOR_ALLOCATE, nullptr, size, disp_unit,
                win, baseptr);
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                            void *baseptr, MPI_Win *win) {
  const device::api_guard guard;
  return create("MPI_Win_allocate_shared", comm, info, MPI_WIN_FLAVOR_SHARED, nullptr, size,
                disp_unit, win, baseptr);
}

int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win) {
  const device::api_guard guard;
  return create("MPI_Win_create_dynamic", comm, info, MPI_WIN_FLAVOR_DYNAMIC, nullptr, 0, 1, win,
                nullptr);
}

int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr) {
  const device::api_guard guard;
  const char *call = "MPI_Win_shared_query";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (w->flavor != MPI_WIN_FLAVOR_SHARED) {
    return raise(*w, call, MPI_ERR_RMA_FLAVOR,
                 "the window was not made by MPI_Win_allocate_shared");
  }
  if (size == nullptr || disp_unit == nullptr || baseptr == nullptr) {
    return raise(*w, call, MPI_ERR_ARG, "NULL size, disp_unit or baseptr");
  }
  int r = rank;
  if (rank == MPI_PROC_NULL) {  // the first rank with memory
    r = 0;
    while (r + 1 < w->comm->size && w->targets[static_cast<std::size_t>(r)].size == 0) ++r;
  } else if (rank < 0 || rank >= w->comm->size) {
    return raise(*w, call, MPI_ERR_RANK, "rank %d out of range (size %d)", rank, w->comm->size);
  }
  const target &t = w->targets[static_cast<std::size_t>(r)];
  *size = static_cast<MPI_Aint>(t.size);
  *disp_unit = static_cast<int>(t.disp_unit);
  void *p = t.size > 0 ? t.mapped : nullptr;  // no memory: NULL, as MPICH gives
  std::memcpy(baseptr, &p, sizeof(void *));
  return MPI_SUCCESS;
}

int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size) {
  const device::api_guard guard;
  const char *call = "MPI_Win_attach";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
    return raise(*w, call, MPI_ERR_RMA_FLAVOR, "the window was not made by MPI_Win_create_dynamic");
  }
  if (size < 0) return raise(*w, call, MPI_ERR_SIZE, "negative size %td", size);
  if (base == nullptr && size > 0) return raise(*w, call, MPI_ERR_ARG, "NULL base");
  const auto at = reinterpret_cast<std::uintptr_t>(base);
  for (const auto &[b, n] : w->attached) {
    if (at < b + n && b < at + static_cast<std::uintptr_t>(size)) {
      return raise(*w, call, MPI_ERR_RMA_ATTACH, "[%p, +%td) overlaps memory attached already",
                   base, size);
    }
  }
  if (size > 0 && !expose(base, static_cast<std::size_t>(size))) {
    return raise(*w, call, MPI_ERR_RMA_ATTACH, "at most %zu regions may be exposed",
                 device::exposure_slots);
  }
  w->attached.emplace_back(at, static_cast<std::size_t>(size));
  return MPI_SUCCESS;
}

int MPI_Win_detach(MPI_Win win, const void *base) {
  const device::api_guard guard;
  const char *call = "MPI_Win_detach";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
    return raise(*w, call, MPI_ERR_RMA_FLAVOR, "the window was not made by MPI_Win_create_dynamic");
  }
  const auto at = reinterpret_cast<std::uintptr_t>(base);
  for (std::size_t i = 0; i < w->attached.size(); ++i) {
    if (w->attached[i].first != at) continue;
    if (w->attached[i].second > 0) conceal(const_cast<void *>(base));
    w->attached.erase(w->attached.begin() + static_cast<std::ptrdiff_t>(i));
    return MPI_SUCCESS;
  }
  return raise(*w, call, MPI_ERR_RMA_ATTACH, "%p is not attached to the window", base);
}

int MPI_Win_free(MPI_Win *win) {
  const device::api_guard guard;
  const char *call = "MPI_Win_free";
  if (int err = api::check_not_null(call, nullptr, win, "win")) return err;
  window *w = nullptr;
  if (int err = check_window(call, *win, w)) return err;
  if (w->lock_all || w->locks > 0 || w->access_open || w->exposure_open) {
    return raise(*w, call, MPI_ERR_RMA_SYNC,
                 "an epoch is still open (unlock, or end the PSCW epochs, first)");
  }
  // The program's attributes go first, their delete callbacks run, as
  // MPI_Comm_free's do.
  const device::attr_result deleted = device::attrs_delete_all(device::attr_kind::win, *win);
  if (!deleted.ok()) {
    return raise(*w, call, deleted.code, "an attribute's delete callback returned error %d",
                 deleted.code);
  }
  std::string why;
  const int err = complete(*w, -1, why);
  // Collective: every rank's ops into this one's memory have completed.
  MPI_Barrier(w->comm->handle);
  destroy(*w);
  windows()[device::handle_index(*win)].reset();
  attribute_store().erase(*win);
  *win = MPI_WIN_NULL;
  if (err != MPI_SUCCESS) return device::error_raise(nullptr, call, err, "%s", why.c_str());
  return MPI_SUCCESS;
}

int MPI_Win_get_group(MPI_Win win, MPI_Group *group) {
  const device::api_guard guard;
  const char *call = "MPI_Win_get_group";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (group == nullptr) return raise(*w, call, MPI_ERR_ARG, "group is NULL");
  *group = device::group_register(w->comm->world_rank);
  return MPI_SUCCESS;
}

int MPI_Win_set_name(MPI_Win win, const char *win_name) {
  const device::api_guard guard;
  const char *call = "MPI_Win_set_name";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (win_name == nullptr) return raise(*w, call, MPI_ERR_ARG, "win_name is NULL");
  w->name.assign(win_name, strnlen(win_name, MPI_MAX_OBJECT_NAME - 1));
  return MPI_SUCCESS;
}

int MPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen) {
  const device::api_guard guard;
  const char *call = "MPI_Win_get_name";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (win_name == nullptr || resultlen == nullptr) {
    return raise(*w, call, MPI_ERR_ARG, "NULL win_name or resultlen");
  }
  std::memcpy(win_name, w->name.c_str(), w->name.size() + 1);
  *resultlen = static_cast<int>(w->name.size());
  return MPI_SUCCESS;
}

int MPI_Win_set_info(MPI_Win win, MPI_Info info) {
  const device::api_guard guard;
  const char *call = "MPI_Win_set_info";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  api::info_entries given;
  if (int err = api::info_read(call, nullptr, info, given)) return err;
  hints_take(*w, given);
  return MPI_SUCCESS;
}

int MPI_Win_get_info(MPI_Win win, MPI_Info *info_used) {
  const device::api_guard guard;
  const char *call = "MPI_Win_get_info";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (info_used == nullptr) return raise(*w, call, MPI_ERR_ARG, "info_used is NULL");
  *info_used = api::info_make(w->hints);
  return MPI_SUCCESS;
}

int MPI_Win_create_errhandler(MPI_Win_errhandler_function *win_errhandler_fn,
                              MPI_Errhandler *errhandler) {
  const device::api_guard guard;
  const char *call = "MPI_Win_create_errhandler";
  if (int err = api::check_initialized(call)) return err;
  if (win_errhandler_fn == nullptr || errhandler == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "NULL function or errhandler");
  }
  // Same shape as a communicator's: (handle *, code *, ...).
  *errhandler =
      device::errhandler_create(reinterpret_cast<device::comm_errhandler_fn *>(win_errhandler_fn));
  return MPI_SUCCESS;
}

int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler) {
  const device::api_guard guard;
  const char *call = "MPI_Win_set_errhandler";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (!device::errhandler_valid(errhandler)) {
    return raise(*w, call, MPI_ERR_ERRHANDLER, "invalid error handler handle 0x%x",
                 static_cast<unsigned>(errhandler));
  }
  w->errhandler = errhandler;
  return MPI_SUCCESS;
}

int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler) {
  const device::api_guard guard;
  const char *call = "MPI_Win_get_errhandler";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (errhandler == nullptr) return raise(*w, call, MPI_ERR_ARG, "errhandler is NULL");
  *errhandler = w->errhandler;
  return MPI_SUCCESS;
}

int MPI_Win_call_errhandler(MPI_Win win, int errorcode) {
  const device::api_guard guard;
  const char *call = "MPI_Win_call_errhandler";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  const char *text = device::error_code_text(errorcode);
  raise(*w, call, errorcode, "error code %d: %s", errorcode,
        text != nullptr && text[0] != '\0' ? text : "(no error string)");
  return MPI_SUCCESS;
}

}  // extern "C"
