/* Derived datatypes through every call that takes a datatype, at any number
 * of ranks: Bsend and Ibsend (into an attached buffer sized by
 * MPI_Pack_size), Mrecv and Imrecv, Sendrecv_replace, persistent requests
 * restarted several times, and every collective, with the reductions over a
 * user-defined op. Two layouts: a vector of ints (blocks with gaps inside
 * each element) and a struct resized to a negative lower bound (data before
 * the address given, padding between elements). Every received int is
 * checked, and so is every int between the blocks, which must stay as it
 * was. Message sizes straddle the live eager limit. Under MPI_ERRORS_RETURN,
 * a predefined op on a derived type is MPI_ERR_OP and an uncommitted type
 * MPI_ERR_TYPE. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank;
static int size;

enum { gap = -7, hole = -1, tag_a = 1, tag_b = 2 };

/* A datatype and where its data lies, in ints: element i's ints are at
 * i * ext + at[j] from the address given (at[j] may be negative). */
struct layout {
  const char *name;
  MPI_Datatype type;
  int ext; /* extent in ints */
  int n;   /* ints of data in one element */
  int at[8];
  int lead; /* ints before the address given that the data may use */
  int tail; /* ints after count * ext that the data may use */
};

static struct layout vector_layout; /* 3 blocks of 2 ints, 5 ints apart */
static struct layout struct_layout; /* an int at -8 and one at +8 bytes, extent 24 */
static struct layout *layouts[2] = {&vector_layout, &struct_layout};

static int extent_ints(MPI_Datatype t) {
  MPI_Aint lb = 0;
  MPI_Aint extent = 0;
  MPI_Type_get_extent(t, &lb, &extent);
  return (int)(extent / (MPI_Aint)sizeof(int));
}

static void finish_layout(struct layout *l) {
  MPI_Type_commit(&l->type);
  l->ext = extent_ints(l->type);
  l->lead = 0;
  l->tail = 0;
  for (int j = 0; j < l->n; ++j) {
    if (-l->at[j] > l->lead) l->lead = -l->at[j];
    if (l->at[j] + 1 - l->ext > l->tail) l->tail = l->at[j] + 1 - l->ext;
  }
  int sz = 0;
  MPI_Type_size(l->type, &sz);
  CHECK(sz == l->n * (int)sizeof(int), "%s: size %d, %d ints expected", l->name, sz, l->n);
}

static void make_layouts(void) {
  enum { blocks = 3, blocklen = 2, stride = 5 };
  vector_layout.name = "vector";
  MPI_Type_vector(blocks, blocklen, stride, MPI_INT, &vector_layout.type);
  vector_layout.n = 0;
  for (int b = 0; b < blocks; ++b) {
    for (int j = 0; j < blocklen; ++j) vector_layout.at[vector_layout.n++] = b * stride + j;
  }
  finish_layout(&vector_layout);
  CHECK(vector_layout.ext == (blocks - 1) * stride + blocklen, "vector extent %d ints",
        vector_layout.ext);

  struct_layout.name = "resized struct";
  const int lens[2] = {1, 1};
  const MPI_Aint displs[2] = {-2 * (MPI_Aint)sizeof(int), 2 * (MPI_Aint)sizeof(int)};
  const MPI_Datatype types[2] = {MPI_INT, MPI_INT};
  MPI_Datatype raw;
  MPI_Type_create_struct(2, lens, displs, types, &raw);
  MPI_Type_create_resized(raw, displs[0], 6 * (MPI_Aint)sizeof(int), &struct_layout.type);
  MPI_Type_free(&raw);
  struct_layout.n = 2;
  struct_layout.at[0] = -2;
  struct_layout.at[1] = 2;
  finish_layout(&struct_layout);
  MPI_Aint lb = 0;
  MPI_Aint extent = 0;
  MPI_Type_get_extent(struct_layout.type, &lb, &extent);
  CHECK(lb == displs[0] && struct_layout.ext == 6, "resized struct lb %ld extent %d ints", (long)lb,
        struct_layout.ext);
}

/* A buffer of `count` elements of a layout. */
struct vbuf {
  const struct layout *l;
  int count;
  int len; /* ints in mem */
  int *mem;
  int *base; /* the address MPI is given */
};

static struct vbuf vb_new(const struct layout *l, int count) {
  struct vbuf v;
  v.l = l;
  v.count = count;
  v.len = l->lead + count * l->ext + l->tail;
  v.mem = malloc(((size_t)v.len + 1) * sizeof(int));
  v.base = v.mem + l->lead;
  return v;
}

