/* bench/trace/ib_trace.c - libibtrace.so, a timeline where Nsight Systems
 * is not installed: a CUPTI Activity API tracer that the CUDA driver loads
 * as an injection library, as it loads nsys's (the driver dlopens
 * $CUDA_INJECTION64_PATH at cuInit and calls InitializeInjection), so it
 * works for binaries that dlopen libcuda.so.1 themselves.
 *
 *   CUDA_INJECTION64_PATH=/abs/libibtrace.so IB_TRACE_OUT=trace.csv gpu_bench ...
 *
 * Records copies, memsets, kernels, driver API calls, synchronisations and
 * CUPTI's own overhead into memory while the program runs (nothing is
 * parsed or written on the way, so the tracer adds little beyond CUPTI's
 * per-call cost) and writes one CSV at exit (bench/reports/trace_report.py):
 *
 *   kind,name,stream,thread,start_ns,end_ns,bytes,copy_kind,corr,channel,count
 *
 * kind: memcpy (name: source>destination memory, copy_kind HtoD / DtoH /
 * ...; count: copies a batched record stands for), memset, kernel (name;
 * copy_kind holds grid/block), driver (name: the API; thread: the OS thread
 * id; corr links a call to the GPU work it enqueued), sync (name: the
 * wait's type), overhead (CUPTI's buffer flushes, a full command buffer),
 * then meta rows last: "records", "dropped" and "lost_buffers" (bytes =
 * the count), "skipped_kind" (copy_kind: optional kinds the driver
 * refused) and, when CUPTI failed, "error: why" (at the start: no records).
 * Timestamps are CUPTI's (cuptiGetTimestamp), ns on one clock for host and
 * device. Tracing that cannot start prints one line to stderr and lets the
 * program run on untraced: the CSV then says why it is empty. */
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_BYTES ((size_t)8 << 20)

typedef struct filled {
  struct filled *next;
  uint8_t *buf;
  size_t valid;
} filled;

static struct {
  pthread_mutex_t lock;
  filled *head, **tail;   /* completed buffers, written out at exit */
  uint64_t dropped, lost; /* records CUPTI dropped; buffers lost for want of memory */
  char error[256];        /* why tracing did not start or went wrong, "" if it did not */
  char skipped[128];      /* the optional kinds the driver refused, space-separated */
  const char *path;
  int started;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER, .tail = &g.head};

/* True if `rc` is success; else remembers (the first) failure and prints it. */
static int ok(CUptiResult rc, const char *what) {
  if (rc == CUPTI_SUCCESS) return 1;
  const char *s = NULL;
  if (cuptiGetResultString(rc, &s) != CUPTI_SUCCESS || !s) s = "unknown CUPTI error";
  pthread_mutex_lock(&g.lock);
  if (!g.error[0]) snprintf(g.error, sizeof g.error, "%s failed: %s (%d)", what, s, (int)rc);
  pthread_mutex_unlock(&g.lock);
  fprintf(stderr, "ib_trace: %s failed: %s (%d)\n", what, s, (int)rc);
  return 0;
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
  /* 8-byte aligned as CUPTI requires (malloc's alignment); NULL drops records, counted. */
  *buf = malloc(BUF_BYTES);
  *size = *buf ? BUF_BYTES : 0;
  *max_records = 0;
}

/* A kernel's name belongs to CUPTI, possibly only while its module is
 * loaded, and the rows are written at exit: each name is copied once, and
 * the record pointed at the copy. Under g.lock. */
typedef struct name_copy {
  struct name_copy *next;
  char s[];
} name_copy;
static name_copy *names;

static const char *keep_name(const char *s) {
  if (!s) return NULL;
  for (name_copy *n = names; n; n = n->next)
    if (!strcmp(n->s, s)) return n->s;
  name_copy *n = malloc(sizeof *n + strlen(s) + 1);
  if (!n) return "(out of memory)";
  strcpy(n->s, s);
  n->next = names, names = n;
  return n->s;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid) {
  (void)size;
  size_t drop = 0;
  ok(cuptiActivityGetNumDroppedRecords(ctx, stream, &drop), "cuptiActivityGetNumDroppedRecords");
  filled *f = valid ? malloc(sizeof *f) : NULL;
  pthread_mutex_lock(&g.lock);
  g.dropped += drop;
  CUpti_Activity *r = NULL;
  while (f && cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      CUpti_ActivityKernel10 *k = (void *)r;
      k->name = keep_name(k->name);
    }
  if (f) {
    *f = (filled){NULL, buf, valid};
    *g.tail = f, g.tail = &f->next;
  } else if (valid) {
    g.lost += 1; /* its records count as dropped */
  }
  pthread_mutex_unlock(&g.lock);
  if (!f) free(buf);
}

