/* base/os.h on Windows: the one door to the Windows API for memory, time, threads, files, the
 * environment and the processor. */
#include "base/os.h"
#include "base/address_map.h"
#include <windows.h>

/* ---- memory ------------------------------------------------------------------------------------ */

void *fm5_os_map(size_t size, int top_down)
{
    if (fm5_os_fault_due(FM5_OS_FAULT_MAP))
        return NULL;
    return VirtualAlloc(NULL, size, MEM_RESERVE | MEM_COMMIT | (top_down ? MEM_TOP_DOWN : 0), PAGE_READWRITE);
}

int fm5_os_map_at(void *address, size_t size)
{
    if (fm5_os_fault_due(FM5_OS_FAULT_MAP_AT))
        return 0;
    void *p = VirtualAlloc(address, size, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (p == address)
        return 1;
    if (p)
        VirtualFree(p, 0, MEM_RELEASE);
    return 0;
}

/* MEM_RELEASE takes back one VirtualAlloc at a time, so a range of several is released allocation by
 * allocation; VirtualQuery never reports a region that crosses the boundary between two of them. */
int fm5_os_unmap(void *base, size_t size, unsigned mappings)
{
    if (fm5_os_fault_due(FM5_OS_FAULT_UNMAP))
        return 0;
    if (mappings == 1)
        return VirtualFree(base, 0, MEM_RELEASE) != 0;
    char *address = (char *)base;
    char *end = address + size;
    while (address < end) {
        size_t allocation = 0;
        for (char *region = address; region < end;) {
            MEMORY_BASIC_INFORMATION part;
            if (VirtualQuery(region, &part, sizeof part) != sizeof part || part.State == MEM_FREE ||
                part.AllocationBase != address)
                break;
            allocation += part.RegionSize;
            region += part.RegionSize;
        }
        if (allocation == 0 || !VirtualFree(address, 0, MEM_RELEASE))
            return 0;
        address += allocation;
    }
    return 1;
}

/* ---- the release guard (os.h) ------------------------------------------------------------------ */

/* fm5's own code: the DLL's image (in a static build, the program's). */
static uintptr_t own_start, own_end;
static void *guard_handle;

/* Whether a read (or, with `write`, a write) of `address` would succeed now. */
static int accessible_now(uintptr_t address, int write)
{
    MEMORY_BASIC_INFORMATION info;
    DWORD allowed = write ? PAGE_READWRITE | PAGE_EXECUTE_READWRITE
                          : PAGE_READONLY | PAGE_READWRITE | PAGE_EXECUTE_READ | PAGE_EXECUTE_READWRITE;
    return VirtualQuery((void *)address, &info, sizeof info) == sizeof info && info.State == MEM_COMMIT &&
           !(info.Protect & PAGE_GUARD) && (info.Protect & allowed);
}

/* 1 when the access can be retried: a zero granule is there now, or the page can be accessed again
 * (another allocation took the granule meanwhile). */
static int make_tombstone(uintptr_t address, int write)
{
    void *granule = (void *)(address & ~(uintptr_t)(FM5_OS_GRANULARITY - 1));
    /* Other threads allocate and release around it meanwhile: a refusal (the granule taken a moment)
     * is tried again while the page stays inaccessible. */
    for (int attempt = 0; attempt < 64; attempt++) {
        if (VirtualAlloc(granule, FM5_OS_GRANULARITY, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE) == granule) {
            void *replaced = fm5_os_record_tombstone(granule);
            if (replaced)
                VirtualFree(replaced, 0, MEM_RELEASE);
            return 1;
        }
        if (accessible_now(address, write))
            return 1;
        SwitchToThread();
    }
    return 0;
}

static LONG CALLBACK release_guard_handler(EXCEPTION_POINTERS *exception)
{
    const EXCEPTION_RECORD *record = exception->ExceptionRecord;
    /* ExceptionInformation: [0] 0 for a read, 1 for a write (8: execution, never ours), [1] the
     * address. */
    if (record->ExceptionCode != EXCEPTION_ACCESS_VIOLATION || record->NumberParameters < 2 ||
        record->ExceptionInformation[0] > 1)
        return EXCEPTION_CONTINUE_SEARCH;
    int write = record->ExceptionInformation[0] == 1;
    uintptr_t ip = (uintptr_t)record->ExceptionAddress;
    uintptr_t address = (uintptr_t)record->ExceptionInformation[1];
    if (ip < own_start || ip >= own_end)
        return EXCEPTION_CONTINUE_SEARCH;
    /* Mapped again by the time we look (fm5 or another allocation took the granule): retry. A granule
     * fm5 had is marked released before it is unmapped and unmarked only after it is mapped again, so
     * "unmapped and not marked" is only what two looks at different moments can see while other
     * threads move it along: look again until one look decides. */
    for (int look = 0; look < 64; look++) {
        if (accessible_now(address, write))
            return EXCEPTION_CONTINUE_EXECUTION;
        if (fm5_address_map_was_released(address))
            return make_tombstone(address, write) ? EXCEPTION_CONTINUE_EXECUTION : EXCEPTION_CONTINUE_SEARCH;
    }
    return EXCEPTION_CONTINUE_SEARCH;
}

void fm5_os_install_release_guard(void)
{
    if (guard_handle)
        return;
    HMODULE module = NULL;
    if (GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           (LPCWSTR)(void *)release_guard_handler, &module) && module) {
        const IMAGE_DOS_HEADER *dos = (const IMAGE_DOS_HEADER *)module;
        const IMAGE_NT_HEADERS *nt = (const IMAGE_NT_HEADERS *)((const char *)module + dos->e_lfanew);
        own_start = (uintptr_t)module;
        own_end = own_start + nt->OptionalHeader.SizeOfImage;
    }
    /* First in the chain: the fault must be turned into a failed check before any other handler
     * (a debugger's first chance aside) decides the process is broken. */
    guard_handle = AddVectoredExceptionHandler(1, release_guard_handler);
}