static void vb_free(struct vbuf *v) {
  free(v->mem);
  v->mem = v->base = NULL;
}

/* The value of data int k of a message from `seed`; never gap or hole. */
static int value(int seed, long k) {
  return (int)(((unsigned)seed * 2654435761u + (unsigned)k * 40503u + 12345u) & 0x3fffffffu);
}

static int *data_int(const struct vbuf *v, int element, int j) {
  return v->base + element * v->l->ext + v->l->at[j];
}

/* Elements [first, first + n) hold data k0, k0 + 1, ... of `seed`. */
static void vb_fill_part(struct vbuf *v, int first, int n, int seed, long k0) {
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < v->l->n; ++j)
      *data_int(v, first + i, j) = value(seed, k0 + (long)i * v->l->n + j);
  }
}

/* Every int a gap, every data int `seed`'s value (hole when seed < 0). */
static void vb_fill(struct vbuf *v, int seed) {
  for (int i = 0; i < v->len; ++i) v->mem[i] = gap;
  for (int i = 0; i < v->count; ++i) {
    for (int j = 0; j < v->l->n; ++j) {
      *data_int(v, i, j) = seed < 0 ? hole : value(seed, (long)i * v->l->n + j);
    }
  }
}

/* Wrong data ints among elements [first, first + n): expected data k0, ...
 * of `seed` (hole when seed < 0). */
static int vb_bad_part(const struct vbuf *v, int first, int n, int seed, long k0) {
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < v->l->n; ++j) {
      const int want = seed < 0 ? hole : value(seed, k0 + (long)i * v->l->n + j);
      bad += *data_int(v, first + i, j) != want;
    }
  }
  return bad;
}

/* Ints between the blocks that are no longer gaps. */
static int vb_bad_gaps(const struct vbuf *v) {
  char *is_data = calloc((size_t)v->len + 1, 1);
  for (int i = 0; i < v->count; ++i) {
    for (int j = 0; j < v->l->n; ++j) is_data[data_int(v, i, j) - v->mem] = 1;
  }
  int bad = 0;
  for (int i = 0; i < v->len; ++i) bad += !is_data[i] && v->mem[i] != gap;
  free(is_data);
  return bad;
}

static int vb_bad(const struct vbuf *v, int seed) {
  return vb_bad_part(v, 0, v->count, seed, 0) + vb_bad_gaps(v);
}

/* Counts of elements around the eager limit (live), and a rendezvous one. */
static int counts[4];
static void pick_counts(const struct layout *l) {
  MPI_Count eager = 0;
  MPIX_Stat_get("eager_limit", &eager);
  const int per = l->n * (int)sizeof(int);
  counts[0] = 1;
  counts[1] = (int)(eager / per) > 0 ? (int)(eager / per) : 1; /* packed <= eager */
  counts[2] = (int)(eager / per) + 1;                          /* packed > eager */
  counts[3] = (int)(4 * eager / per) + 3;
}

static int right(void) {
  return (rank + 1) % size;
}
static int left(void) {
  return (rank - 1 + size) % size;
}

/* --- point to point ------------------------------------------------------ */

/* A buffer of exactly two packed messages plus their overhead: a message
 * budgeted by its extent instead of its packed size would not fit. */
