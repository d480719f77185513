/* The operating system, behind one small interface: memory, time, threads, files, the environment and
 * the processor. Two files implement it: base/os_windows.c for the shipped DLLs and base/os_posix.c
 * for the host build that runs the tests under the sanitizers; where the two builds differ, the
 * difference is here and nowhere else. Besides them only the files named *_windows.c or *_posix.c
 * (stack traces) and api/startup.c (DllMain, or the loader's constructor) reach the system.
 *
 * Nothing here allocates from fm5, takes an fm5 lock or reports an event: every layer may call it,
 * including the event code and the managers while they hold their locks. */
#ifndef FM5_OS_H
#define FM5_OS_H

#include "base/platform.h"

/* Windows hands out address space in 64 KB granules: every region fm5 maps starts on one, on the host
 * too (os_posix.c trims its mappings to it), so that both builds share one address map. */
#define FM5_OS_GRANULARITY 65536u
/* The smallest unit the OS commits and faults in (4 KB on x86 Windows and Linux alike). */
#define FM5_OS_PAGE_SIZE 4096u

/* A timeout that never expires. */
#define FM5_WAIT_FOREVER 0xFFFFFFFFu

/* ---- memory ------------------------------------------------------------------------------------ */

/* Reserves and commits `size` bytes (a multiple of FM5_OS_GRANULARITY), zero-filled, at an address the
 * OS picks (the highest free one when `top_down`). NULL when the OS refuses. */
void *fm5_os_map(size_t size, int top_down);
/* The same exactly at `address`; 0 when that range is not wholly free (or the OS refuses). */
int fm5_os_map_at(void *address, size_t size);
/* Gives back `size` bytes from `base`: `mappings` adjacent mappings, the first made by fm5_os_map and
 * the rest by fm5_os_map_at (a large block grown in place). Returns 0 when the OS refused; the memory
 * is then still mapped. */
int fm5_os_unmap(void *base, size_t size, unsigned mappings);
/* Reserves `size` bytes without access, at `address` or (NULL) where the OS picks, so that a use of
 * a pointer into them faults. Returns the base, or NULL if the range was not free. */
void *fm5_os_reserve_inaccessible(void *address, size_t size);

/* Failure injection, for the tests and the fuzzer: the OS layer refuses calls of the kinds in `kinds`
 * (FM5_OS_FAULT_*), the `nth` call from now (1: the next one; 0: none by count) and, independently,
 * each call with probability `per_million` / 1e6 drawn from `seed`. A refused call changes nothing,
 * exactly as a real refusal would. fm5_os_fault_injection(0, 0, 0, 0) turns it off; it starts off.
 * Returns the number of calls refused since the previous setting. */
enum {
    FM5_OS_FAULT_MAP = 1,        /* fm5_os_map: reserve and commit */
    FM5_OS_FAULT_MAP_AT = 2,     /* fm5_os_map_at: growth in place */
    FM5_OS_FAULT_UNMAP = 4,      /* fm5_os_unmap: release */
    FM5_OS_FAULT_ALL = 7
};
uint32_t fm5_os_fault_injection(unsigned kinds, uint32_t nth, uint32_t per_million, uint64_t seed);
/* What the OS layer calls first: 1 when this call of `kind` must be refused. One relaxed load when
 * injection is off. */
int fm5_os_fault_due(unsigned kind);

/* ---- the release guard ------------------------------------------------------------------------- */

/* A bad pointer can race with the release of the region it points into: a pointer check reads the
 * address map ("fm5's"), another thread releases the region, and the check's next read of the region
 * faults. The release guard turns that fault into a failed check: when fm5's own code faults reading
 * an address in a granule that fm5 released (the address map remembers, fm5_address_map_was_released)
 * and has not mapped again, the handler (a vectored exception handler on Windows,
 * a SIGSEGV handler on POSIX) maps a zero granule there (a tombstone) and resumes; the check
 * then reads zeros, which no valid block has, and fails as for any other bad pointer. A write fault
 * there is taken the same way: a free's claim is a compare-and-swap of the status word it read just
 * before, and when two frees of one block race, the winner may release the region between the
 * loser's read and its compare-and-swap. On the tombstone the compare-and-swap meets zero, not the
 * live status it expects, and fails (the loser reports the double free); it writes back the zero it
 * read, so tombstones are writable. The free path
 * pays nothing: no flag, no fence, no extra load. At most FM5_OS_TOMBSTONES granule tombstones stand
 * at once, each 64 KB of address space and no memory: making one more unmaps the oldest. (On POSIX,
 * where another mapping may hold part of the granule, a tombstone may be one page instead; those are
 * never unmapped, at most 4096 of them.) That is safe at any time, since a
 * check still reading an unmapped tombstone faults again and gets a new one (the granule stays marked
 * released until fm5 maps it again). Faults that are not this one go to the handler that was there
 * before. */
