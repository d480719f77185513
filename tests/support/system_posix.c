/*
 * system_posix.c — system.h on Linux (the tests of the host-* variants, under the sanitizers).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "system.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct tu_thread_state {
    pthread_t handle;
    tu_thread_body body;
    void *argument;
};

static void *thread_entry(void *parameter)
{
    struct tu_thread_state *state = (struct tu_thread_state *)parameter;
    state->body(state->argument);
    return NULL;
}

tu_thread tu_thread_start(tu_thread_body body, void *argument, size_t stack_bytes)
{
    struct tu_thread_state *state = (struct tu_thread_state *)calloc(1, sizeof *state);
    if (!state)
        return NULL;
    state->body = body;
    state->argument = argument;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    /* The sanitizers need more stack than the Windows tests ask for: never less than 1 MB. */
    if (stack_bytes < (1u << 20))
        stack_bytes = 1u << 20;
    pthread_attr_setstacksize(&attributes, stack_bytes);
    int failed = pthread_create(&state->handle, &attributes, thread_entry, state);
    pthread_attr_destroy(&attributes);
    if (failed) {
        free(state);
        return NULL;
    }
    return state;
}

int tu_thread_join(tu_thread thread, unsigned timeout_ms)
{
    if (!thread)
        return 0;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(thread->handle, NULL, &deadline) != 0)
        return 0;
    free(thread);
    return 1;
}

uint32_t tu_thread_id(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

uint32_t tu_process_id(void)
{
    return (uint32_t)getpid();
}

void tu_sleep_ms(unsigned milliseconds)
{
    struct timespec pause = { (time_t)(milliseconds / 1000), (long)(milliseconds % 1000) * 1000000L };
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR)
        ;
}

void tu_yield(void)
{
    sched_yield();
}

unsigned long long tu_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (unsigned long long)now.tv_sec * 1000u + (unsigned long long)now.tv_nsec / 1000000u;
}

uint32_t tu_tick32(void)
{
    return (uint32_t)tu_ms();
}

#define GRANULE 65536u

void *tu_os_map(size_t size)
{
    size_t padded = size + GRANULE;
    char *raw = mmap(NULL, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *aligned = (char *)(((uintptr_t)raw + GRANULE - 1) & ~(uintptr_t)(GRANULE - 1));
    if (aligned > raw)
        munmap(raw, (size_t)(aligned - raw));
    size_t tail = (size_t)(raw + padded - (aligned + size));
    if (tail)
        munmap(aligned + size, tail);
    return aligned;
}

void tu_os_unmap(void *base, size_t size)
{
    munmap(base, size);
}

void *tu_os_reserve_inaccessible(void *address, size_t size)
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

int tu_os_set_access(void *address, size_t size, int read_write)
{
    return mprotect(address, size, read_write ? PROT_READ | PROT_WRITE : PROT_NONE) == 0;
}

/* mincore fails with ENOMEM on a page that nothing maps: count such pages. */
size_t tu_os_free_bytes_at(const void *address, size_t up_to)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)address & ~(uintptr_t)(page - 1);
    size_t bytes = 0;
    while (bytes < up_to) {
        unsigned char resident;
        if (mincore((void *)(start + bytes), page, &resident) == 0 || errno != ENOMEM)
            break;
        bytes += page;
    }
    return bytes;
}

void *tu_foreign_alloc(size_t size)
{
    return malloc(size);
}

void tu_foreign_free(void *p)
{
    free(p);
}

size_t tu_getenv(const char *name, char *out, size_t capacity)
{
    const char *value = getenv(name);
    size_t length = value ? strlen(value) : 0;
    if (length == 0 || length >= capacity) {
        if (capacity)
            out[0] = 0;
        return 0;
    }
    memcpy(out, value, length + 1);
    return length;
}

void tu_setenv(const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

void tu_temp_folder(char *out, size_t capacity)
{
    const char *folder = getenv("TMPDIR");
    if (!folder || !folder[0])
        folder = "/tmp";
    size_t length = strlen(folder);
    snprintf(out, capacity, "%s%s", folder, length && folder[length - 1] == '/' ? "" : "/");
}

char tu_path_separator(void)
{
    return '/';
}

int tu_delete_file(const char *path)
{
    return unlink(path) == 0;
}

void tu_program_path(char *out, size_t capacity)
{
    ssize_t length = readlink("/proc/self/exe", out, capacity - 1);
    out[length > 0 ? length : 0] = 0;
}

uintptr_t tu_program_base(void)
{
    Dl_info info;
    return dladdr((void *)tu_program_base, &info) ? (uintptr_t)info.dli_fbase : 0;
}

int tu_run_self(const char *const *arguments, const char *stderr_path, unsigned timeout_ms)
{
    char program[4096];
    tu_program_path(program, sizeof program);
    char *argv[64];
    unsigned count = 0;
    argv[count++] = program;
    for (unsigned i = 0; arguments && arguments[i] && count < 63; i++)
        argv[count++] = (char *)arguments[i];
    argv[count] = NULL;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (stderr_path)
        posix_spawn_file_actions_addopen(&actions, 2, stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t child;
    int failed = posix_spawn(&child, program, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (failed)
        return -1;
    unsigned long long deadline = tu_ms() + timeout_ms;
    for (;;) {
        int status = 0;
        pid_t done = waitpid(child, &status, WNOHANG);
        if (done == child) {
            if (WIFEXITED(status))
                return WEXITSTATUS(status);
            return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
        }
        if (done < 0 && errno != EINTR)
            return -1;
        if (tu_ms() >= deadline) {
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            return -1;
        }
        tu_sleep_ms(5);
    }
}

void tu_exit_now(int code)
{
    fflush(stdout);
    _exit(code);
}

/* Nothing waits for a dialog here: a crash ends the process, and the sanitizers print why. */
void tu_no_crash_dialogs(void)
{
}