/* At DLL unload: the handler's code is about to go away. */
void fm5_os_remove_release_guard(void)
{
    if (guard_handle)
        RemoveVectoredExceptionHandler(guard_handle);
    guard_handle = NULL;
}

void *fm5_os_reserve_inaccessible(void *address, size_t size)
{
    return VirtualAlloc(address, size, MEM_RESERVE, PAGE_NOACCESS);
}

/* ---- threads and time -------------------------------------------------------------------------- */

void fm5_os_yield(void)
{
    SwitchToThread();
}

uint32_t fm5_os_tick_ms(void)
{
    return GetTickCount();
}

uint32_t fm5_os_thread_id(void)
{
    return GetCurrentThreadId();
}

/* Read through the segment register, as asm/ reads them (GCC 12 warns about NtCurrentTeb's own
 * __readgsqword of a constant address). */
fm5_os_thread_facts fm5_os_current_thread_facts(void)
{
    fm5_os_thread_facts facts;
#ifdef FM5_64BIT
    __asm__("movq %%gs:%c1, %0" : "=r"(facts.self) : "i"(FM5_TEB_SELF_OFFSET));
    __asm__("movq %%gs:%c1, %0" : "=r"(facts.stack_base) : "i"(FM5_TEB_STACK_BASE_OFFSET));
    __asm__("movl %%gs:%c1, %0" : "=r"(facts.id) : "i"(FM5_TEB_THREAD_ID_OFFSET));
#else
    __asm__("movl %%fs:%c1, %0" : "=r"(facts.self) : "i"(FM5_TEB_SELF_OFFSET));
    __asm__("movl %%fs:%c1, %0" : "=r"(facts.stack_base) : "i"(FM5_TEB_STACK_BASE_OFFSET));
    __asm__("movl %%fs:%c1, %0" : "=r"(facts.id) : "i"(FM5_TEB_THREAD_ID_OFFSET));
#endif
    return facts;
}

/* ---- the thread slot -------------------------------------------------------------------------- */

uintptr_t fm5_os_thread_slot_offset;
static DWORD tls_index = TLS_OUT_OF_INDEXES;
static DWORD fls_index = FLS_OUT_OF_INDEXES;
static void (*thread_slot_at_exit)(void *);
static volatile LONG thread_slot_unloading;

static void WINAPI thread_slot_exit(void *value)
{
    if (value && !thread_slot_unloading)
        thread_slot_at_exit(value);
}

