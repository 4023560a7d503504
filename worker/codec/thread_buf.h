/*
 * thread_buf.h - what a codec thread keeps from one image to the next
 * (internal): its libdeflate compressor and decompressor (allocating one
 * costs more than compressing a small image) and its large scratch
 * buffers. A large buffer allocated afresh for every image is mapped and
 * unmapped each time (the CLI maps every buffer of 4 MiB and more, to keep a
 * long-running worker's heap from holding its peak): its pages fault in
 * again, zeroed, and each unmap makes every thread of the process flush its
 * TLB. A PNG decode of a 2048^2 RGB file needed some 20 MB of such scratch,
 * ~5,000 page faults. So a thread keeps one buffer per use, up to
 * IB_THREAD_BUF_KEEP bytes each, while the buffers all threads keep stay
 * within IB_THREAD_BUF_BUDGET together: the number of codec threads is the
 * host's (decode and encode pools), so per-thread keeping alone would let
 * a many-core host hold gigabytes outside the credits. A buffer that does
 * not fit the budget is used once and freed, as before keeping. All of a
 * thread's is freed when it exits (docs/credits.md: scratch outside the
 * credits; ib_codec_scratch_get reports it).
 */
#ifndef IB_THREAD_BUF_H
#define IB_THREAD_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef enum ib_tbuf_use {
  IB_TBUF_PNG_ROWS,     /* a PNG's inflated rows (png_plain.c) */
  IB_TBUF_PNG_IDAT,     /* its IDAT chunks' data joined (png_plain.c) */
  IB_TBUF_PNG_FILTERED, /* an encode's filtered rows (png_encode.c) */
  IB_TBUF_USES
} ib_tbuf_use;

struct libdeflate_compressor;
struct libdeflate_decompressor;

/* The calling thread's compressor at zlib-style `level`, kept (replaced
 * when asked for another level); NULL when out of memory. The thread's,
 * never freed by the caller. */
struct libdeflate_compressor *ib_tbuf_compressor(int level);

/* The calling thread's decompressor, kept; NULL when out of memory. */
struct libdeflate_decompressor *ib_tbuf_decompressor(void);

/* The most a thread keeps for one use; a larger buffer is freed after it. */
#define IB_THREAD_BUF_KEEP ((size_t)24 << 20)

/* The most all threads keep together: 16 threads decoding 2048^2 RGB PNGs
 * (about 20 MB each) fit. imgbatch.h's ib_codec_scratch_get reports what
 * they keep (buffers in use by their thread included) and this. */
#define IB_THREAD_BUF_BUDGET ((size_t)512 << 20)

/* At least n bytes for `use`, contents undefined: the calling thread's kept
 * buffer (replaced by a larger one when too small) when n <=
 * IB_THREAD_BUF_KEEP and the budget has room, else a fresh one. NULL when
 * out of memory. Give it back with ib_tbuf_put before asking for the same
 * use again. */
uint8_t *ib_tbuf_get(ib_tbuf_use use, size_t n);

/* Ends the use of p (ib_tbuf_get's): freed unless the thread keeps it. */
void ib_tbuf_put(ib_tbuf_use use, uint8_t *p);

#endif
