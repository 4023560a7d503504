/*
 * http.c - the operations listener (--metrics-addr HOST:PORT): /metrics,
 * /healthz and /readyz over libmicrohttpd, on its own thread. It reads the
 * snapshot that metrics.c keeps, never the worker. Off unless configured;
 * the address is bound as given (a non-loopback one only when asked for).
 */
#include "kafka/http.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kafka/clock.h"
#include "kafka/log.h"
#include "kafka/metrics.h"
#include "kafka/wstate.h"

#define LINGER_US 1000000u

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *type, char *body,
                             size_t len, enum MHD_ResponseMemoryMode mode) {
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
  if (!r) {
    if (mode == MHD_RESPMEM_MUST_FREE) free(body);
    return MHD_NO;
  }
  enum MHD_Result ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  if (ok == MHD_YES && code == MHD_HTTP_METHOD_NOT_ALLOWED)
    ok = MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  if (ok == MHD_YES) ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  if (ok == MHD_YES) ok = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned code, const char *body) {
  return reply(c, code, "text/plain; charset=utf-8", (char *)body, strlen(body),
               MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **state) {
  (void)version;
  (void)upload;
  ib_wmetrics *m = cls;
  if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
    return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
  (void)state;
  *upload_size = 0; /* a request body is ignored (consumed unread) */
  ib_wsnap s;
  pthread_mutex_lock(&m->mu);
  s = m->snap;
  pthread_mutex_unlock(&m->mu);
  if (strcmp(url, "/metrics") == 0) {
    size_t len = 0;
    char *body = ib_wsnap_format(&s, &len);
    if (!body) return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len,
                 MHD_RESPMEM_MUST_FREE);
  }
  if (strcmp(url, "/healthz") == 0)
    return ib_wsnap_healthy(&s, ib_wnow_us())
               ? text(c, MHD_HTTP_OK, "ok\n")
               : text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
                      s.sick    ? "sick: sticky worker fault\n"
                      : s.fatal ? "fatal Kafka error\n"
                                : "stopping: failed or past its grace period\n");
  /* A signal not yet seen by the driving thread already makes the worker
   * unready (only /readyz: a drain within its grace is healthy). */
  const bool signalled = m->stop && *m->stop;
  if (strcmp(url, "/readyz") == 0)
    return ib_wsnap_ready(&s) && !signalled
               ? text(c, MHD_HTTP_OK, "ok\n")
               : text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
                      signalled || s.stopping || s.sick || s.fatal ? "stopping\n"
                                                                   : "not in the group yet\n");
  return text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* HOST:PORT or [IPV6]:PORT; the host is required (0.0.0.0: every interface). */
static bool split_addr(const char *addr, char *host, size_t hcap, char *port, size_t pcap) {
  const char *colon = strrchr(addr, ':');
  if (!colon) return false;
  const char *h = addr;
  size_t n = (size_t)(colon - addr);
  if (n >= 2 && h[0] == '[' && h[n - 1] == ']')
    h++, n -= 2;
  else if (memchr(h, ':', n))
    return false; /* an IPv6 literal needs its brackets */
  size_t pn = strlen(colon + 1);
  if (!n || n >= hcap || !pn || pn >= pcap || strspn(colon + 1, "0123456789") != pn) return false;
  memcpy(host, h, n);
  host[n] = 0;
  memcpy(port, colon + 1, pn + 1);
  return strtoul(port, NULL, 10) <= 65535;
}

ib_status ib_wmetrics_start(ib_worker *w, char *errbuf, size_t cap) {
  const char *addr = w->cfg->metrics_addr;
  if (!addr) return IB_OK;
  char host[256], port[8];
  if (!split_addr(addr, host, sizeof host, port, sizeof port)) {
    snprintf(errbuf, cap, "--metrics-addr %s: not HOST:PORT", addr);
    return IB_INVALID;
  }
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV | AI_PASSIVE},
                  *ai = NULL;
  int e = getaddrinfo(host, port, &hints, &ai);
  if (e) {
    snprintf(errbuf, cap, "--metrics-addr %s: %s", addr, gai_strerror(e));
    return IB_INVALID;
  }
  ib_wmetrics *m = calloc(1, sizeof *m);
  if (!m) {
    freeaddrinfo(ai);
    snprintf(errbuf, cap, "--metrics-addr: out of memory");
    return IB_INTERNAL;
  }
  pthread_mutex_init(&m->mu, NULL);
  m->stop = w->cfg->stop;
  w->metrics = m;
  ib_wmetrics_refresh(w, true);
  /* epoll where there is one: no FD_SETSIZE limit beside librdkafka's sockets. */
  unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD;
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  m->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, m, MHD_OPTION_SOCK_ADDR,
                               ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT, 32u,
                               MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
  freeaddrinfo(ai);
  if (!m->daemon) {
    snprintf(errbuf, cap, "--metrics-addr %s: cannot listen (address in use or not local?)", addr);
    return IB_INTERNAL;
  }
  const union MHD_DaemonInfo *fd = MHD_get_daemon_info(m->daemon, MHD_DAEMON_INFO_LISTEN_FD);
  struct sockaddr_storage ss = {0};
  socklen_t sl = sizeof ss;
  char ip[INET6_ADDRSTRLEN] = "?";
  unsigned bound = 0;
  if (fd && getsockname(fd->listen_fd, (struct sockaddr *)&ss, &sl) == 0) {
    if (ss.ss_family == AF_INET6) {
      struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
      inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
      bound = ntohs(a->sin6_port);
    } else {
      struct sockaddr_in *a = (struct sockaddr_in *)&ss;
      inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
      bound = ntohs(a->sin_port);
    }
  }
  ib_wlog(w, "info", "http", "\"addr\":\"%s%s%s:%u\"", ss.ss_family == AF_INET6 ? "[" : "", ip,
          ss.ss_family == AF_INET6 ? "]" : "", bound);
  return IB_OK;
}

void ib_wmetrics_stop(ib_worker *w) {
  ib_wmetrics *m = w->metrics;
  if (!m) return;
  if (m->daemon && w->exit_code) {
    /* A failing worker (its partitions already handed back) answers 503 a
     * little longer, within its grace period, so that a probe sees why it
     * goes away rather than only a refused connection. */
    uint64_t now = ib_wnow_us(), end = now + LINGER_US;
    if (w->stop_deadline && w->stop_deadline < end) end = w->stop_deadline;
    if (end > now) usleep((useconds_t)(end - now));
  }
  if (m->daemon) MHD_stop_daemon(m->daemon);
  pthread_mutex_destroy(&m->mu);
  free(m);
  w->metrics = NULL;
}