long fm5_os_thread_slot_create(void (*at_exit)(void *value))
{
    tls_index = TlsAlloc();
    if (tls_index == TLS_OUT_OF_INDEXES)
        return -1;
    if (tls_index >= FM5_TEB_TLS_SLOT_COUNT) {
        TlsFree(tls_index);
        tls_index = TLS_OUT_OF_INDEXES;
        return -1;
    }
    thread_slot_at_exit = at_exit;
    fls_index = FlsAlloc(thread_slot_exit);
    if (fls_index == FLS_OUT_OF_INDEXES) {
        TlsFree(tls_index);
        tls_index = TLS_OUT_OF_INDEXES;
        return -1;
    }
    fm5_os_thread_slot_offset = FM5_TEB_TLS_SLOTS_OFFSET + tls_index * FM5_POINTER_SIZE;
    return (long)fm5_os_thread_slot_offset;
}

void fm5_os_thread_slot_set(void *value, int call_at_exit)
{
    TlsSetValue(tls_index, value);
    if (call_at_exit)
        FlsSetValue(fls_index, value);
}

void fm5_os_thread_slot_destroy(void)
{
    thread_slot_unloading = 1;
    if (fls_index != FLS_OUT_OF_INDEXES)
        FlsFree(fls_index);
    fls_index = FLS_OUT_OF_INDEXES;
}

uintptr_t fm5_os_thread_handle_open(void)
{
    HANDLE handle;
    /* SYNCHRONIZE for fm5_os_thread_has_ended, the others for fm5_os_thread_interrupt. */
    if (!DuplicateHandle(GetCurrentProcess(), GetCurrentThread(), GetCurrentProcess(), &handle,
                         SYNCHRONIZE | THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT, FALSE, 0))
        return 0;
    return (uintptr_t)handle;
}

int fm5_os_thread_interrupt(uintptr_t handle)
{
    if (!handle || fm5_os_thread_has_ended(handle))
        return 0;
    if (SuspendThread((HANDLE)handle) == (DWORD)-1) {
        if (fm5_os_thread_has_ended(handle))
            return 0;
        /* The documented fence of every processor that runs a thread of the process. */
        FlushProcessWriteBuffers();
        return 1;
    }
    /* SuspendThread only asks; GetThreadContext returns once the thread has stopped. */
    CONTEXT context;
    context.ContextFlags = CONTEXT_CONTROL;
    BOOL stopped = GetThreadContext((HANDLE)handle, &context);
    ResumeThread((HANDLE)handle);
    if (!stopped)
        FlushProcessWriteBuffers();
    return 1;
}

int fm5_os_thread_has_ended(uintptr_t handle)
{
    return handle && WaitForSingleObject((HANDLE)handle, 0) == WAIT_OBJECT_0;
}

void fm5_os_thread_handle_close(uintptr_t handle)
{
    if (handle)
        CloseHandle((HANDLE)handle);
}

void fm5_os_debug_break(void)
{
    DebugBreak();
}

void fm5_os_get_local_time(fm5_os_local_time *time)
{
    SYSTEMTIME now;
    GetLocalTime(&now);
    time->year = now.wYear;
    time->month = now.wMonth;
    time->day = now.wDay;
    time->hour = now.wHour;
    time->minute = now.wMinute;
    time->second = now.wSecond;
}

/* ---- files, text output and the environment ---------------------------------------------------- */

#define WIDE_PATH_CHARACTERS 1024

static int widen(const char *utf8, WCHAR *wide, int capacity)
{
    return MultiByteToWideChar(CP_UTF8, 0, utf8, -1, wide, capacity) != 0;
}

int fm5_os_append_to_file(const char *utf8_path, const char *start_of_new_file, const char *const *pieces,
                          const size_t *lengths, unsigned count)
{
    WCHAR path[WIDE_PATH_CHARACTERS];
    if (!widen(utf8_path, path, WIDE_PATH_CHARACTERS))
        return -1;
    HANDLE file = CreateFileW(path, FILE_APPEND_DATA, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_ALWAYS,
                              FILE_ATTRIBUTE_NORMAL, NULL);
    if (file == INVALID_HANDLE_VALUE)
        return -1;
    int result = 0;
    if (start_of_new_file && GetLastError() != ERROR_ALREADY_EXISTS) {
        DWORD length = (DWORD)lstrlenA(start_of_new_file), written = 0;
        if (!WriteFile(file, start_of_new_file, length, &written, NULL) || written != length)
            result = -1;
    }
    for (unsigned i = 0; i < count; i++) {
        DWORD written = 0;
        if (!WriteFile(file, pieces[i], (DWORD)lengths[i], &written, NULL) || written != lengths[i])
            result = -1;
    }
    CloseHandle(file);
    return result;
}

