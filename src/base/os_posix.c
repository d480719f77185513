/* base/os.h on Linux and other POSIX systems: the host build's one door to the system, so that the
 * portable core runs natively under the sanitizers and a profiler. Memory comes from mmap in 64 KB
 * aligned pieces, as Windows hands it out, so the address map and every layout are those of Win64. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "base/os.h"
#include "base/text_builder.h"
#include "base/address_map.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#  define MAP_FIXED_NOREPLACE 0x100000
#endif

/* ---- memory ------------------------------------------------------------------------------------ */

/* mmap aligns only to pages: map one granule more than asked and cut the ends off. */
void *fm5_os_map(size_t size, int top_down)
{
    (void)top_down;  /* Linux places mappings top-down already */
    if (fm5_os_fault_due(FM5_OS_FAULT_MAP) || size > SIZE_MAX - FM5_OS_GRANULARITY)
        return NULL;
    size_t padded = size + FM5_OS_GRANULARITY;
    char *raw = mmap(NULL, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *aligned = (char *)fm5_round_up((uintptr_t)raw, FM5_OS_GRANULARITY);
    if (aligned > raw)
        munmap(raw, (size_t)(aligned - raw));
    size_t tail = (size_t)(raw + padded - (aligned + size));
    if (tail)
        munmap(aligned + size, tail);
    return aligned;
}

int fm5_os_map_at(void *address, size_t size)
{
    if (fm5_os_fault_due(FM5_OS_FAULT_MAP_AT))
        return 0;
    void *p = mmap(address, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
                   MAP_FIXED_NOREPLACE, -1, 0);
    if (p == address)
        return 1;
    /* A kernel older than 4.17 treats the flag as a hint and may map elsewhere. */
    if (p != MAP_FAILED)
        munmap(p, size);
    return 0;
}

/* munmap takes any page range, however many mappings it spans. */
int fm5_os_unmap(void *base, size_t size, unsigned mappings)
{
    (void)mappings;
    if (fm5_os_fault_due(FM5_OS_FAULT_UNMAP))
        return 0;
    return munmap(base, size) == 0;
}

/* ---- the release guard (os.h) ------------------------------------------------------------------ */

/* fm5's own code: the shared object's (or, in a static build, the program's) loaded segments. */
static uintptr_t own_start, own_end;

static int find_own_object(struct dl_phdr_info *info, size_t size, void *context)
{
    (void)size;
    (void)context;
    uintptr_t low = UINTPTR_MAX, high = 0, own = (uintptr_t)(void *)find_own_object;
    int ours = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + segment->p_vaddr, end = start + segment->p_memsz;
        low = start < low ? start : low;
        high = end > high ? end : high;
        ours |= own >= start && own < end;
    }
    if (!ours)
        return 0;
    own_start = low;
    own_end = high;
    return 1;
}

static struct sigaction previous_handler;
static volatile int guard_installed;

/* A zero granule at the faulting granule (writable: os.h says why); a page if something else holds
 * part of the granule now. 1 when the access can be retried: a tombstone is there, or the page is
 * mapped again. */
static int make_tombstone(uintptr_t address)
{
    unsigned char resident;
    uintptr_t page = address & ~(uintptr_t)(FM5_OS_PAGE_SIZE - 1);
    uintptr_t granule = address & ~(uintptr_t)(FM5_OS_GRANULARITY - 1);
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE;
    enum { ATTEMPTS = 16, PAGE_TOMBSTONES = 4096 };
    static volatile uint32_t page_tombstones;
    /* Other threads map and unmap around the page meanwhile (fm5_os_map maps more than it keeps and
     * trims the ends): a refused mapping whose page is free again the next moment is tried again. */
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
        void *p = mmap((void *)granule, FM5_OS_GRANULARITY, PROT_READ | PROT_WRITE, flags, -1, 0);
        if (p == (void *)granule) {
            /* Tombstones are whole granules: the one replaced is unmapped whole. */
            void *replaced = fm5_os_record_tombstone(p);
            if (replaced)
                munmap(replaced, FM5_OS_GRANULARITY);
            return 1;
        }
        if (p != MAP_FAILED)
            munmap(p, FM5_OS_GRANULARITY);
        /* Something else holds part of the granule (mmap places at page granularity): a tombstone of
         * the one page, never unmapped, at most PAGE_TOMBSTONES of them. */
        if (__atomic_load_n(&page_tombstones, __ATOMIC_RELAXED) < PAGE_TOMBSTONES) {
            p = mmap((void *)page, FM5_OS_PAGE_SIZE, PROT_READ | PROT_WRITE, flags, -1, 0);
            if (p == (void *)page) {
                __atomic_add_fetch(&page_tombstones, 1, __ATOMIC_RELAXED);
                return 1;
            }
            if (p != MAP_FAILED)
                munmap(p, FM5_OS_PAGE_SIZE);
        }
        if (mincore((void *)page, FM5_OS_PAGE_SIZE, &resident) == 0)
            return 1;
    }
    return 0;
}