static void bsend(const struct layout *l, int count) {
  int packed = 0;
  MPI_Pack_size(count, l->type, MPI_COMM_WORLD, &packed);
  CHECK(packed == count * l->n * (int)sizeof(int), "%s: Pack_size %d", l->name, packed);
  const int room = 2 * (packed + MPI_BSEND_OVERHEAD);
  char *attached = malloc((size_t)room);
  MPI_Buffer_attach(attached, room);
  struct vbuf out = vb_new(l, count);
  vb_fill(&out, rank);
  CHECK(MPI_Bsend(out.base, count, l->type, right(), tag_a, MPI_COMM_WORLD) == MPI_SUCCESS,
        "%s: Bsend", l->name);
  MPI_Request r;
  CHECK(MPI_Ibsend(out.base, count, l->type, right(), tag_b, MPI_COMM_WORLD, &r) == MPI_SUCCESS,
        "%s: Ibsend", l->name);
  vb_fill(&out, size + 1); /* the messages were copied: changing the buffer changes nothing */
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  struct vbuf in = vb_new(l, count);
  vb_fill(&in, -1);
  MPI_Status st;
  MPI_Recv(in.base, count, l->type, left(), tag_a, MPI_COMM_WORLD, &st);
  int got = -1;
  MPI_Get_count(&st, l->type, &got);
  CHECK(got == count && vb_bad(&in, left()) == 0, "%s: Bsend of %d: got %d, %d ints wrong", l->name,
        count, got, vb_bad(&in, left()));
  /* The Ibsend into a contiguous array: the same signature, packed. */
  int *flat = malloc(((size_t)count * l->n + 1) * sizeof(int));
  MPI_Recv(flat, count * l->n, MPI_INT, left(), tag_b, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  int bad = 0;
  for (long k = 0; k < (long)count * l->n; ++k) bad += flat[k] != value(left(), k);
  CHECK(bad == 0, "%s: Ibsend of %d into ints: %d wrong", l->name, count, bad);
  void *detached = NULL;
  int detached_size = 0;
  MPI_Buffer_detach(&detached, &detached_size);
  CHECK(detached == attached && detached_size == room, "detach");
  free(flat);
  free(attached);
  vb_free(&in);
  vb_free(&out);
}

static void mrecv(const struct layout *l, int count) {
  struct vbuf out = vb_new(l, count);
  vb_fill(&out, rank);
  MPI_Request sends[2];
  MPI_Isend(out.base, count, l->type, right(), tag_a, MPI_COMM_WORLD, &sends[0]);
  MPI_Isend(out.base, count, l->type, right(), tag_b, MPI_COMM_WORLD, &sends[1]);
  struct vbuf in = vb_new(l, count);
  vb_fill(&in, -1);
  MPI_Message m;
  MPI_Status st;
  MPI_Mprobe(left(), tag_a, MPI_COMM_WORLD, &m, &st);
  CHECK(MPI_Mrecv(in.base, count, l->type, &m, &st) == MPI_SUCCESS, "%s: Mrecv", l->name);
  int got = -1;
  MPI_Get_count(&st, l->type, &got);
  CHECK(got == count && vb_bad(&in, left()) == 0, "%s: Mrecv of %d: got %d, %d ints wrong", l->name,
        count, got, vb_bad(&in, left()));
  vb_fill(&in, -1);
  int flag = 0;
  while (!flag) MPI_Improbe(left(), tag_b, MPI_COMM_WORLD, &flag, &m, &st);
  MPI_Request r;
  CHECK(MPI_Imrecv(in.base, count, l->type, &m, &r) == MPI_SUCCESS, "%s: Imrecv", l->name);
  MPI_Wait(&r, &st);
  CHECK(vb_bad(&in, left()) == 0, "%s: Imrecv of %d: %d ints wrong", l->name, count,
        vb_bad(&in, left()));
  MPI_Waitall(2, sends, MPI_STATUSES_IGNORE);
  vb_free(&in);
  vb_free(&out);
}

static void sendrecv_replace(const struct layout *l, int count) {
  struct vbuf buf = vb_new(l, count);
  vb_fill(&buf, rank);
  MPI_Status st;
  CHECK(MPI_Sendrecv_replace(buf.base, count, l->type, right(), tag_a, left(), tag_a,
                             MPI_COMM_WORLD, &st) == MPI_SUCCESS,
        "%s: Sendrecv_replace", l->name);
  CHECK(st.MPI_SOURCE == left() && vb_bad(&buf, left()) == 0,
        "%s: Sendrecv_replace of %d: %d ints wrong", l->name, count, vb_bad(&buf, left()));
  vb_free(&buf);
}

/* Standard, synchronous and buffered persistent sends and their receives,
 * started five times with new data each time. */
static void persistent(const struct layout *l, int count) {
  enum { rounds = 5, kinds = 3 };
  int packed = 0;
  MPI_Pack_size(count, l->type, MPI_COMM_WORLD, &packed);
  const int room = rounds * (packed + MPI_BSEND_OVERHEAD); /* earlier rounds may not be done */
  char *attached = malloc((size_t)room);
  MPI_Buffer_attach(attached, room);
  struct vbuf out[kinds];
  struct vbuf in[kinds];
  MPI_Request r[2 * kinds];
  /* The standard pair uses a duplicate freed at once: the requests keep
   * the type. */
  MPI_Datatype dup;
  MPI_Type_dup(l->type, &dup);
  for (int k = 0; k < kinds; ++k) {
    out[k] = vb_new(l, count);
    in[k] = vb_new(l, count);
    MPI_Recv_init(in[k].base, count, k == 0 ? dup : l->type, left(), 10 + k, MPI_COMM_WORLD,
                  &r[kinds + k]);
  }
  MPI_Send_init(out[0].base, count, dup, right(), 10, MPI_COMM_WORLD, &r[0]);
  MPI_Type_free(&dup);
  MPI_Ssend_init(out[1].base, count, l->type, right(), 11, MPI_COMM_WORLD, &r[1]);
  MPI_Bsend_init(out[2].base, count, l->type, right(), 12, MPI_COMM_WORLD, &r[2]);
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < kinds; ++k) {
      vb_fill(&out[k], rank * 100 + round * kinds + k);
      vb_fill(&in[k], -1);
    }
    MPI_Startall(kinds, &r[kinds]);
    MPI_Startall(kinds, r);
    MPI_Waitall(2 * kinds, r, MPI_STATUSES_IGNORE);
    for (int k = 0; k < kinds; ++k) {
      const int seed = left() * 100 + round * kinds + k;
      CHECK(vb_bad(&in[k], seed) == 0, "%s: persistent kind %d round %d of %d: %d ints wrong",
            l->name, k, round, count, vb_bad(&in[k], seed));
    }
  }
  for (int k = 0; k < 2 * kinds; ++k) MPI_Request_free(&r[k]);
  void *detached = NULL;
  int detached_size = 0;
  MPI_Buffer_detach(&detached, &detached_size);
  free(attached);
  for (int k = 0; k < kinds; ++k) {
    vb_free(&out[k]);
    vb_free(&in[k]);
  }
}