#define FM5_OS_TOMBSTONES 64u
void fm5_os_install_release_guard(void);
void fm5_os_remove_release_guard(void);
/* How many tombstones the guard has made since start-up (for tests). */
uint32_t fm5_os_release_guard_tombstones(void);

/* For the OS layers: records a tombstone just made at `granule`; returns the one it replaces (to be
 * unmapped), or NULL. */
void *fm5_os_record_tombstone(void *granule);

/* ---- threads and time -------------------------------------------------------------------------- */

/* Gives the processor to another ready thread, if any. */
void fm5_os_yield(void);
/* Milliseconds since some fixed time; wraps every 49.7 days. */
uint32_t fm5_os_tick_ms(void);
uint32_t fm5_os_thread_id(void);

/* What tells the running thread apart from every other live one, and (mostly) from a later thread that
 * is given the same id: its id, its stack base and the address of its own control block. On Windows
 * all three are read from the TEB at the offsets below, which asm/ reads too; a POSIX build gives the
 * kernel thread id, pthread_self() and the stack base. */
typedef struct fm5_os_thread_facts {
    uintptr_t self;
    uintptr_t stack_base;
    uint32_t id;
} fm5_os_thread_facts;
fm5_os_thread_facts fm5_os_current_thread_facts(void);
#ifdef FM5_WINDOWS
#  define FM5_TEB_STACK_BASE_OFFSET FM5_POINTER_SIZE     /* NT_TIB.StackBase */
#  define FM5_TEB_SELF_OFFSET (6 * FM5_POINTER_SIZE)     /* NT_TIB.Self */
#  ifdef FM5_64BIT
#    define FM5_TEB_THREAD_ID_OFFSET 0x48                /* TEB.ClientId.UniqueThread, low dword */
#  else
#    define FM5_TEB_THREAD_ID_OFFSET 0x24
#  endif
#endif
/* One pointer per thread, for the thread caches (blocks/thread_cache.h), with a call when a thread
 * ends: on Windows a TLS slot (TlsAlloc) that asm/ reads straight from the TEB's TlsSlots array, and
 * a fiber-local slot (FlsAlloc) whose callback runs when the thread exits normally (not when it is
 * killed by TerminateThread); on POSIX a __thread variable and a pthread key's destructor.
 * fm5_os_thread_slot_create returns the slot's offset in the TEB (0 on POSIX) or -1 when none can be
 * had (a TLS index past the TEB's 64 slots counts as none). `at_exit` gets the thread's value, which
 * it may replace with fm5_os_thread_slot_set; it is not called for a NULL value. */
#ifdef FM5_WINDOWS
#  define FM5_TEB_TLS_SLOTS_OFFSET (FM5_POINTER_SIZE == 8 ? 0x1480 : 0xE10) /* TEB.TlsSlots[0] */
#  define FM5_TEB_TLS_SLOT_COUNT 64
#endif
long fm5_os_thread_slot_create(void (*at_exit)(void *value));
/* Sets the running thread's value; with `call_at_exit` 0 the exit call keeps the value it had (what
 * at_exit uses to leave a last value behind for frees made later in the thread's exit). */