int fm5_os_delete_file(const char *utf8_path)
{
    WCHAR path[WIDE_PATH_CHARACTERS];
    return widen(utf8_path, path, WIDE_PATH_CHARACTERS) && DeleteFileW(path);
}

void fm5_os_program_path_stem(char *out, size_t capacity)
{
    WCHAR module[MAX_PATH];
    DWORD length = GetModuleFileNameW(NULL, module, MAX_PATH);
    if (length == 0 || length >= MAX_PATH) {
        lstrcpyW(module, L"fm5");
        length = 3;
    }
    WCHAR *dot = NULL;
    for (WCHAR *c = module; *c; c++) {
        if (*c == L'.')
            dot = c;
        if (*c == L'\\' || *c == L'/')
            dot = NULL;
    }
    if (dot)
        *dot = 0;
    if (!WideCharToMultiByte(CP_UTF8, 0, module, -1, out, (int)capacity, NULL, NULL))
        out[0] = 0;
}

size_t fm5_os_environment(const char *name, char *out, size_t capacity)
{
    WCHAR wide_name[64];
    WCHAR value[WIDE_PATH_CHARACTERS];
    if (!widen(name, wide_name, 64))
        return 0;
    DWORD length = GetEnvironmentVariableW(wide_name, value, WIDE_PATH_CHARACTERS);
    if (length == 0 || length >= WIDE_PATH_CHARACTERS)
        return 0;
    int bytes = WideCharToMultiByte(CP_UTF8, 0, value, -1, out, (int)capacity, NULL, NULL);
    if (bytes <= 0) {
        if (capacity)
            out[0] = 0;
        return 0;
    }
    return (size_t)bytes - 1;
}

void fm5_os_debug_output(const char *text)
{
    OutputDebugStringA(text);
}

typedef int(WINAPI *message_box_fn)(HWND, LPCWSTR, LPCWSTR, UINT);

/* Through LoadLibrary: the DLL imports only kernel32, and most programs never show a box. */
void fm5_os_message_box(const char *text, const char *title)
{
    static WCHAR wide_text[16384];
    static WCHAR wide_title[128];
    static fm5_lock box_lock;
    HMODULE user32 = LoadLibraryW(L"user32.dll");
    message_box_fn message_box = user32 ? (message_box_fn)(void (*)(void))GetProcAddress(user32, "MessageBoxW") : NULL;
    if (!message_box)
        return;
    fm5_lock_with_timeout(&box_lock, FM5_WAIT_FOREVER);
    if (!widen(text, wide_text, 16384))
        lstrcpyW(wide_text, L"fm5: the event text could not be converted");
    wide_text[16383] = 0;
    if (!widen(title, wide_title, 128))
        lstrcpyW(wide_title, L"fm5");
    message_box(NULL, wide_text, wide_title, MB_OK | MB_ICONERROR | MB_TASKMODAL | MB_DEFAULT_DESKTOP_ONLY);
    fm5_unlock(&box_lock);
}

/* ---- checked builds ---------------------------------------------------------------------------- */

#if FM5_CHECKED
void fm5_os_fail_fast(const char *text, size_t length)
{
    DWORD written;
    WriteFile(GetStdHandle(STD_ERROR_HANDLE), text, (DWORD)length, &written, NULL);
    OutputDebugStringA(text);
    /* Not abort(): it may allocate, and the C runtime's heap may be fm5. */
    TerminateProcess(GetCurrentProcess(), 134);
    for (;;)
        ;
}
#endif

/* ---- the processor ----------------------------------------------------------------------------- */

uint8_t fm5_cpu_has_sse2;

void fm5_os_detect_processor(void)
{
    /* The operating system's answer includes whether it saves the XMM registers on a thread switch,
     * which CPUID alone does not tell. */
    fm5_cpu_has_sse2 = IsProcessorFeaturePresent(PF_XMMI64_INSTRUCTIONS_AVAILABLE) ? 1 : 0;
    fm5_detect_fast_strings();
}
