/*
 * system_windows.c — system.h on Windows (the tests of the win32 and win64 variants, under Wine).
 */
#include "arch.h"
#include "system.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tu_thread_state {
    HANDLE handle;
    tu_thread_body body;
    void *argument;
};

static DWORD WINAPI thread_entry(LPVOID parameter)
{
    struct tu_thread_state *state = (struct tu_thread_state *)parameter;
    state->body(state->argument);
    return 0;
}

tu_thread tu_thread_start(tu_thread_body body, void *argument, size_t stack_bytes)
{
    struct tu_thread_state *state = (struct tu_thread_state *)calloc(1, sizeof *state);
    if (!state)
        return NULL;
    state->body = body;
    state->argument = argument;
    state->handle = CreateThread(NULL, stack_bytes, thread_entry, state, 0, NULL);
    if (!state->handle) {
        free(state);
        return NULL;
    }
    return state;
}

int tu_thread_join(tu_thread thread, unsigned timeout_ms)
{
    if (!thread)
        return 0;
    if (WaitForSingleObject(thread->handle, timeout_ms) != WAIT_OBJECT_0)
        return 0;
    CloseHandle(thread->handle);
    free(thread);
    return 1;
}

uint32_t tu_thread_id(void)
{
    return GetCurrentThreadId();
}

uint32_t tu_process_id(void)
{
    return GetCurrentProcessId();
}

void tu_sleep_ms(unsigned milliseconds)
{
    Sleep(milliseconds);
}

void tu_yield(void)
{
    SwitchToThread();
}

unsigned long long tu_ms(void)
{
    return (unsigned long long)GetTickCount64();
}

uint32_t tu_tick32(void)
{
    return GetTickCount();
}

void *tu_os_map(size_t size)
{
    return VirtualAlloc(NULL, size, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
}

void tu_os_unmap(void *base, size_t size)
{
    (void)size;
    VirtualFree(base, 0, MEM_RELEASE);
}

void *tu_os_reserve_inaccessible(void *address, size_t size)
{
    return VirtualAlloc(address, size, MEM_RESERVE, PAGE_NOACCESS);
}

/* Reserved pages must be committed before they can be made accessible: MEM_COMMIT does both, and
 * leaves pages that are committed already as they are but for the protection. */
int tu_os_set_access(void *address, size_t size, int read_write)
{
    if (read_write)
        return VirtualAlloc(address, size, MEM_COMMIT, PAGE_READWRITE) == address;
    DWORD old;
    return VirtualProtect(address, size, PAGE_NOACCESS, &old) != 0;
}

size_t tu_os_free_bytes_at(const void *address, size_t up_to)
{
    MEMORY_BASIC_INFORMATION info;
    if (VirtualQuery(address, &info, sizeof info) != sizeof info || info.State != MEM_FREE)
        return 0;
    size_t bytes = info.RegionSize - (size_t)((const char *)address - (const char *)info.BaseAddress);
    return bytes < up_to ? bytes : up_to;
}

void *tu_foreign_alloc(size_t size)
{
    return HeapAlloc(GetProcessHeap(), 0, size);
}

void tu_foreign_free(void *p)
{
    HeapFree(GetProcessHeap(), 0, p);
}

size_t tu_getenv(const char *name, char *out, size_t capacity)
{
    DWORD length = GetEnvironmentVariableA(name, out, (DWORD)capacity);
    if (length == 0 || length >= capacity) {
        if (capacity)
            out[0] = 0;
        return 0;
    }
    return length;
}

void tu_setenv(const char *name, const char *value)
{
    SetEnvironmentVariableA(name, value);
}

void tu_temp_folder(char *out, size_t capacity)
{
    DWORD length = GetTempPathA((DWORD)capacity, out);
    if (length == 0 || length >= capacity)
        snprintf(out, capacity, ".\\");
}

char tu_path_separator(void)
{
    return '\\';
}

int tu_delete_file(const char *path)
{
    return DeleteFileA(path) != 0;
}

void tu_program_path(char *out, size_t capacity)
{
    DWORD length = GetModuleFileNameA(NULL, out, (DWORD)capacity);
    if (length == 0 || length >= capacity)
        out[0] = 0;
}

uintptr_t tu_program_base(void)
{
    return (uintptr_t)GetModuleHandleW(NULL);
}

int tu_run_self(const char *const *arguments, const char *stderr_path, unsigned timeout_ms)
{
    char program[MAX_PATH];
    tu_program_path(program, sizeof program);
    char command[4096];
    size_t used = (size_t)snprintf(command, sizeof command, "\"%s\"", program);
    for (unsigned i = 0; arguments && arguments[i] && used < sizeof command; i++)
        used += (size_t)snprintf(command + used, sizeof command - used, " \"%s\"", arguments[i]);
    if (used >= sizeof command)
        return -1;
    STARTUPINFOA startup;
    PROCESS_INFORMATION process;
    memset(&startup, 0, sizeof startup);
    startup.cb = sizeof startup;
    HANDLE error = INVALID_HANDLE_VALUE;
    if (stderr_path) {
        SECURITY_ATTRIBUTES inherit = { sizeof inherit, NULL, TRUE };
        error = CreateFileA(stderr_path, GENERIC_WRITE, FILE_SHARE_READ, &inherit, CREATE_ALWAYS,
                            FILE_ATTRIBUTE_NORMAL, NULL);
        if (error == INVALID_HANDLE_VALUE)
            return -1;
        startup.dwFlags = STARTF_USESTDHANDLES;
        startup.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
        startup.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
        startup.hStdError = error;
    }
    BOOL started = CreateProcessA(program, command, NULL, NULL, TRUE, 0, NULL, NULL, &startup, &process);
    if (error != INVALID_HANDLE_VALUE)
        CloseHandle(error);
    if (!started)
        return -1;
    CloseHandle(process.hThread);
    int result = -1;
    if (WaitForSingleObject(process.hProcess, timeout_ms) == WAIT_OBJECT_0) {
        DWORD code = 0;
        if (GetExitCodeProcess(process.hProcess, &code))
            result = (int)code;
    } else {
        TerminateProcess(process.hProcess, 1);
    }
    CloseHandle(process.hProcess);
    return result;
}

void tu_exit_now(int code)
{
    fflush(stdout);
    TerminateProcess(GetCurrentProcess(), (UINT)code);
    for (;;)
        ;
}

void tu_no_crash_dialogs(void)
{
    SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX | SEM_NOOPENFILEERRORBOX);
}