static void release_guard_handler(int signal, siginfo_t *info, void *context)
{
#if defined(__x86_64__)
    const ucontext_t *machine = context;
    uintptr_t ip = (uintptr_t)machine->uc_mcontext.gregs[REG_RIP];
    /* Reads and writes alike (os.h: a claim's compare-and-swap may meet a released region). */
    uintptr_t address = (uintptr_t)info->si_addr;
    if (ip >= own_start && ip < own_end) {
        /* Mapped again by the time we look (fm5 or another allocation took the pages): retry. mincore
         * cannot tell a page without access from a readable one, so a thread gives up after a few
         * faults at one address with no tombstone made in between (the same bad pointer may fault
         * again legitimately, but only after its tombstone was replaced by newer ones). */
        static __thread uintptr_t last_address;
        static __thread uint32_t last_tombstone_count;
        static __thread unsigned retries;
        uint32_t tombstones = fm5_os_release_guard_tombstones();
        retries = address == last_address && tombstones == last_tombstone_count ? retries + 1 : 0;
        last_address = address;
        last_tombstone_count = tombstones;
        /* A granule fm5 had is marked released before it is unmapped, and unmarked only after it is
         * mapped again: "unmapped and not marked" is only what two looks at different moments can see
         * while other threads move it along, so look again until one look decides. */
        unsigned char resident;
        void *page = (void *)(address & ~(uintptr_t)(FM5_OS_PAGE_SIZE - 1));
        for (int look = 0; look < 64 && retries < 8; look++) {
            if (mincore(page, FM5_OS_PAGE_SIZE, &resident) == 0)
                return;
            if (fm5_address_map_was_released(address)) {
                if (make_tombstone(address))
                    return;
                break;
            }
        }
    }
#endif
    /* Not ours: whoever handled it before (a sanitizer, a debugger's helper, the default action). */
    if (previous_handler.sa_flags & SA_SIGINFO) {
        previous_handler.sa_sigaction(signal, info, context);
        return;
    }
    if (previous_handler.sa_handler != SIG_DFL && previous_handler.sa_handler != SIG_IGN) {
        previous_handler.sa_handler(signal);
        return;
    }
    /* The default action: restore it and return, so that the access faults again and ends the process. */
    sigaction(SIGSEGV, &previous_handler, NULL);
}

void fm5_os_install_release_guard(void)
{
    if (__atomic_exchange_n(&guard_installed, 1, __ATOMIC_ACQ_REL))
        return;
    dl_iterate_phdr(find_own_object, NULL);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = release_guard_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_handler);
}

void fm5_os_remove_release_guard(void)
{
    if (__atomic_exchange_n(&guard_installed, 0, __ATOMIC_ACQ_REL))
        sigaction(SIGSEGV, &previous_handler, NULL);
}

void *fm5_os_reserve_inaccessible(void *address, size_t size)
{
    void *p = mmap(address, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
                   (address ? MAP_FIXED_NOREPLACE : 0), -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (address && p != address) {
        munmap(p, size);
        return NULL;
    }
    return p;
}

/* ---- threads and time -------------------------------------------------------------------------- */

void fm5_os_yield(void)
{
    sched_yield();
}

uint32_t fm5_os_tick_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint32_t)((uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u);
}

/* The kernel's thread id, as Windows' thread ids, unique among live threads; asked once per thread. */
uint32_t fm5_os_thread_id(void)
{
    static __thread uint32_t id;
    if (!id)
        id = (uint32_t)syscall(SYS_gettid);
    return id;
}

fm5_os_thread_facts fm5_os_current_thread_facts(void)
{
    static __thread uintptr_t stack_base;
    if (!stack_base) {
        pthread_attr_t attributes;
        void *low = NULL;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
            pthread_attr_getstack(&attributes, &low, &size);
            pthread_attr_destroy(&attributes);
        }
        stack_base = (uintptr_t)low + size;
        if (!stack_base)
            stack_base = (uintptr_t)&attributes;
    }
    fm5_os_thread_facts facts = { (uintptr_t)pthread_self(), stack_base, fm5_os_thread_id() };
    return facts;
}

/* ---- the thread slot -------------------------------------------------------------------------- */

__thread void *fm5_os_thread_slot_value;
static pthread_key_t thread_slot_key;
static void (*thread_slot_at_exit)(void *);
static volatile int thread_slot_unloading;

static void thread_slot_exit(void *value)
{
    if (value && !thread_slot_unloading)
        thread_slot_at_exit(value);
}

long fm5_os_thread_slot_create(void (*at_exit)(void *value))
{
    thread_slot_at_exit = at_exit;
    return pthread_key_create(&thread_slot_key, thread_slot_exit) == 0 ? 0 : -1;
}

