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

/* The resize and reduce device steps, called from a kernel, so NVRTC
 * generates their code (a header alone only parses functions nobody calls). */
Test(nvrtc, resample_steps_compile_into_a_kernel) {
  static const char src[] =
      "#include \"resample.cuh\"\n"
      "extern \"C\" __global__ void ib_probe_resample(uint8_t *o, const uint8_t *i,\n"
      "    const int *bounds, const int *coeffs, int ksize, int bands) {\n"
      "  ib_resample_axis ax = {ksize, bounds, coeffs};\n"
      "  const int box[4] = {0, 0, 7, 5};\n"
      "  int x = threadIdx.x, y = blockIdx.x;\n"
      "  ib_premultiply_step(o, i, bands, x);\n"
      "  ib_resample_h_step(o, i, 9u, bands, 1, 4u, ax, x, y);\n"
      "  ib_resample_v_step(o, i, 4u, bands, ax, x, y);\n"
      "  ib_reduce_step(o, 3u, i, 7u, bands, 2, 3, box, x, y);\n"
      "  ib_unpremultiply_step(o, bands, x);\n"
      "}\n";
  compile("probe_resample_steps.cu", src);
}