void fm5_os_thread_slot_set(void *value, int call_at_exit);
/* At unload: no exit call after this returns (the callback would be in unmapped code). */
void fm5_os_thread_slot_destroy(void);
/* The running thread's value: one load through the segment register on Windows. */
#ifdef FM5_WINDOWS
extern uintptr_t fm5_os_thread_slot_offset;
FM5_INLINE void *fm5_os_thread_slot_get(void)
{
    void *value;
#  ifdef FM5_64BIT
    __asm__("movq %%gs:(%1), %0" : "=r"(value) : "r"((uintptr_t)fm5_os_thread_slot_offset));
#  else
    __asm__("movl %%fs:(%1), %0" : "=r"(value) : "r"((uintptr_t)fm5_os_thread_slot_offset));
#  endif
    return value;
}
#else
extern __thread void *fm5_os_thread_slot_value;
FM5_INLINE void *fm5_os_thread_slot_get(void)
{
    return fm5_os_thread_slot_value;
}
#endif
/* An OS handle of the running thread, kept until fm5_os_thread_handle_close: fm5_os_thread_has_ended
 * then tells whether the thread is gone, even when it was killed. 0 when none can be had. */
uintptr_t fm5_os_thread_handle_open(void);
int fm5_os_thread_has_ended(uintptr_t handle);
void fm5_os_thread_handle_close(uintptr_t handle);
/* Interrupts the thread of `handle` (fm5_os_thread_handle_open) and lets it go on: when this returns,
 * every store the thread made before the point where it was stopped is visible to the caller, and
 * every load it makes afterwards sees what the caller stored before the call. An asymmetric fence:
 * the thread itself runs no fence instruction (blocks/claims.h is its user). Windows: SuspendThread,
 * then GetThreadContext (which waits until the thread has really stopped), then ResumeThread; where
 * either fails, FlushProcessWriteBuffers. Returns 1 when done, 0 when the thread has ended, -1 when
 * this build cannot (the POSIX one). */
int fm5_os_thread_interrupt(uintptr_t handle);

/* Stops in the debugger (FastMM_SetBreakOnAllocationNumber). */
void fm5_os_debug_break(void);

/* Waits for a lock, yielding between attempts, for the rare paths that must have it. Returns 0 if it
 * was not obtained within `timeout_ms` (FM5_WAIT_FOREVER: never gives up). */
int fm5_lock_with_timeout(fm5_lock *lock, uint32_t timeout_ms);

typedef struct fm5_os_local_time {
    unsigned year, month, day, hour, minute, second;
} fm5_os_local_time;
void fm5_os_get_local_time(fm5_os_local_time *time);

/* ---- files, text output and the environment ---------------------------------------------------- */

/* Appends `count` pieces to the file at `utf8_path`, creating it when missing; a file this call
 * creates gets `start_of_new_file` first (NULL: nothing). Returns 0, or -1 if the file could not be
 * opened or fully written. */
int fm5_os_append_to_file(const char *utf8_path, const char *start_of_new_file, const char *const *pieces,
                          const size_t *lengths, unsigned count);
/* Returns 1 if the file existed and was deleted. */
int fm5_os_delete_file(const char *utf8_path);
/* The program's full path without its extension, as UTF-8 ("fm5" when it cannot be read). */
void fm5_os_program_path_stem(char *out, size_t capacity);
/* The value of an environment variable as UTF-8; returns its length, or 0 when unset or longer than
 * capacity - 1. */
size_t fm5_os_environment(const char *name, char *out, size_t capacity);
void fm5_os_debug_output(const char *text);
/* A modal error box with the UTF-8 `text`, if the system can show one. */
void fm5_os_message_box(const char *text, const char *title);

/* ---- checked builds ---------------------------------------------------------------------------- */

#if FM5_CHECKED
/* Writes `text` to stderr (and the debugger) and ends the process with exit code 134 at once, running
 * nothing of the program's: what a failed FM5_ASSERT does (os_common.c words the message). */
void fm5_os_fail_fast(const char *text, size_t length) __attribute__((noreturn));
#endif

/* ---- the processor ----------------------------------------------------------------------------- */

/* 1 when SSE2 may be used (the OS saves the XMM registers). Read by asm/ as a byte, so that the test is
 * one compare with memory; set by fm5_os_detect_processor at start-up. */
extern uint8_t fm5_cpu_has_sse2;
/* 1 when the processor reports fast strings (CPUID leaf 7, EBX bit 9, ERMS): `rep movsb` is then its
 * fastest copy of a kilobyte or more. Read by asm/ as a byte, like fm5_cpu_has_sse2, and set with it. */
extern uint8_t fm5_cpu_has_fast_strings;
void fm5_os_detect_processor(void);
/* The CPUID half of fm5_os_detect_processor, the same on every OS (os_common.c). */
void fm5_detect_fast_strings(void);

#endif