/* --- collectives that move data -------------------------------------------- */

static void bcast(const struct layout *l, int count, int root) {
  struct vbuf buf = vb_new(l, count);
  vb_fill(&buf, rank == root ? root : -1);
  CHECK(MPI_Bcast(buf.base, count, l->type, root, MPI_COMM_WORLD) == MPI_SUCCESS, "Bcast");
  CHECK(vb_bad(&buf, root) == 0, "%s: Bcast of %d from %d: %d ints wrong", l->name, count, root,
        vb_bad(&buf, root));
  vb_free(&buf);
}

/* Gather and Scatter: block i at element i * count; also in place. */
static void gather_scatter(const struct layout *l, int count, int root) {
  struct vbuf mine = vb_new(l, count);
  struct vbuf all = vb_new(l, count * size);
  vb_fill(&mine, rank);
  vb_fill(&all, -1);
  MPI_Gather(mine.base, count, l->type, all.base, count, l->type, root, MPI_COMM_WORLD);
  if (rank == root) {
    int bad = vb_bad_gaps(&all);
    for (int i = 0; i < size; ++i) bad += vb_bad_part(&all, i * count, count, i, 0);
    CHECK(bad == 0, "%s: Gather of %d to %d: %d ints wrong", l->name, count, root, bad);
    /* In place: root's block is already where it belongs. */
    vb_fill(&all, -1);
    vb_fill_part(&all, root * count, count, root, 0);
  }
  MPI_Gather(rank == root ? MPI_IN_PLACE : mine.base, count, l->type, all.base, count, l->type,
             root, MPI_COMM_WORLD);
  if (rank == root) {
    int bad = vb_bad_gaps(&all);
    for (int i = 0; i < size; ++i) bad += vb_bad_part(&all, i * count, count, i, 0);
    CHECK(bad == 0, "%s: Gather in place of %d to %d: %d ints wrong", l->name, count, root, bad);
  }
  /* Scatter the gathered blocks back out. */
  vb_fill(&mine, -1);
  MPI_Scatter(all.base, count, l->type, mine.base, count, l->type, root, MPI_COMM_WORLD);
  CHECK(vb_bad(&mine, rank) == 0, "%s: Scatter of %d from %d: %d ints wrong", l->name, count, root,
        vb_bad(&mine, rank));
  vb_free(&mine);
  vb_free(&all);
}

/* Counts count + (i % 2) and displacements with one untouched element
 * before every block: the skipped elements must stay holes. */
static void v_shape(int count, int *counts_out, int *displs, int *total, int shift) {
  int at = 0;
  for (int i = 0; i < size; ++i) {
    counts_out[i] = count + (i + shift) % 2;
    displs[i] = at + 1;
    at += counts_out[i] + 1;
  }
  *total = at;
}

static int v_bad(const struct vbuf *all, const int *cnt, const int *displs, int (*seed)(int)) {
  int bad = vb_bad_gaps(all);
  for (int i = 0; i < size; ++i) {
    bad += vb_bad_part(all, displs[i] - 1, 1, -1, 0);
    bad += vb_bad_part(all, displs[i], cnt[i], seed(i), 0);
  }
  return bad;
}

