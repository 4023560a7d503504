/* run_spare.h - the next input frame's executor buffer, obtained ahead on
 * a helper thread of `imgbatch run`. Getting a large buffer can take as
 * long as reading the frame into it (on CUDA a pool that grows calls
 * cuMemHostAlloc, which costs time in proportion to the size), so
 * the reader asks for the next frame's buffer, of the length of the frame
 * it just took, while it reads. At most one spare buffer is held. */
#ifndef IB_RUN_SPARE_H
#define IB_RUN_SPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "imgbatch.h"

/* Smaller frames get their buffers directly: cheap, and a hand-off per
 * frame would cost more. */
#define IB_RUN_SPARE_MIN ((size_t)1 << 20)

typedef struct ib_run_spare ib_run_spare;

/* NULL when the thread cannot be started (buffers are then got directly). */
ib_run_spare *ib_run_spare_start(ib_executor *ex);

/* A buffer of at least `len` bytes (ib_executor_buffer's): the spare when
 * it fits (waiting while it is being got), else one got here. Then, when
 * `ask`, asks for the next spare of `len` (the caller counts it in its
 * read-ahead). NULL when out of memory. s may be NULL. */
uint8_t *ib_run_spare_take(ib_run_spare *s, ib_executor *ex, size_t len, bool ask);

/* Stops the thread and gives the spare back (before the executor goes). */
void ib_run_spare_stop(ib_run_spare *s);

#endif
