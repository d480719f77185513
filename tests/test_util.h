/*
 * test_util.h — everything fm5's test programs share, in one include.
 *
 * The pieces live in tests/support/, one concept each: a header and the .c that defines its functions,
 * compiled once into every test program (tests/CMakeLists.txt, fm5_add_test):
 *   harness.h              CHECK macros, pass/fail counters, tu_init, test_finish, the watchdog, tu_info
 *   rng.h                  the deterministic generator (splitmix64, xorshift64*)
 *   patterns.h             block content patterns (tu_pattern_*), CHECK_PATTERN
 *   events.h               the event recorder (counts, the last event, optionally every event)
 *   size_oracle.h          FastMM5's small classes, medium bins and large granularity
 *   debug_layout_oracle.h  the debug block header and footer
 *   heap_probes.h          walk snapshots, adjacent medium blocks, an arena lock held by a helper
 * The two oracles are written from the specification and include nothing from src/.
 *
 * Include this header first: it selects MinGW's C99 printf (so %zu and %llu mean the same on both
 * architectures) before any C library header is seen. A test that needs a longer watchdog defines
 * TU_WATCHDOG_SECONDS before including it.
 */
#ifndef FM5_TEST_UTIL_H
#define FM5_TEST_UTIL_H

#include "support/arch.h"

/* The C library as the tests use it. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm5.h"

#include "support/harness.h"
#include "support/rng.h"
#include "support/patterns.h"
#include "support/events.h"
#include "support/size_oracle.h"
#include "support/debug_layout_oracle.h"
#include "support/heap_probes.h"

#endif /* FM5_TEST_UTIL_H */
