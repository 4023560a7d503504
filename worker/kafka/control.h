/* control.h - resident outputs and the control topic (control.c). */
#ifndef IB_KAFKA_CONTROL_H
#define IB_KAFKA_CONTROL_H

#include "kafka/wstate.h"

ib_status ib_wcontrol_start(ib_worker *w, char *errbuf, size_t cap);
void ib_wcontrol_poll(ib_worker *w);
/* Keeps a resident result's handle (takes it from res); fills the ref. */
bool ib_whandle_keep(ib_worker *w, ib_result *res, uint64_t *handle_id);
void ib_wcontrol_stop(ib_worker *w);

#endif
