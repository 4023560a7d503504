/* The Kafka worker's partition table (kafka/track.c): a job points at its
 * partition's entry, and the table grows when a higher partition is
 * assigned, as when a worker of the group leaves and its partitions move
 * to one that holds lower ones with jobs in flight. The rebalance test of
 * tests/py/worker met a use after free there once, under ASan. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/track.h"
#include "kafka/wstate.h"

Test(wpart, tracked_jobs_follow_their_partition_when_the_table_grows) {
  ib_worker *w = calloc(1, sizeof *w);
  cr_assert(w);
  ib_wpart *p = ib_wpart_get(w, 1, true);
  cr_assert(p);
  p->assigned = true;
  rd_kafka_message_t m[3];
  memset(m, 0, sizeof m);
  ib_wjob *j[3];
  for (int k = 0; k < 3; k++) {
    m[k].partition = 1;
    m[k].offset = k;
    j[k] = ib_wjob_track(w, &m[k]);
    cr_assert(j[k]);
  }
  /* Far past the table: megabytes, so realloc moves it. */
  cr_assert(ib_wpart_get(w, 20000, true));
  cr_assert_eq(w->parts[1].head, j[0]);
  for (int k = 0; k < 3; k++) {
    cr_expect_eq(j[k]->part, &w->parts[1], "job %d points at the table it was in", k);
    j[k]->msg = NULL; /* the stack's, not librdkafka's */
    ib_wjob_free(w, j[k]);
  }
  free(w->parts);
  free(w);
}
