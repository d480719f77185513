/*
 * system.h — the tests' one door to the operating system, as src/base/os.h is fm5's: threads, atomics,
 * time, memory that is not fm5's, the environment, files and child processes. system_windows.c
 * implements it for the Windows builds (run under Wine), system_posix.c for the host build (run under
 * the sanitizers), so that one test source serves both. Nothing here allocates from fm5.
 */
#ifndef FM5_TEST_SYSTEM_H
#define FM5_TEST_SYSTEM_H

#include <stddef.h>
#include <stdint.h>

/* ---- atomics (sequentially consistent; the GCC builtins that both compilers have) ---------------- */

/* A counter that several threads update: `long`, as the Windows LONG it replaces is. */
typedef volatile long tu_atomic_long;

#define tu_atomic_increment(p) __atomic_add_fetch((p), 1, __ATOMIC_SEQ_CST)        /* the new value */
#define tu_atomic_decrement(p) __atomic_sub_fetch((p), 1, __ATOMIC_SEQ_CST)        /* the new value */
#define tu_atomic_fetch_add(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)   /* the old value */
#define tu_atomic_exchange(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)   /* the old value */
#define tu_atomic_load(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define tu_atomic_store(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
/* Stores `desired` if *p == `expected`; returns 1 when it did. */
#define tu_atomic_cas(p, expected, desired)                                                            \
    __extension__({                                                                                    \
        __typeof__(*(p) + 0) tu_expected_ = (expected);                                                    \
        __atomic_compare_exchange_n((p), &tu_expected_, (desired), 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    })

/* ---- threads and time ---------------------------------------------------------------------------- */

typedef struct tu_thread_state *tu_thread;
typedef void (*tu_thread_body)(void *argument);

/* Starts `body(argument)` on a new thread with at least `stack_bytes` of stack (0: the default).
 * Returns NULL when no thread could be made. */
tu_thread tu_thread_start(tu_thread_body body, void *argument, size_t stack_bytes);
/* Waits up to `timeout_ms` for the thread to end. Returns 1 and releases the handle when it ended;
 * 0 when it is still running (the handle then stays valid, and the thread is left alone). */
int tu_thread_join(tu_thread thread, unsigned timeout_ms);
/* Joins every thread of threads[0..count), each within what is left of `timeout_ms`; NULL entries
 * are skipped. Returns how many ended in time. */
unsigned tu_thread_join_all(tu_thread *threads, unsigned count, unsigned timeout_ms);
/* The calling thread's id as the OS numbers it (what fm5 records in debug blocks). */
uint32_t tu_thread_id(void);
uint32_t tu_process_id(void);

void tu_sleep_ms(unsigned milliseconds);
void tu_yield(void);
/* Milliseconds since some point: progress messages, timeouts and fm5's tick count, never asserts
 * about speed. */
unsigned long long tu_ms(void);
/* fm5's own tick (the value debug blocks record): 32 bits of milliseconds. */
uint32_t tu_tick32(void);

/* A flag one thread raises and others wait for (a manual-reset event). */
typedef struct tu_signal {
    volatile int raised;
} tu_signal;
void tu_signal_raise(tu_signal *signal);
/* Returns 1 once raised, 0 after `timeout_ms`. */
int tu_signal_wait(tu_signal *signal, unsigned timeout_ms);

/* ---- memory that is not fm5's -------------------------------------------------------------------- */

/* Whole pages straight from the OS, read-write and zeroed, aligned to 64 KB (as VirtualAlloc's): a
 * region fm5 never handed out. NULL when refused. */
void *tu_os_map(size_t size);
void tu_os_unmap(void *base, size_t size);
/* Reserves address space that faults on any access (NULL `address`: anywhere). */
void *tu_os_reserve_inaccessible(void *address, size_t size);
/* Makes [address, address + size) inaccessible (0) or read-write (1). Returns 1 on success. */
int tu_os_set_access(void *address, size_t size, int read_write);
/* Bytes of free address space from `address` on, looked at up to `up_to` bytes (0 when not free). */
size_t tu_os_free_bytes_at(const void *address, size_t up_to);
/* A block from the C runtime's heap, which is never fm5 in these tests: a foreign pointer. */
void *tu_foreign_alloc(size_t size);
void tu_foreign_free(void *p);

/* ---- the environment, files and processes ------------------------------------------------------- */

/* The variable's value; returns its length, 0 when unset (or too long for `capacity`). */
size_t tu_getenv(const char *name, char *out, size_t capacity);
/* Sets the variable for this process and the children it starts; NULL `value` removes it. */
void tu_setenv(const char *name, const char *value);
/* A folder for temporary files, ending with the path separator. */
void tu_temp_folder(char *out, size_t capacity);
/* The separator of file paths, '\\' or '/'. */
char tu_path_separator(void);
int tu_delete_file(const char *path);
int tu_file_exists(const char *path);
/* Whether two paths name the same file as the OS compares names (case-blind on Windows). */
int tu_same_path(const char *a, const char *b);
/* The path of this test program, and the address its image is loaded at. */
void tu_program_path(char *out, size_t capacity);
uintptr_t tu_program_base(void);
/* Runs this test program again with `arguments` (NULL-terminated, without the program name) and the
 * current environment, its stderr into the file `stderr_path` (NULL: this process's), and waits up
 * to `timeout_ms`. Returns its exit code, or -1 when it could not be started or did not finish in time
 * (it is then killed). */
int tu_run_self(const char *const *arguments, const char *stderr_path, unsigned timeout_ms);
/* The whole file, NUL-terminated, from the C runtime's heap (free() it); NULL when unreadable. */
char *tu_read_file(const char *path);
/* Ends the process at once with `code`, running no exit handlers (fm5's leak report included). */
void tu_exit_now(int code) __attribute__((noreturn));
/* Makes a crash end the test at once instead of waiting for a debugger or a dialog. */
void tu_no_crash_dialogs(void);

#endif /* FM5_TEST_SYSTEM_H */
