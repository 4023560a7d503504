#include "kafka/phase.h"

#include "kafka/clock.h"

void ib_wphase(ib_worker *w, int phase, uint64_t since_us) {
  uint64_t now = ib_wnow_us();
  if (!since_us || since_us > now) return;
  w->phase_sum_us[phase] += now - since_us;
  w->phase_n[phase]++;
}

void ib_wphase_add(ib_worker *w, int phase, uint64_t us) {
  w->phase_sum_us[phase] += us;
  w->phase_n[phase]++;
}

uint64_t ib_wphase_avg(const ib_worker *w, int phase) {
  return w->phase_n[phase] ? w->phase_sum_us[phase] / w->phase_n[phase] : 0;
}
