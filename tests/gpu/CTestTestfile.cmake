# `ctest --test-dir tests/gpu -L gpu` on the GPU machine, which has a pack
# (.devpack/, .whl/) and no build tree: the cases of cases.cmake, as the
# build's ctest registers them (CMakeLists.txt). ctest runs them from here.
macro(ib_gpu_case name timeout)
  add_test(gpu/${name} bash case.sh ${name})
  set_tests_properties(gpu/${name} PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 RUN_SERIAL ON
    TIMEOUT ${timeout})
endmacro()
include(cases.cmake)
