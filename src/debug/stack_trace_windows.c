/* Stack traces: on Win64 fm5's cached unwinder (stack_unwind.c), else RtlCaptureStackBackTrace, to capture, the loader's module list to name modules, and
 * DbgHelp (a Windows system DLL, loaded on first use) for symbol names. */
#include "debug/stack_trace.h"
#include "debug/stack_unwind.h"
#include "base/os.h"
#include <windows.h>

/* The address range of the module fm5 is linked into. Leading frames inside it are fm5's own calls:
 * dropping them by address keeps traces right however the compiler inlined fm5's functions. A static
 * build is part of the program's own module, so there only `skip` applies. */
static uintptr_t own_module_start, own_module_end;

static void find_own_module(void)
{
#ifndef FM5_STATIC
    HMODULE module = NULL;
    if (GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           (LPCWSTR)(void *)find_own_module, &module) && module) {
        const IMAGE_DOS_HEADER *dos = (const IMAGE_DOS_HEADER *)module;
        const IMAGE_NT_HEADERS *nt = (const IMAGE_NT_HEADERS *)((const char *)module + dos->e_lfanew);
        own_module_end = (uintptr_t)module + nt->OptionalHeader.SizeOfImage;
    }
    own_module_start = (uintptr_t)module;
#endif
}

unsigned fm5_capture_stack_trace(void **frames, unsigned count, unsigned skip)
{
    if (count > FM5_MAXIMUM_STACK_TRACE_DEPTH)
        count = FM5_MAXIMUM_STACK_TRACE_DEPTH;
    unsigned captured = 0;
    if (count) {
        if (!own_module_end)
            find_own_module();
        void *raw[FM5_MAXIMUM_STACK_TRACE_DEPTH + 32];
#ifdef FM5_64BIT
        /* The same frames as the system's, from cached unwind steps (stack_unwind.h), fm5's own left out
         * by the unwinder itself, so it is asked for exactly `count` (in a static build, where they cannot
         * be told apart, our caller's frame is skipped). The system's trace below needs the spare 32 for
         * the own frames that are dropped after it. */
        int unwound = own_module_end ? fm5_unwind_stack(raw, count, skip, own_module_start, own_module_end)
                                     : fm5_unwind_stack(raw, count, skip + 1, 0, 0);
        unsigned available = unwound >= 0 ? (unsigned)unwound : RtlCaptureStackBackTrace(skip + 1, count + 32, raw, NULL);
#else
        unsigned available = RtlCaptureStackBackTrace(skip + 1, count + 32, raw, NULL);
#endif
        unsigned first = 0;
        while (first < available && (uintptr_t)raw[first] >= own_module_start &&
               (uintptr_t)raw[first] < own_module_end)
            first++;
        for (; first < available && captured < count; first++)
            frames[captured++] = raw[first];
    }
    for (unsigned i = captured; i < count; i++)
        frames[i] = NULL;
    return captured;
}

/* DbgHelp's symbol lookup, reached through GetProcAddress so that fm5 links only kernel32. DbgHelp is
 * single-threaded: every call is made under symbol_lock. */
typedef struct fm5_symbol_info {
    ULONG SizeOfStruct;
    ULONG TypeIndex;
    ULONG64 Reserved[2];
    ULONG Index;
    ULONG Size;
    ULONG64 ModBase;
    ULONG Flags;
    ULONG64 Value;
    ULONG64 Address;
    ULONG Register;
    ULONG Scope;
    ULONG Tag;
    ULONG NameLen;
    ULONG MaxNameLen;
    CHAR Name[1];
} fm5_symbol_info;

typedef BOOL(WINAPI *sym_initialize_fn)(HANDLE, PCSTR, BOOL);
typedef BOOL(WINAPI *sym_from_addr_fn)(HANDLE, DWORD64, PDWORD64, fm5_symbol_info *);
typedef DWORD(WINAPI *sym_set_options_fn)(DWORD);

static fm5_lock symbol_lock;
static int symbols_state;  /* 0 not tried, 1 ready, -1 unavailable */
static sym_from_addr_fn sym_from_addr;

static int symbols_ready(int may_load)
{
    if (symbols_state)
        return symbols_state > 0;
    HMODULE dbghelp = GetModuleHandleW(L"dbghelp.dll");
    if (!dbghelp && may_load)
        dbghelp = LoadLibraryW(L"dbghelp.dll");
    if (!dbghelp) {
        if (may_load)
            symbols_state = -1;
        return 0;
    }
    sym_initialize_fn sym_initialize = (sym_initialize_fn)(void (*)(void))GetProcAddress(dbghelp, "SymInitialize");
    sym_set_options_fn sym_set_options =
        (sym_set_options_fn)(void (*)(void))GetProcAddress(dbghelp, "SymSetOptions");
    sym_from_addr = (sym_from_addr_fn)(void (*)(void))GetProcAddress(dbghelp, "SymFromAddr");
    if (!sym_initialize || !sym_from_addr) {
        symbols_state = -1;
        return 0;
    }
    if (sym_set_options)
        sym_set_options(0x00000002 /* SYMOPT_UNDNAME */ | 0x00000004 /* SYMOPT_DEFERRED_LOADS */);
    symbols_state = sym_initialize(GetCurrentProcess(), NULL, TRUE) ? 1 : -1;
    return symbols_state > 0;
}

static void append_symbol(fm5_text *text, void *address, int may_load)
{
    union {
        fm5_symbol_info info;
        char bytes[sizeof(fm5_symbol_info) + 256];
    } symbol;
    fm5_lock_with_timeout(&symbol_lock, INFINITE);
    if (symbols_ready(may_load)) {
        symbol.info.SizeOfStruct = sizeof(fm5_symbol_info);
        symbol.info.MaxNameLen = 255;
        DWORD64 displacement = 0;
        if (sym_from_addr(GetCurrentProcess(), (DWORD64)(uintptr_t)address, &displacement, &symbol.info)) {
            symbol.info.Name[symbol.info.NameLen < 255 ? symbol.info.NameLen : 255] = 0;
            fm5_text_append(text, "  [");
            fm5_text_append(text, symbol.info.Name);
            fm5_text_append(text, "+0x");
            fm5_text_append_hex(text, displacement, displacement > 0xFFFF ? 8 : 4);
            fm5_text_append(text, "]");
        }
    }
    fm5_unlock(&symbol_lock);
}

void fm5_append_stack_trace(fm5_text *text, void *const *frames, unsigned count, int may_load_dbghelp)
{
    for (unsigned i = 0; i < count && frames[i]; i++) {
        fm5_text_append(text, "    ");
        fm5_text_append_pointer(text, frames[i]);
        HMODULE module = NULL;
        if (GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                               (LPCWSTR)frames[i], &module) && module) {
            WCHAR path[MAX_PATH];
            DWORD length = GetModuleFileNameW(module, path, MAX_PATH);
            const WCHAR *name = path;
            for (DWORD c = 0; c < length; c++)
                if (path[c] == L'\\' || path[c] == L'/')
                    name = path + c + 1;
            char utf8[MAX_PATH * 3];
            if (length && WideCharToMultiByte(CP_UTF8, 0, name, -1, utf8, sizeof utf8, NULL, NULL)) {
                fm5_text_append(text, "  ");
                fm5_text_append(text, utf8);
                fm5_text_append(text, "+0x");
                fm5_text_append_hex(text, (uintptr_t)frames[i] - (uintptr_t)module, 8);
            }
        }
        append_symbol(text, frames[i], may_load_dbghelp);
        fm5_text_append(text, "\r\n");
    }
}
