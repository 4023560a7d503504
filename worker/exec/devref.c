/* devref.c - the backend state and credits that an executor, its resident
 * handles (handle.c) and its lent outputs (lent.c) share: the last to let
 * go closes the backend. Its own file so that those two need nothing of
 * the executor's lifetime (executor.c), which needs them. */
#include <stdlib.h>

#include "exec/exec_internal.h"

ib_devref *ib_devref_get(ib_devref *d) {
  atomic_fetch_add(&d->refs, 1);
  return d;
}

void ib_devref_put(ib_devref *d) {
  if (!d || atomic_fetch_sub(&d->refs, 1) != 1) return;
  d->backend->close(d->state);
  ib_credits_destroy(&d->credits);
  free(d);
}