static int seed_is_rank(int i) {
  return i;
}

static void gatherv_scatterv(const struct layout *l, int count, int root) {
  int *cnt = malloc(sizeof(int) * (size_t)size);
  int *displs = malloc(sizeof(int) * (size_t)size);
  int total = 0;
  v_shape(count, cnt, displs, &total, 0);
  struct vbuf mine = vb_new(l, cnt[rank]);
  struct vbuf all = vb_new(l, total);
  vb_fill(&mine, rank);
  vb_fill(&all, -1);
  MPI_Gatherv(mine.base, cnt[rank], l->type, all.base, cnt, displs, l->type, root, MPI_COMM_WORLD);
  if (rank == root) {
    const int bad = v_bad(&all, cnt, displs, seed_is_rank);
    CHECK(bad == 0, "%s: Gatherv of ~%d to %d: %d ints wrong", l->name, count, root, bad);
  }
  vb_fill(&mine, -1);
  MPI_Scatterv(all.base, cnt, displs, l->type, mine.base, cnt[rank], l->type, root, MPI_COMM_WORLD);
  CHECK(vb_bad(&mine, rank) == 0, "%s: Scatterv of ~%d from %d: %d ints wrong", l->name, count,
        root, vb_bad(&mine, rank));
  vb_free(&mine);
  vb_free(&all);
  free(cnt);
  free(displs);
}

static void allgather(const struct layout *l, int count) {
  struct vbuf mine = vb_new(l, count);
  struct vbuf all = vb_new(l, count * size);
  vb_fill(&mine, rank);
  vb_fill(&all, -1);
  MPI_Allgather(mine.base, count, l->type, all.base, count, l->type, MPI_COMM_WORLD);
  int bad = vb_bad_gaps(&all);
  for (int i = 0; i < size; ++i) bad += vb_bad_part(&all, i * count, count, i, 0);
  CHECK(bad == 0, "%s: Allgather of %d: %d ints wrong", l->name, count, bad);
  vb_fill(&all, -1);
  vb_fill_part(&all, rank * count, count, rank, 0);
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all.base, count, l->type, MPI_COMM_WORLD);
  bad = vb_bad_gaps(&all);
  for (int i = 0; i < size; ++i) bad += vb_bad_part(&all, i * count, count, i, 0);
  CHECK(bad == 0, "%s: Allgather in place of %d: %d ints wrong", l->name, count, bad);

  int *cnt = malloc(sizeof(int) * (size_t)size);
  int *displs = malloc(sizeof(int) * (size_t)size);
  int total = 0;
  v_shape(count, cnt, displs, &total, 0);
  struct vbuf v = vb_new(l, total);
  struct vbuf vmine = vb_new(l, cnt[rank]);
  vb_fill(&vmine, rank);
  vb_fill(&v, -1);
  MPI_Allgatherv(vmine.base, cnt[rank], l->type, v.base, cnt, displs, l->type, MPI_COMM_WORLD);
  bad = v_bad(&v, cnt, displs, seed_is_rank);
  CHECK(bad == 0, "%s: Allgatherv of ~%d: %d ints wrong", l->name, count, bad);
  vb_free(&v);
  vb_free(&vmine);
  vb_free(&mine);
  vb_free(&all);
  free(cnt);
  free(displs);
}

