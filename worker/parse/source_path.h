/*
 * source_path.h - path sources (internal): files named relative to the
 * configured source root. They are resolved against one root directory fd
 * without ever leaving it (no realpath: a name checked and then reopened is
 * a race), opened without blocking, and read only after every one of the
 * job's sizes has been checked against the caps.
 */
#ifndef IB_SOURCE_PATH_H
#define IB_SOURCE_PATH_H

#include <stdbool.h>

#include "model/graph.h"

/* The source root: a directory fd opened once per parse, and the name it
 * was opened by (NULL: none). */
typedef struct ib_path_root {
  int fd;
  const char *name;
} ib_path_root;

/* Opens `rel` for reading beneath root->fd (O_RDONLY | O_NONBLOCK |
 * O_CLOEXEC | O_NOCTTY, so a FIFO never blocks the open): openat2(
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) where the kernel has it,
 * ib_path_walk_beneath where it does not (and for absolute symlinks, which
 * RESOLVE_BENEATH refuses wholesale, or when renames racing its ".." checks
 * keep it answering EAGAIN). Symlinks that stay beneath the root
 * are followed: relative ones, and absolute ones naming a place under the
 * root (by its configured name or the kernel's). Returns the fd or -errno:
 * -EXDEV when the path or a symlink on it leads out of the root (absolute
 * paths included), -ELOOP for symlink loops and magic links. */
int ib_path_open_beneath(const ib_path_root *root, const char *rel);

/* The openat2-less fallback, exposed for tests: walks `rel` one component at
 * a time from held directory fds, every open with O_NOFOLLOW, expanding
 * symlinks itself ('..' never above the root, an absolute target restarting
 * from the root fd), so a component swapped for a symlink mid-walk cannot
 * move it outside the root. Same flags and results as ib_path_open_beneath
 * (magic links are never followed: their targets are not paths beneath the
 * root). */
int ib_path_walk_beneath(const ib_path_root *root, const char *rel);

/* Tests: route ib_path_open_beneath through the walker (process-wide). */
void ib_path_test_force_walk(bool on);

/* Opens every path source of g's Job (lim->source_root opened once), refuses
 * what is not a regular file (IB_INVALID), checks each size against
 * max_source_bytes and their sum against max_job_source_bytes (IB_LIMIT),
 * all before reading a byte; then reads them into g->sources[i]
 * (file_bytes, bytes, len). Sources of other kinds, and path sources with
 * wanted[i] false (no node reads them; `wanted` NULL: all are wanted), are
 * left untouched. */
ib_status ib_path_sources_read(ib_graph *g, const ib_graph_limits *lim, const bool *wanted,
                               ib_error *err);

#endif
