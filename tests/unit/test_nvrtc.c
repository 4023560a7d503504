/* Every embedded kernel source compiles with NVRTC for sm_90 (no GPU needed):
 * each math header on its own as a device translation unit, and every .cu. */
#include <criterion/criterion.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ib_embedded_file {
  const char *name;
  const char *text;
  size_t size;
} ib_embedded_file;
extern const ib_embedded_file ib_embedded_kernels[];
extern const size_t ib_embedded_kernel_count;

static void compile(const char *name, const char *src) {
  size_t n = ib_embedded_kernel_count;
  const char **hdr_src = calloc(n, sizeof *hdr_src), **hdr_names = calloc(n, sizeof *hdr_names);
  for (size_t i = 0; i < n; i++) {
    hdr_src[i] = ib_embedded_kernels[i].text;
    hdr_names[i] = ib_embedded_kernels[i].name;
  }
  nvrtcProgram prog;
  cr_assert_eq(nvrtcCreateProgram(&prog, src, name, (int)n, hdr_src, hdr_names), NVRTC_SUCCESS);
  const char *opts[] = {"--gpu-architecture=sm_90", "--fmad=false", "-default-device"};
  nvrtcResult rc = nvrtcCompileProgram(prog, 3, opts);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  char *log = malloc(log_size + 1);
  nvrtcGetProgramLog(prog, log);
  cr_expect_eq(rc, NVRTC_SUCCESS, "%s failed to compile:\n%s", name, log);
  free(log);
  nvrtcDestroyProgram(&prog);
  free(hdr_src);
  free(hdr_names);
}

Test(nvrtc, every_kernel_source_compiles_for_sm_90) {
  cr_assert_gt(ib_embedded_kernel_count, 0);
  for (size_t i = 0; i < ib_embedded_kernel_count; i++) {
    const ib_embedded_file *f = &ib_embedded_kernels[i];
    size_t len = strlen(f->name);
    if (len > 3 && strcmp(f->name + len - 3, ".cu") == 0) {
      compile(f->name, f->text);
    } else {
      char src[512], unit[300];
      snprintf(src, sizeof src, "#include \"%s\"\n__global__ void ib_probe_kernel(void) {}\n",
               f->name);
      snprintf(unit, sizeof unit, "probe_%s.cu", f->name);
      compile(unit, src);
    }
  }
}

/* The resize head's kernels (resample.cuh: the reduce step, the horizontal
 * and vertical passes, which call the shared math of resample.h and
 * reduce.h) for every band count, premultiplied or not, as the generator
 * defines them; ReduceOp's gather head is instantiated by test_gpu_codegen. */
Test(nvrtc, resize_head_kernels_compile_for_every_band_count) {
  for (int b = 1; b <= 4; b++)
    for (int a = 0; a <= (b == 2 || b == 4); a++) {
      char src[256], name[64];
      snprintf(src, sizeof src,
               "#define IB_B0 %d\n#define IB_A %d\n#define IB_PBYTES 256\n"
               "#include \"resample.cuh\"\n",
               b, a);
      snprintf(name, sizeof name, "probe_resample_b%d_a%d.cu", b, a);
      compile(name, src);
    }
}
