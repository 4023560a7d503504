/* What a codec thread keeps: the same buffer again for its use while it
 * fits, a larger one replacing it, a fresh one past the bound, none shared
 * between uses or threads, all threads' within the budget; its compressor for a level, its
 * decompressor. Leaks (a buffer not freed
 * at the thread's exit, or one past the bound kept) show under the sanitizer build. */
#include <criterion/criterion.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "codec/thread_buf.h"
#include "imgbatch.h"

/* What all threads keep (ib_codec_scratch_get, the public view of it). */
static uint64_t kept_now(void) {
  uint64_t kept = 0;
  ib_codec_scratch_get(&kept, NULL);
  return kept;
}

Test(thread_buf, a_use_gets_its_kept_buffer_again_while_it_fits) {
  uint8_t *a = ib_tbuf_get(IB_TBUF_PNG_ROWS, 1000);
  cr_assert_not_null(a);
  memset(a, 1, 1000);
  ib_tbuf_put(IB_TBUF_PNG_ROWS, a);
  uint8_t *b = ib_tbuf_get(IB_TBUF_PNG_ROWS, 600);
  cr_assert_eq(b, a, "a smaller request takes the kept buffer");
  uint8_t *c = ib_tbuf_get(IB_TBUF_PNG_IDAT, 600);
  cr_assert_neq(c, a, "another use has its own");
  ib_tbuf_put(IB_TBUF_PNG_IDAT, c);
  ib_tbuf_put(IB_TBUF_PNG_ROWS, b);
  uint8_t *d = ib_tbuf_get(IB_TBUF_PNG_ROWS, 5000);
  cr_assert_not_null(d);
  memset(d, 2, 5000); /* the whole of a larger one is writable */
  ib_tbuf_put(IB_TBUF_PNG_ROWS, d);
  cr_assert_eq(ib_tbuf_get(IB_TBUF_PNG_ROWS, 5000), d, "the larger one is kept now");
  ib_tbuf_put(IB_TBUF_PNG_ROWS, d);
  uint8_t *z = ib_tbuf_get(IB_TBUF_PNG_FILTERED, 0);
  cr_assert_not_null(z, "an empty request still gets a buffer");
  ib_tbuf_put(IB_TBUF_PNG_FILTERED, z);
}

Test(thread_buf, past_the_bound_a_buffer_is_fresh_and_freed) {
  uint8_t *kept = ib_tbuf_get(IB_TBUF_PNG_ROWS, 64);
  ib_tbuf_put(IB_TBUF_PNG_ROWS, kept);
  uint8_t *big = ib_tbuf_get(IB_TBUF_PNG_ROWS, IB_THREAD_BUF_KEEP + 1);
  cr_assert_not_null(big);
  cr_assert_neq(big, kept);
  big[IB_THREAD_BUF_KEEP] = 7;
  ib_tbuf_put(IB_TBUF_PNG_ROWS, big); /* freed: the sanitizer build reports a leak otherwise */
  cr_assert_eq(ib_tbuf_get(IB_TBUF_PNG_ROWS, 64), kept, "the kept buffer is still the thread's");
  ib_tbuf_put(IB_TBUF_PNG_ROWS, kept);
  ib_tbuf_put(IB_TBUF_PNG_ROWS, NULL); /* nothing to end */
}

static void *other_thread(void *arg) {
  uint8_t *mine = ib_tbuf_get(IB_TBUF_PNG_ROWS, 64);
  ib_tbuf_put(IB_TBUF_PNG_ROWS, mine);
  *(uint8_t **)arg = mine;
  return NULL; /* its kept buffer is freed as it exits */
}

Test(thread_buf, threads_keep_their_own) {
  uint8_t *here = ib_tbuf_get(IB_TBUF_PNG_ROWS, 64);
  uint8_t *there = NULL;
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, other_thread, &there), 0);
  cr_assert_eq(pthread_join(t, NULL), 0);
  cr_assert_not_null(there);
  cr_assert_neq(there, here, "another thread has its own while this one holds its");
  ib_tbuf_put(IB_TBUF_PNG_ROWS, here);
}

/* Threads that each ask for a buffer of the most one use keeps, and hold it
 * (their thread alive) until the test has counted. */
enum { HOLDERS = (int)(IB_THREAD_BUF_BUDGET / IB_THREAD_BUF_KEEP) + 2 };
static pthread_barrier_t counted, done;

static void *holder(void *arg) {
  (void)arg;
  uint8_t *p = ib_tbuf_get(IB_TBUF_PNG_ROWS, IB_THREAD_BUF_KEEP);
  if (p) p[IB_THREAD_BUF_KEEP - 1] = 1;
  ib_tbuf_put(IB_TBUF_PNG_ROWS, p);
  pthread_barrier_wait(&counted);
  pthread_barrier_wait(&done);
  *(bool *)arg = p != NULL;
  return NULL;
}

Test(thread_buf, threads_keep_together_within_the_budget_and_give_it_back_as_they_exit) {
  cr_assert_eq(kept_now(), 0u);
  cr_assert_eq(pthread_barrier_init(&counted, NULL, HOLDERS + 1), 0);
  cr_assert_eq(pthread_barrier_init(&done, NULL, HOLDERS + 1), 0);
  pthread_t t[HOLDERS];
  bool got[HOLDERS] = {false};
  for (int i = 0; i < HOLDERS; i++) cr_assert_eq(pthread_create(&t[i], NULL, holder, &got[i]), 0);
  pthread_barrier_wait(&counted);
  const size_t fit = IB_THREAD_BUF_BUDGET / IB_THREAD_BUF_KEEP;
  cr_assert_eq(kept_now(), fit * IB_THREAD_BUF_KEEP,
               "%zu bytes kept by %d threads: the first %zu fit the budget, the rest are freed",
               kept_now(), HOLDERS, fit);
  pthread_barrier_wait(&done);
  for (int i = 0; i < HOLDERS; i++) {
    cr_assert_eq(pthread_join(t[i], NULL), 0);
    cr_assert(got[i], "every thread got its buffer, kept or not");
  }
  cr_assert_eq(kept_now(), 0u, "an exiting thread gives its kept bytes back");
  pthread_barrier_destroy(&counted);
  pthread_barrier_destroy(&done);
}

Test(thread_buf, the_compressor_is_kept_for_its_level_and_the_decompressor_for_good) {
  struct libdeflate_compressor *c6 = ib_tbuf_compressor(6);
  cr_assert_not_null(c6);
  cr_assert_eq(ib_tbuf_compressor(6), c6, "the same level: the kept one");
  struct libdeflate_compressor *c1 = ib_tbuf_compressor(1);
  cr_assert_not_null(c1);
  cr_assert_eq(ib_tbuf_compressor(1), c1);
  struct libdeflate_decompressor *d = ib_tbuf_decompressor();
  cr_assert_not_null(d);
  cr_assert_eq(ib_tbuf_decompressor(), d);
  /* they work: a round trip */
  uint8_t in[4096], z[8192], out[4096];
  for (size_t i = 0; i < sizeof in; i++) in[i] = (uint8_t)(i * 7 / 13);
  const size_t zn = libdeflate_zlib_compress(c1, in, sizeof in, z, sizeof z);
  cr_assert_gt(zn, 0u);
  size_t got = 0;
  cr_assert_eq(libdeflate_zlib_decompress(d, z, zn, out, sizeof out, &got), LIBDEFLATE_SUCCESS);
  cr_assert(got == sizeof in && memcmp(in, out, sizeof in) == 0);
}
