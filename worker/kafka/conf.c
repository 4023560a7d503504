#include "kafka/conf.h"

#include <string.h>

#include "kafka/json_escape.h"
#include "kafka/log.h"

bool ib_wconf_set(ib_worker *w, rd_kafka_conf_t *c, const char *k, const char *v, char *errbuf,
                  size_t cap) {
  (void)w;
  if (rd_kafka_conf_set(c, k, v, errbuf, cap) == RD_KAFKA_CONF_OK) return true;
  return false;
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
  ib_worker *w = opaque;
  char r[400];
  ib_json_escape(r, sizeof r, reason);
  if (err == RD_KAFKA_RESP_ERR__FATAL) {
    char fr[400], esc[400];
    rd_kafka_fatal_error(rk, fr, sizeof fr);
    ib_wlog(w, "error", "fatal", "\"client\":\"%s\",\"message\":\"%s\"", rd_kafka_name(rk),
            ib_json_escape(esc, sizeof esc, fr));
    w->fatal = true;
    return;
  }
  ib_wlog(w, "warn", "kafka_error", "\"client\":\"%s\",\"code\":\"%s\",\"message\":\"%s\"",
          rd_kafka_name(rk), rd_kafka_err2name((rd_kafka_resp_err_t)err), r);
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
  ib_worker *w = rd_kafka_opaque(rk);
  char f[64], b[600];
  ib_wlog(w,
          level <= 3   ? "error"
          : level <= 4 ? "warn"
                       : "info",
          "librdkafka", "\"facility\":\"%s\",\"message\":\"%s\"", ib_json_escape(f, sizeof f, fac),
          ib_json_escape(b, sizeof b, buf));
}

/* Every client gets the brokers, the -X pass-through properties and the
 * worker's callbacks; -X wins over our defaults only where set after them. */
rd_kafka_conf_t *ib_wconf_new(ib_worker *w, char *errbuf, size_t cap) {
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_conf_set_opaque(c, w);
  rd_kafka_conf_set_error_cb(c, on_error);
  rd_kafka_conf_set_log_cb(c, on_log);
  /* TCP_NODELAY (as the Java client always sets): with Nagle, a small
   * request (a commit, a fetch, a produce's last segment) waits for the ACK
   * of the one before it; a broker holding an empty fetch's answer up to
   * fetch.wait.max.ms may hold that ACK as long (delayed ACK), so a commit
   * sent behind an empty fetch, and the fetch after that commit, waited
   * with it. -X may set it back. */
  if (!ib_wconf_set(w, c, "bootstrap.servers", w->cfg->brokers, errbuf, cap) ||
      !ib_wconf_set(w, c, "client.id", w->worker_id, errbuf, cap) ||
      !ib_wconf_set(w, c, "socket.nagle.disable", "true", errbuf, cap)) {
    rd_kafka_conf_destroy(c);
    return NULL;
  }
  return c;
}

const char *ib_wconf_prop(const ib_worker *w, const char *key) {
  const char *v = NULL;
  for (int i = 0; i < w->cfg->n_props; i++)
    if (strcmp(w->cfg->props[i][0], key) == 0) v = w->cfg->props[i][1];
  return v;
}

bool ib_wconf_props(ib_worker *w, rd_kafka_conf_t *c, char *errbuf, size_t cap) {
  for (int i = 0; i < w->cfg->n_props; i++) {
    const char *k = w->cfg->props[i][0], *v = w->cfg->props[i][1];
    /* Empty: static membership off (ib_wconf_static_id), librdkafka's unset. */
    if (strcmp(k, "group.instance.id") == 0 && !v[0]) continue;
    if (!ib_wconf_set(w, c, k, v, errbuf, cap)) return false;
  }
  return true;
}

const char *ib_wconf_static_id(const ib_worker *w) {
  const char *x = ib_wconf_prop(w, "group.instance.id");
  if (x) return x[0] ? x : NULL;
  return w->cfg->worker_id; /* given, so stable across restarts; NULL when generated */
}