/* Block j of rank r's send buffer is seed r * size + j. */
static void alltoall(const struct layout *l, int count) {
  struct vbuf out = vb_new(l, count * size);
  struct vbuf in = vb_new(l, count * size);
  vb_fill(&out, -1);
  for (int j = 0; j < size; ++j) vb_fill_part(&out, j * count, count, rank * size + j, 0);
  vb_fill(&in, -1);
  MPI_Alltoall(out.base, count, l->type, in.base, count, l->type, MPI_COMM_WORLD);
  int bad = vb_bad_gaps(&in);
  for (int i = 0; i < size; ++i) bad += vb_bad_part(&in, i * count, count, i * size + rank, 0);
  CHECK(bad == 0, "%s: Alltoall of %d: %d ints wrong", l->name, count, bad);
  /* In place: the send blocks start in the receive buffer. */
  MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out.base, count, l->type, MPI_COMM_WORLD);
  bad = vb_bad_gaps(&out);
  for (int i = 0; i < size; ++i) bad += vb_bad_part(&out, i * count, count, i * size + rank, 0);
  CHECK(bad == 0, "%s: Alltoall in place of %d: %d ints wrong", l->name, count, bad);

  /* Alltoallv: rank r sends count + (r + j) % 2 elements to j. */
  int *scnt = malloc(sizeof(int) * (size_t)size);
  int *sdispls = malloc(sizeof(int) * (size_t)size);
  int *rcnt = malloc(sizeof(int) * (size_t)size);
  int *rdispls = malloc(sizeof(int) * (size_t)size);
  int stotal = 0;
  int rtotal = 0;
  v_shape(count, scnt, sdispls, &stotal, rank);
  v_shape(count, rcnt, rdispls, &rtotal, rank);
  struct vbuf vout = vb_new(l, stotal);
  struct vbuf vin = vb_new(l, rtotal);
  vb_fill(&vout, -1);
  for (int j = 0; j < size; ++j) vb_fill_part(&vout, sdispls[j], scnt[j], rank * size + j, 0);
  vb_fill(&vin, -1);
  MPI_Alltoallv(vout.base, scnt, sdispls, l->type, vin.base, rcnt, rdispls, l->type,
                MPI_COMM_WORLD);
  bad = vb_bad_gaps(&vin);
  for (int i = 0; i < size; ++i) {
    bad += vb_bad_part(&vin, rdispls[i] - 1, 1, -1, 0);
    bad += vb_bad_part(&vin, rdispls[i], rcnt[i], i * size + rank, 0);
  }
  CHECK(bad == 0, "%s: Alltoallv of ~%d: %d ints wrong", l->name, count, bad);
  vb_free(&vout);
  vb_free(&vin);
  free(scnt);
  free(sdispls);
  free(rcnt);
  free(rdispls);
  vb_free(&out);
  vb_free(&in);
}

/* --- reductions with a user op over the layout ----------------------------- */

static const struct layout *layout_of(MPI_Datatype t) {
  for (int i = 0; i < 2; ++i) {
    if (layouts[i]->type == t) return layouts[i];
  }
  return NULL;
}

static int op_wrong_type = 0;

/* inout = in + inout on the data ints only, wrapping; it reads its operands
 * in the type's layout, as MPI hands them over. */
static void layout_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  const struct layout *l = layout_of(*type);
  if (l == NULL) {
    ++op_wrong_type;
    return;
  }
  const int *a = in;
  int *b = inout;
  for (int i = 0; i < *len; ++i) {
    for (int j = 0; j < l->n; ++j) {
      const long at = (long)i * l->ext + l->at[j];
      b[at] = (int)((unsigned)a[at] + (unsigned)b[at]);
    }
  }
}

/* Data int k of the sum over ranks [lo, hi) of each rank's value(r, k0 + k). */
static int sum_value(int lo, int hi, long k) {
  unsigned s = 0;
  for (int r = lo; r < hi; ++r) s += (unsigned)value(r, k);
  return (int)s;
}

static int sum_bad(const struct vbuf *v, int lo, int hi, long k0) {
  int bad = vb_bad_gaps(v);
  for (int i = 0; i < v->count; ++i) {
    for (int j = 0; j < v->l->n; ++j) {
      bad += *data_int(v, i, j) != sum_value(lo, hi, k0 + (long)i * v->l->n + j);
    }
  }
  return bad;
}

