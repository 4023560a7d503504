# The GPU cases: tests/gpu/case.sh NAME runs one, exit 77 (skipped) where
# there is no CUDA device. Read by the build's ctest (CMakeLists.txt), by
# the pack's (tests/gpu/CTestTestfile.cmake: `ctest --test-dir tests/gpu -L
# gpu` on the GPU machine) and by tests/gpu/run.sh, so the three run the
# same list. ib_gpu_case(NAME TIMEOUT_SECONDS)
ib_gpu_case(gpu_check 300)
ib_gpu_case(gpu_check_warm 120)
ib_gpu_case(memcheck 200)
ib_gpu_case(racecheck 100)
ib_gpu_case(interp_check 120)
ib_gpu_case(storm_check 180)
ib_gpu_case(capacity 120)
ib_gpu_case(worker 540)
ib_gpu_case(parity_live 300)
ib_gpu_case(renditions_live 120)
# The warm start reads the module cache the cold gpu_check filled.
set_tests_properties(gpu/gpu_check PROPERTIES FIXTURES_SETUP gpu_module_cache)
set_tests_properties(gpu/gpu_check_warm PROPERTIES FIXTURES_REQUIRED gpu_module_cache)
