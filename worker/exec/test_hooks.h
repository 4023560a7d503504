/*
 * test_hooks.h - executor hooks for tests only (not part of imgbatch.h, not
 * exported from libimgbatch.so): tests and tools that link the core
 * directly reach them.
 */
#ifndef IB_EXEC_TEST_HOOKS_H
#define IB_EXEC_TEST_HOOKS_H

#include <stdint.h>

#include "imgbatch.h"

/* The next id to assign (ids then continue from it), so tests reach
 * UINT64_MAX without 2^64 submissions. 0 means 1. */
void ib_executor_test_set_next_id(ib_executor *ex, uint64_t next_id);

#endif
