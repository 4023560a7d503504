/*
 * wake.c - cutting the worker's waits short. The driving thread's idle
 * wait is a poll of the consumer's queue (messages, commit answers,
 * rebalances); a delivery report (the producer's queue turning non-empty)
 * and a prepared Result (the encode pool) end it, so neither waits out the
 * poll. The standby thread waits on an eventfd that the same wake-ups set.
 */
#include "kafka/wake.h"

#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

void ib_wwake(const ib_worker *w) {
  if (!w->wake_q) return;
  rd_kafka_queue_yield(w->wake_q);
  uint64_t one = 1;
  /* EAGAIN: the counter is already set, the standby already woken. */
  if (write(w->wake_fd, &one, sizeof one) < 0) return;
}

/* librdkafka's thread put a delivery report on the producer's empty queue:
 * the driving thread serves it now, not when its poll times out (the job
 * holds a max_jobs slot until then). Only the consumer's queue is touched
 * here (no call on the producer from its own callback). */
static void on_producer_event(rd_kafka_t *rk, void *opaque) {
  (void)rk;
  ib_wwake(opaque);
}

/* After both clients exist and before the encode pool starts (its threads
 * read wake_q; pthread_create orders the write before them). */
bool ib_wwake_start(ib_worker *w) {
  w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (w->wake_fd < 0) return false;
  w->wake_q = rd_kafka_queue_get_consumer(w->consumer);
  w->producer_q = rd_kafka_queue_get_main(w->producer);
  if (!w->wake_q || !w->producer_q) return false;
  rd_kafka_queue_cb_event_enable(w->producer_q, on_producer_event, w);
  return true;
}

/* Before the consumer goes (the callback may run until disabled: it is
 * called under the queue's lock, which disabling takes too). */
void ib_wwake_stop(ib_worker *w) {
  if (w->producer_q) {
    rd_kafka_queue_cb_event_enable(w->producer_q, NULL, NULL);
    rd_kafka_queue_destroy(w->producer_q);
    w->producer_q = NULL;
  }
  if (w->wake_q) rd_kafka_queue_destroy(w->wake_q);
  w->wake_q = NULL;
  if (w->wake_fd >= 0) close(w->wake_fd);
  w->wake_fd = -1;
}
