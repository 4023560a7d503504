/*
 * job_arena.h - a bump allocator for one unpacked Job. protobuf-c allocates
 * every message, string and repeated array of a Job on its own and frees
 * them one by one; for a Job whose pixels stay in its buffer (a hollowed
 * Job) those small parts were a dozen malloc/free pairs per job on the
 * parse and completion paths. Here they take a chunk or two, freed at once.
 */
#ifndef IB_PARSE_JOB_ARENA_H
#define IB_PARSE_JOB_ARENA_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

typedef struct ib_job_arena ib_job_arena;

/* An arena whose first chunk fits about what unpacking `wire_len` bytes
 * needs; NULL when out of memory. `*alloc` becomes its protobuf-c
 * allocator (free is a no-op: the arena goes in one piece). */
ib_job_arena *ib_job_arena_new(size_t wire_len, ProtobufCAllocator *alloc);
void ib_job_arena_free(ib_job_arena *a);
/* `count` zeroed elements of `size` bytes from `a` (the graph's own tables,
 * freed with it), or calloc'd when `a` is NULL; NULL when out of memory. */
void *ib_job_arena_calloc(ib_job_arena *a, size_t count, size_t size);

#endif
