/* The end of an imgbatch process (worker/cli/process_exit.c): with a kernel
 * compile left running by the pool's bounded close (standing for NVRTC stuck
 * past the compile time bound), the CLI ends at once with its exit code -
 * it never returns to main, so exit's teardown of the libraries does not
 * run under that thread - after saying so and flushing stdio; with none
 * left it returns the code to main. Each end runs in a child process. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/process_exit.c"
#include "gpu/nvrtc_cache.h"

static const char *const fmad_opt[] = {"--fmad=false"};

static atomic_int gate, held;
static void hold(void *ctx, const char *sig) {
  (void)ctx;
  (void)sig;
  atomic_store(&held, 1);
  while (atomic_load(&gate)) usleep(1000);
}

/* A pool freed while its one compile is held: the thread is left running. */
static void leave_a_compile_running(void) {
  atomic_store(&gate, 1);
  ib_kcache *kc = ib_kcache_new(NULL, 1 << 20, 0);
  cr_assert_not_null(kc);
  const ib_cpool_options o = {.threads = 1,
                              .max_pending = 4,
                              .arch = "sm_90",
                              .opts = fmad_opt,
                              .n_opts = 1,
                              .on_start = hold,
                              .close_ms = 50};
  ib_error err = {0};
  ib_cpool *p = ib_cpool_new(kc, &o, &err);
  cr_assert_not_null(p, "%s", err.message);
  cr_assert_eq(ib_cpool_request_source(p, "k", "k.cu",
                                       "extern \"C\" __global__ void k(int *p) { *p = 1; }\n"),
               IB_CP_QUEUED);
  for (int i = 0; i < 5000 && !atomic_load(&held); i++) usleep(1000);
  cr_assert(atomic_load(&held), "the compile never started");
  ib_cpool_free(p);
  ib_kcache_free(kc);
  cr_assert_eq(ib_cpool_orphans(), 1);
}

static void let_it_finish(void) {
  atomic_store(&gate, 0);
  for (int i = 0; i < 120000 && ib_cpool_orphans(); i++) usleep(1000);
  cr_assert_eq(ib_cpool_orphans(), 0, "the left thread never ended");
}

/* A child that writes to buffered stdout and ends as main does, but with
 * _exit in place of exit (a forked test process must not run the runner's
 * exit handlers): "<returned>" and 10 more than the code when ib_cli_exit
 * returned. Its status, and its stdout and stderr together, read back. */
static int end_child(char *out, size_t n) {
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  fflush(NULL);
  const pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    setvbuf(stdout, NULL, _IOFBF, 4096); /* a pipe: nothing leaves before a flush */
    fputs("<results written>", stdout);
    const int rc = ib_cli_exit(3);
    fputs("<returned>", stdout);
    fflush(stdout);
    _exit(rc + 10);
  }
  close(fds[1]);
  size_t got = 0;
  for (ssize_t r; got + 1 < n && (r = read(fds[0], out + got, n - 1 - got)) > 0;) got += (size_t)r;
  out[got] = '\0';
  close(fds[0]);
  int st = 0;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st), "the child died (status %d)", st);
  return WEXITSTATUS(st);
}

Test(process_exit, a_compile_left_running_ends_the_process_at_once_with_its_code, .timeout = 120) {
  leave_a_compile_running();
  char out[1024];
  const int rc = end_child(out, sizeof out);
  let_it_finish();
  cr_assert_eq(rc, 3, "%s", out);
  cr_assert_not_null(strstr(out, "<results written>"), "stdio was not flushed: %s", out);
  cr_assert_not_null(strstr(out, "1 kernel compile(s) still inside NVRTC"), "%s", out);
  cr_assert_null(strstr(out, "<returned>"), "%s", out);
}

Test(process_exit, with_nothing_left_running_main_exits_as_usual, .timeout = 120) {
  leave_a_compile_running();
  let_it_finish();
  char out[1024];
  const int rc = end_child(out, sizeof out);
  cr_assert_eq(rc, 13, "ib_cli_exit did not return 3: %s", out);
  cr_assert_not_null(strstr(out, "<results written><returned>"), "%s", out);
  cr_assert_null(strstr(out, "NVRTC"), "%s", out);
}
