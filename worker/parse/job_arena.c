/* The Job arena of job_arena.h: bump allocation, 16-byte aligned, in a
 * list of chunks. The first chunk shares the arena's allocation; a large
 * request (bytes fields: an encoded source) gets a chunk of its own sized
 * to it, so a big Job costs its bytes once, not a multiple. */
#include "parse/job_arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN ((size_t)16)
#define MIN_CHUNK ((size_t)512)
#define PER_SMALL_BYTE ((size_t)12) /* per wire byte of the first 256 */
#define MAX_CHUNK ((size_t)64 << 10)

typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} chunk;

struct ib_job_arena {
  chunk *head;  /* the chunk being filled; the others after it */
  chunk *first; /* part of this allocation */
};

static size_t round_up(size_t n) { return (n + ALIGN - 1) & ~(ALIGN - 1); }

static chunk *chunk_new(size_t cap) {
  chunk *c = malloc(sizeof *c + cap);
  if (c) *c = (chunk){.cap = cap};
  return c;
}

static void *arena_alloc(void *data, size_t size) {
  ib_job_arena *a = data;
  size_t n = round_up(size ? size : 1);
  if (n < size) return NULL;
  chunk *c = a->head;
  if (n <= c->cap - c->used) {
    void *p = c->data + c->used;
    c->used += n;
    return p;
  }
  if (n > MAX_CHUNK / 4) { /* its own chunk, behind the one being filled */
    chunk *own = chunk_new(n);
    if (!own) return NULL;
    own->used = n;
    own->next = c->next;
    c->next = own;
    return own->data;
  }
  size_t cap = c->cap * 2 < MAX_CHUNK ? c->cap * 2 : MAX_CHUNK;
  chunk *fresh = chunk_new(cap);
  if (!fresh) return NULL;
  fresh->next = c;
  fresh->used = n;
  a->head = fresh;
  return fresh->data;
}

static void arena_free(void *data, void *p) {
  (void)data;
  (void)p;
}

ib_job_arena *ib_job_arena_new(size_t wire_len, ProtobufCAllocator *alloc) {
  /* Unpacked structs run to many times their wire bytes: a hollowed 256²
   * invert Job is 30-odd bytes and unpacks to 656 (a 5-op chain: 1.7 KB,
   * 4.5 KB). A small Job's arena stays under 1 KiB in all, which malloc
   * serves from its per-thread cache: the parse runs once per job, on the
   * driving thread or a producer's (whose arena the driving thread frees). */
  const size_t first = wire_len < 256 ? wire_len : 256;
  size_t cap = MAX_CHUNK;
  if (wire_len < MAX_CHUNK / 4) {
    const size_t want = MIN_CHUNK + PER_SMALL_BYTE * first + 4 * (wire_len - first);
    if (want < MAX_CHUNK) cap = round_up(want);
  }
  const size_t head = round_up(sizeof(ib_job_arena));
  ib_job_arena *a = malloc(head + sizeof(chunk) + cap);
  if (!a) return NULL;
  a->first = a->head = (chunk *)((unsigned char *)a + head);
  *a->first = (chunk){.cap = cap};
  *alloc = (ProtobufCAllocator){.alloc = arena_alloc, .free = arena_free, .allocator_data = a};
  return a;
}

void ib_job_arena_free(ib_job_arena *a) {
  if (!a) return;
  for (chunk *c = a->head, *next; c; c = next) {
    next = c->next;
    if (c != a->first) free(c);
  }
  free(a);
}

void *ib_job_arena_calloc(ib_job_arena *a, size_t count, size_t size) {
  if (!a) return calloc(count, size);
  if (size && count > SIZE_MAX / size) return NULL;
  void *p = arena_alloc(a, count * size);
  if (p) memset(p, 0, count * size);
  return p;
}