static const char *copy_kind(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "other";
  }
}

/* Pageable host memory is the costly case: a staged, synchronous copy. */
static const char *memory_kind(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "device";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "managed";
    default: return "unknown";
  }
}

static const char *sync_kind(CUpti_ActivitySynchronizationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "event_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "stream_wait_event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "stream_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "context_synchronize";
    default: return "unknown";
  }
}

/* A kernel's name may hold commas (demangled templates): quoted, "" for ". */
static void put_name(FILE *f, const char *s) {
  if (!s) s = "?";
  if (!strpbrk(s, ",\"\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s == '\n' ? ' ' : *s, f);
  }
  fputc('"', f);
}

static void put_row(FILE *f, const char *kind, const char *name, long long stream, long long thread,
                    uint64_t t0, uint64_t t1, uint64_t bytes, const char *ck, uint32_t corr,
                    uint32_t channel, uint64_t count) {
  fprintf(f, "%s,", kind);
  put_name(f, name);
  fprintf(f, ",%lld,%lld,%llu,%llu,%llu,%s,%u,%u,%llu\n", stream, thread, (unsigned long long)t0,
          (unsigned long long)t1, (unsigned long long)bytes, ck, corr, channel,
          (unsigned long long)count);
}

/* One record as a row; false for kinds not written. */
static int write_record(FILE *f, const CUpti_Activity *r) {
  char name[128];
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const CUpti_ActivityMemcpy6 *m = (const void *)r;
      snprintf(name, sizeof name, "%s>%s", memory_kind(m->srcKind), memory_kind(m->dstKind));
      put_row(f, "memcpy", name, m->streamId, -1, m->start, m->end, m->bytes,
              copy_kind(m->copyKind), m->correlationId, m->channelID,
              m->copyCount ? m->copyCount : 1);
      return 1;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const CUpti_ActivityMemset4 *m = (const void *)r;
      put_row(f, "memset", memory_kind((uint8_t)m->memoryKind), m->streamId, -1, m->start, m->end,
              m->bytes, "", m->correlationId, m->channelID, 1);
      return 1;
    }
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const CUpti_ActivityKernel10 *k = (const void *)r;
      char launch[96];
      snprintf(launch, sizeof launch, "%dx%dx%d/%dx%dx%d", k->gridX, k->gridY, k->gridZ, k->blockX,
               k->blockY, k->blockZ);
      put_row(f, "kernel", k->name, k->streamId, -1, k->start, k->end, 0, launch, k->correlationId,
              k->channelID, 1);
      return 1;
    }
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const CUpti_ActivityAPI *a = (const void *)r;
      const char *api = NULL;
      if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, a->cbid, &api) != CUPTI_SUCCESS || !api)
        snprintf(name, sizeof name, "cbid_%u", (unsigned)a->cbid), api = name;
      put_row(f, "driver", api, -1, a->threadId, a->start, a->end, 0, "", a->correlationId, 0, 1);
      return 1;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const CUpti_ActivitySynchronization2 *s = (const void *)r;
      put_row(f, "sync", sync_kind(s->type), s->streamId, -1, s->start, s->end, 0, "",
              s->correlationId, 0, 1);
      return 1;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const CUpti_ActivityOverhead3 *o = (const void *)r;
      long long th = -1;
      if (o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) th = o->objectId.pt.threadId;
      snprintf(name, sizeof name, "overhead_%#x", (unsigned)o->overheadKind);
      put_row(f, "overhead", name, -1, th, o->start, o->end, 0, "", o->correlationId, 0, 1);
      return 1;
    }
    default: return 0;
  }
}