static void reductions(const struct layout *l, int count, MPI_Op op) {
  struct vbuf in = vb_new(l, count);
  struct vbuf out = vb_new(l, count);
  vb_fill(&in, rank);
  for (int k = 0; k < 2; ++k) {
    const int root = k == 0 ? 0 : size - 1;
    vb_fill(&out, -1);
    MPI_Reduce(in.base, out.base, count, l->type, op, root, MPI_COMM_WORLD);
    if (rank == root) {
      CHECK(sum_bad(&out, 0, size, 0) == 0, "%s: Reduce of %d to %d: %d ints wrong", l->name, count,
            root, sum_bad(&out, 0, size, 0));
    }
  }
  vb_fill(&out, -1);
  MPI_Allreduce(in.base, out.base, count, l->type, op, MPI_COMM_WORLD);
  CHECK(sum_bad(&out, 0, size, 0) == 0, "%s: Allreduce of %d: %d ints wrong", l->name, count,
        sum_bad(&out, 0, size, 0));
  vb_fill(&out, rank);
  MPI_Allreduce(MPI_IN_PLACE, out.base, count, l->type, op, MPI_COMM_WORLD);
  CHECK(sum_bad(&out, 0, size, 0) == 0, "%s: Allreduce in place of %d: %d ints wrong", l->name,
        count, sum_bad(&out, 0, size, 0));
  vb_fill(&out, -1);
  MPI_Scan(in.base, out.base, count, l->type, op, MPI_COMM_WORLD);
  CHECK(sum_bad(&out, 0, rank + 1, 0) == 0, "%s: Scan of %d: %d ints wrong", l->name, count,
        sum_bad(&out, 0, rank + 1, 0));
  vb_fill(&out, -1);
  MPI_Exscan(in.base, out.base, count, l->type, op, MPI_COMM_WORLD);
  if (rank > 0) { /* rank 0's result is undefined */
    CHECK(sum_bad(&out, 0, rank, 0) == 0, "%s: Exscan of %d: %d ints wrong", l->name, count,
          sum_bad(&out, 0, rank, 0));
  }
  CHECK(vb_bad_gaps(&out) == 0, "%s: Exscan of %d wrote between blocks", l->name, count);
  /* Reduce_scatter_block: block i of the sum goes to rank i. */
  struct vbuf all = vb_new(l, count * size);
  vb_fill(&all, rank);
  vb_fill(&out, -1);
  MPI_Reduce_scatter_block(all.base, out.base, count, l->type, op, MPI_COMM_WORLD);
  const long k0 = (long)rank * count * l->n;
  CHECK(sum_bad(&out, 0, size, k0) == 0, "%s: Reduce_scatter_block of %d: %d ints wrong", l->name,
        count, sum_bad(&out, 0, size, k0));
  vb_free(&all);
  vb_free(&in);
  vb_free(&out);
}

/* --- errors -------------------------------------------------------------- */

static void expect_class(int err, int want, const char *what) {
  int cls = -1;
  MPI_Error_class(err, &cls);
  CHECK(cls == want, "%s: class %d, expected %d", what, cls, want);
}

/* A message that ends part-way through an int of a strided receive type
 * (MPICH's errors/pt2pt/truncmsg2): MPI_ERR_TYPE from Recv, Wait and, in its
 * status, Waitall, eager and rendezvous; the bytes that came are still
 * delivered. */
