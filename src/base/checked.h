/* FM5_ASSERT: invariants as code. A checked build (cmake -DFM5_CHECKED=ON, the presets *-checked)
 * turns every assertion on; it stops the process at the first broken invariant with the file, the
 * line and the condition on stderr and in the debugger. A release build compiles them to nothing,
 * and the condition is never evaluated, so it may cost anything. */
#ifndef FM5_CHECKED_H
#define FM5_CHECKED_H

#if FM5_CHECKED
void fm5_assertion_failed(const char *condition, const char *file, int line) __attribute__((noreturn, cold));
#  define FM5_ASSERT(condition) \
    ((condition) ? (void)0 : fm5_assertion_failed(#condition, __FILE__, __LINE__))
#else
/* Still compiled, never evaluated: the condition keeps type-checking and what it names counts as used. */
#  define FM5_ASSERT(condition) ((void)sizeof((condition) ? 1 : 0))
#endif

#endif