/* The completed buffers `head` as rows, then the meta rows. */
static void write_csv(filled *head) {
  FILE *f = fopen(g.path, "w");
  if (!f) {
    fprintf(stderr, "ib_trace: cannot write %s: the trace is lost\n", g.path);
    return;
  }
  fputs("kind,name,stream,thread,start_ns,end_ns,bytes,copy_kind,corr,channel,count\n", f);
  uint64_t n = 0;
  for (filled *b = head, *next; b; b = next) {
    CUpti_Activity *r = NULL;
    CUptiResult rc;
    while ((rc = cuptiActivityGetNextRecord(b->buf, b->valid, &r)) == CUPTI_SUCCESS)
      n += (uint64_t)write_record(f, r);
    if (rc != CUPTI_ERROR_MAX_LIMIT_REACHED) ok(rc, "cuptiActivityGetNextRecord");
    next = b->next;
    free(b->buf);
    free(b);
  }
  put_row(f, "meta", "records", -1, -1, 0, 0, n, "", 0, 0, 1);
  put_row(f, "meta", "dropped", -1, -1, 0, 0, g.dropped, "", 0, 0, 1);
  put_row(f, "meta", "lost_buffers", -1, -1, 0, 0, g.lost, "", 0, 0, 1);
  if (g.skipped[0]) put_row(f, "meta", "skipped_kind", -1, -1, 0, 0, 0, g.skipped, 0, 0, 1);
  if (g.error[0]) {
    char line[300];
    snprintf(line, sizeof line, "error: %s", g.error);
    put_row(f, "meta", line, -1, -1, 0, 0, 0, "", 0, 0, 1);
  }
  if (fclose(f) != 0) fprintf(stderr, "ib_trace: writing %s failed: the trace is cut\n", g.path);
  fprintf(stderr, "ib_trace: %llu records, %llu dropped, %llu buffers lost -> %s%s%s\n",
          (unsigned long long)n, (unsigned long long)g.dropped, (unsigned long long)g.lost, g.path,
          g.error[0] ? "; " : "", g.error);
}

static void at_exit(void) {
  /* FORCED: also the buffers still being filled (the last kernels, copies). */
  size_t drop = 0;
  if (g.started &&
      ok(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll") &&
      !ok(cuptiActivityGetNumDroppedRecords(NULL, 0, &drop), "cuptiActivityGetNumDroppedRecords"))
    drop = 0;
  pthread_mutex_lock(&g.lock);
  g.dropped += drop; /* any since the last buffer (the count resets on each read) */
  filled *head = g.started ? g.head : NULL; /* a tracer that failed to start writes none */
  g.head = NULL, g.tail = &g.head;
  pthread_mutex_unlock(&g.lock);
  write_csv(head); /* unlocked: ok() takes the lock */
}

/* The timeline needs copies, kernels and driver calls; the rest only
 * adds detail, and a driver that refuses one of those is said in a
 * "skipped_kind" meta row, not an error. */
static const struct {
  CUpti_ActivityKind kind;
  const char *name;
  int needed;
} kinds[] = {
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", 1},
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", 1},
    {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER", 1},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", 0},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", 0},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", 0},
};

static int start(void) {
  if (!ok(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), "cuptiSetThreadIdType") ||
      !ok(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
          "cuptiActivityRegisterCallbacks"))
    return 0;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    const CUptiResult rc = cuptiActivityEnable(kinds[i].kind);
    char what[64];
    snprintf(what, sizeof what, "cuptiActivityEnable(%s)", kinds[i].name);
    if (rc != CUPTI_SUCCESS && !kinds[i].needed) {
      const char *s = NULL;
      cuptiGetResultString(rc, &s);
      fprintf(stderr, "ib_trace: %s failed: %s (%d); tracing without it\n", what, s ? s : "?",
              (int)rc);
      strncat(g.skipped, kinds[i].name, sizeof g.skipped - strlen(g.skipped) - 2);
      strcat(g.skipped, " ");
    } else if (!ok(rc, what)) {
      for (size_t k = 0; k < i; k++) cuptiActivityDisable(kinds[k].kind);
      return 0;
    }
  }
  return 1;
}

/* Called by the driver inside cuInit. Returns 1 whatever happens: a
 * failed tracer leaves the program running, untraced, and says so. */
__attribute__((visibility("default"))) int InitializeInjection(void) {
  static int done;
  if (done++) return 1;
  g.path = getenv("IB_TRACE_OUT");
  if (!g.path || !*g.path) {
    fprintf(stderr, "ib_trace: IB_TRACE_OUT is not set: not tracing\n");
    return 1;
  }
  g.started = start();
  if (!g.started)
    fprintf(stderr, "ib_trace: not tracing (%s); %s will hold no records\n", g.error, g.path);
  if (atexit(at_exit) != 0) fprintf(stderr, "ib_trace: atexit failed: no trace will be written\n");
  return 1;
}