static void signature_mismatch(void) {
  const int n = (int)(iris_limit("eager_limit") / (int)sizeof(int)) + 64;
  const int sizes[] = {3, 4 * n - 1};
  MPI_Datatype strided;
  MPI_Type_vector(n, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  unsigned char *out = malloc((size_t)(4 * n));
  int *in = malloc(sizeof(int) * (size_t)(2 * n));
  memset(out, 0x5a, (size_t)(4 * n));
  for (int k = 0; k < 2; ++k) {
    for (int how = 0; how < 3; ++how) {
      memset(in, 0, sizeof(int) * (size_t)(2 * n));
      MPI_Request s;
      MPI_Request r;
      MPI_Status st;
      MPI_Isend(out, sizes[k], MPI_BYTE, right(), 90 + how, MPI_COMM_WORLD, &s);
      int err = MPI_SUCCESS;
      if (how == 0) {
        err = MPI_Recv(in, 1, strided, left(), 90, MPI_COMM_WORLD, &st);
      } else {
        MPI_Irecv(in, 1, strided, left(), 90 + how, MPI_COMM_WORLD, &r);
        if (how == 1) {
          err = MPI_Wait(&r, &st);
        } else {
          st.MPI_ERROR = MPI_SUCCESS;
          const int all = MPI_Waitall(1, &r, &st);
          CHECK(all == MPI_ERR_IN_STATUS, "Waitall of a mismatched signature returned %d", all);
          err = st.MPI_ERROR;
        }
      }
      int cls = -1;
      MPI_Error_class(err, &cls);
      CHECK(cls == MPI_ERR_TYPE, "%d bytes into ints (way %d): class %d", sizes[k], how, cls);
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      CHECK(count == sizes[k], "the status of %d mismatched bytes says %d", sizes[k], count);
      CHECK(in[0] == 0x5a5a5a5a || (sizes[k] == 3 && (in[0] & 0xffffff) == 0x5a5a5a),
            "the bytes that came were not delivered: %#x", in[0]);
      CHECK(in[1] == 0, "a gap of the strided type was written: %#x", in[1]);
      MPI_Wait(&s, MPI_STATUS_IGNORE);
    }
  }
  free(out);
  free(in);
  MPI_Type_free(&strided);
}

/* Every rank makes the same bad call, so none waits for another. */
static void errors(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const struct layout *l = &vector_layout;
  struct vbuf a = vb_new(l, 2);
  struct vbuf b = vb_new(l, 2 * size);
  vb_fill(&a, rank);
  vb_fill(&b, -1);
  const MPI_Comm w = MPI_COMM_WORLD;
  /* A predefined op needs a predefined type; nothing is written. */
  expect_class(MPI_Allreduce(a.base, b.base, 2, l->type, MPI_SUM, w), MPI_ERR_OP,
               "Allreduce MPI_SUM on a vector");
  expect_class(MPI_Reduce(a.base, b.base, 2, l->type, MPI_MAX, 0, w), MPI_ERR_OP,
               "Reduce MPI_MAX on a vector");
  expect_class(MPI_Scan(a.base, b.base, 2, l->type, MPI_PROD, w), MPI_ERR_OP,
               "Scan MPI_PROD on a vector");
  expect_class(MPI_Reduce_local(a.base, b.base, 2, l->type, MPI_SUM), MPI_ERR_OP,
               "Reduce_local MPI_SUM on a vector");
  CHECK(vb_bad(&b, -1) == 0, "a refused reduction wrote %d ints", vb_bad(&b, -1));
  /* An uncommitted type. */
  MPI_Datatype loose;
  MPI_Type_vector(2, 1, 3, MPI_INT, &loose);
  MPI_Request r = MPI_REQUEST_NULL;
  expect_class(MPI_Send(a.base, 1, loose, right(), 0, w), MPI_ERR_TYPE, "Send uncommitted");
  expect_class(MPI_Recv(b.base, 1, loose, left(), 0, w, MPI_STATUS_IGNORE), MPI_ERR_TYPE,
               "Recv uncommitted");
  expect_class(MPI_Bsend(a.base, 1, loose, right(), 0, w), MPI_ERR_TYPE, "Bsend uncommitted");
  expect_class(MPI_Send_init(a.base, 1, loose, right(), 0, w, &r), MPI_ERR_TYPE,
               "Send_init uncommitted");
  expect_class(MPI_Recv_init(b.base, 1, loose, left(), 0, w, &r), MPI_ERR_TYPE,
               "Recv_init uncommitted");
  expect_class(MPI_Sendrecv_replace(a.base, 1, loose, right(), 0, left(), 0, w, MPI_STATUS_IGNORE),
               MPI_ERR_TYPE, "Sendrecv_replace uncommitted");
  expect_class(MPI_Bcast(a.base, 1, loose, 0, w), MPI_ERR_TYPE, "Bcast uncommitted");
  expect_class(MPI_Allgather(a.base, 1, loose, b.base, 1, loose, w), MPI_ERR_TYPE,
               "Allgather uncommitted");
  expect_class(MPI_Allreduce(a.base, b.base, 1, loose, MPI_SUM, w), MPI_ERR_TYPE,
               "Allreduce uncommitted");
  CHECK(r == MPI_REQUEST_NULL, "a refused init made a request");
  MPI_Type_free(&loose);
  signature_mismatch();
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  vb_free(&a);
  vb_free(&b);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  make_layouts();
  MPI_Op sum;
  MPI_Op_create(layout_sum, 1, &sum);
  for (int li = 0; li < 2; ++li) {
    const struct layout *l = layouts[li];
    pick_counts(l);
    for (int c = 0; c < 4; ++c) {
      bsend(l, counts[c]);
      mrecv(l, counts[c]);
      sendrecv_replace(l, counts[c]);
      persistent(l, counts[c]);
    }
    /* Collectives: one element and just over the eager limit. */
    const int coll_counts[2] = {counts[0], counts[2]};
    for (int c = 0; c < 2; ++c) {
      const int n = coll_counts[c];
      bcast(l, n, 0);
      bcast(l, n, size - 1);
      gather_scatter(l, n, 0);
      gather_scatter(l, n, size - 1);
      gatherv_scatterv(l, n, 0);
      gatherv_scatterv(l, n, size / 2);
      allgather(l, n);
      alltoall(l, n);
      reductions(l, n, sum);
    }
  }
  CHECK(op_wrong_type == 0, "the user op was handed %d unknown datatypes", op_wrong_type);
  errors();
  MPI_Op_free(&sum);
  MPI_Type_free(&vector_layout.type);
  MPI_Type_free(&struct_layout.type);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) printf("derived: all checks passed on %d ranks\n", size);
  return finish();
}