void fm5_os_thread_slot_set(void *value, int call_at_exit)
{
    fm5_os_thread_slot_value = value;
    if (call_at_exit)
        pthread_setspecific(thread_slot_key, value);
}

void fm5_os_thread_slot_destroy(void)
{
    thread_slot_unloading = 1;
}

/* POSIX threads cannot be killed one by one: a thread's cache goes back when it exits. */
uintptr_t fm5_os_thread_handle_open(void)
{
    return 0;
}

int fm5_os_thread_has_ended(uintptr_t handle)
{
    (void)handle;
    return 0;
}

/* No handles here (above): the host build never has a sole claimer (blocks/claims.h). */
int fm5_os_thread_interrupt(uintptr_t handle)
{
    (void)handle;
    return -1;
}

void fm5_os_thread_handle_close(uintptr_t handle)
{
    (void)handle;
}

void fm5_os_debug_break(void)
{
    raise(SIGTRAP);
}

void fm5_os_get_local_time(fm5_os_local_time *time)
{
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    time_t now = real.tv_sec;
    struct tm local;
    if (!localtime_r(&now, &local))
        memset(&local, 0, sizeof local);
    time->year = (unsigned)local.tm_year + 1900u;
    time->month = (unsigned)local.tm_mon + 1u;
    time->day = (unsigned)local.tm_mday;
    time->hour = (unsigned)local.tm_hour;
    time->minute = (unsigned)local.tm_min;
    time->second = (unsigned)local.tm_sec;
}

/* ---- files, text output and the environment ---------------------------------------------------- */

static int write_all(int file, const char *bytes, size_t length)
{
    while (length) {
        ssize_t written = write(file, bytes, length);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return -1;
        bytes += written;
        length -= (size_t)written;
    }
    return 0;
}

int fm5_os_append_to_file(const char *utf8_path, const char *start_of_new_file, const char *const *pieces,
                          const size_t *lengths, unsigned count)
{
    int created = 1;
    int file = open(utf8_path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (file < 0 && errno == EEXIST) {
        created = 0;
        file = open(utf8_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    }
    if (file < 0)
        return -1;
    int result = 0;
    if (created && start_of_new_file && write_all(file, start_of_new_file, strlen(start_of_new_file)))
        result = -1;
    for (unsigned i = 0; i < count; i++)
        if (write_all(file, pieces[i], lengths[i]))
            result = -1;
    close(file);
    return result;
}

int fm5_os_delete_file(const char *utf8_path)
{
    return unlink(utf8_path) == 0;
}

void fm5_os_program_path_stem(char *out, size_t capacity)
{
    if (capacity == 0)
        return;
    ssize_t length = readlink("/proc/self/exe", out, capacity - 1);
    if (length <= 0) {
        fm5_text text;
        fm5_text_init(&text, out, capacity);
        fm5_text_append(&text, "fm5");
        return;
    }
    out[length] = 0;
    char *dot = NULL;
    for (char *c = out; *c; c++) {
        if (*c == '.')
            dot = c;
        if (*c == '/')
            dot = NULL;
    }
    if (dot)
        *dot = 0;
}

size_t fm5_os_environment(const char *name, char *out, size_t capacity)
{
    const char *value = getenv(name);
    if (!value || capacity == 0)
        return 0;
    size_t length = strlen(value);
    if (length == 0 || length >= capacity)
        return 0;
    memcpy(out, value, length + 1);
    return length;
}

/* Windows sends this text to an attached debugger; POSIX has no such channel, and stderr is the
 * program's own, so the text goes nowhere (the event log and callbacks have it). */
void fm5_os_debug_output(const char *text)
{
    (void)text;
}

/* No window system to ask: the box becomes a message on stderr. */
void fm5_os_message_box(const char *text, const char *title)
{
    write_all(2, title, strlen(title));
    write_all(2, ": ", 2);
    write_all(2, text, strlen(text));
    write_all(2, "\n", 1);
}

/* ---- checked builds ---------------------------------------------------------------------------- */

#if FM5_CHECKED
void fm5_os_fail_fast(const char *text, size_t length)
{
    write_all(2, text, length);
    /* Not abort(): the exit code must be the Windows build's, which the tests read. */
    _exit(134);
}
#endif

/* ---- the processor ----------------------------------------------------------------------------- */

uint8_t fm5_cpu_has_sse2;

void fm5_os_detect_processor(void)
{
    /* x86-64 has SSE2 by definition and every x86-64 OS saves the XMM registers; the host build has no
     * asm/ that would read it, but the value stays the same on both builds. */
#if defined(__x86_64__) || defined(__SSE2__)
    fm5_cpu_has_sse2 = 1;
#else
    fm5_cpu_has_sse2 = 0;
#endif
    fm5_detect_fast_strings();
}
