/* Event delivery. Nothing here allocates: messages are built on the stack and files are written with
 * the Win32 API directly. */
#include "events.h"
#include "text_builder.h"

#define MAXIMUM_PATH_BYTES 1024
#define MESSAGE_BYTES 4096

static FastMM_EventCallback event_callback;
static void *event_callback_user;
static volatile unsigned log_to_file_events = ~0u;
static volatile unsigned output_debug_string_events = ~0u;

static volatile unsigned message_box_events;

static fm5_lock log_lock;
static char log_path[MAXIMUM_PATH_BYTES];   /* UTF-8; empty until first needed */

static const char *kind_name(int kind)
{
    switch (kind) {
    case FastMM_EventInvalidFree: return "Invalid free";
    case FastMM_EventInvalidRealloc: return "Invalid reallocation";
    case FastMM_EventDoubleFree: return "Double free";
    case FastMM_EventReallocOfFreedBlock: return "Reallocation of a freed block";
    case FastMM_EventInvalidQuery: return "Invalid block query";
    case FastMM_EventOutOfMemory: return "Out of memory";
    case FastMM_EventMemoryLimitExceeded: return "Memory usage limit exceeded";
    case FastMM_EventInvalidArgument: return "Invalid argument";
    case FastMM_EventDebugBlockHeaderCorrupted: return "Debug block header corrupted";
    case FastMM_EventDebugBlockFooterCorrupted: return "Debug block footer corrupted";
    case FastMM_EventFreedBlockModified: return "Freed block modified";
    case FastMM_EventVirtualCallOnFreedObject: return "Virtual method called on a freed object";
    case FastMM_EventMemoryLeak: return "Memory leak";
    case FastMM_EventDebugModeReport: return "Debug mode report";
    default: return "Event";
    }
}

/* "<exe path without extension>_MemoryManager_EventLog.txt", or that file name in %FastMMLogFilePath%. */
static void build_default_log_path(char *out, size_t capacity)
{
    WCHAR module[MAX_PATH];
    DWORD length = GetModuleFileNameW(NULL, module, MAX_PATH);
    if (length == 0 || length >= MAX_PATH) {
        lstrcpyW(module, L"fm5");
        length = 3;
    }
    WCHAR *dot = NULL, *name = module;
    for (WCHAR *c = module; *c; c++) {
        if (*c == L'.')
            dot = c;
        if (*c == L'\\' || *c == L'/') {
            name = c + 1;
            dot = NULL;
        }
    }
    if (dot)
        *dot = 0;
    WCHAR path[MAX_PATH + 64];
    WCHAR folder[MAX_PATH];
    DWORD folder_length = GetEnvironmentVariableW(L"FastMMLogFilePath", folder, MAX_PATH);
    if (folder_length > 0 && folder_length < MAX_PATH - 1) {
        lstrcpyW(path, folder);
        if (folder[folder_length - 1] != L'\\' && folder[folder_length - 1] != L'/')
            lstrcatW(path, L"\\");
        lstrcatW(path, name);
    } else {
        lstrcpyW(path, module);
    }
    lstrcatW(path, L"_MemoryManager_EventLog.txt");
    if (!WideCharToMultiByte(CP_UTF8, 0, path, -1, out, (int)capacity, NULL, NULL))
        out[0] = 0;
}

static void ensure_log_path(void)
{
    if (!log_path[0])
        build_default_log_path(log_path, sizeof log_path);
}

static HANDLE open_log(DWORD disposition)
{
    WCHAR wide[MAXIMUM_PATH_BYTES];
    if (!MultiByteToWideChar(CP_UTF8, 0, log_path, -1, wide, MAXIMUM_PATH_BYTES))
        return INVALID_HANDLE_VALUE;
    return CreateFileW(wide, FILE_APPEND_DATA, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, disposition,
                       FILE_ATTRIBUTE_NORMAL, NULL);
}

static void write_log(const char *text)
{
    fm5_lock_with_timeout(&log_lock, INFINITE);
    ensure_log_path();
    HANDLE file = open_log(OPEN_ALWAYS);
    if (file != INVALID_HANDLE_VALUE) {
        DWORD written;
        if (GetLastError() != ERROR_ALREADY_EXISTS)
            WriteFile(file, "\xEF\xBB\xBF", 3, &written, NULL);
        SYSTEMTIME now;
        GetLocalTime(&now);
        char stamp_buffer[96];
        fm5_text stamp;
        fm5_text_init(&stamp, stamp_buffer, sizeof stamp_buffer);
        fm5_text_append(&stamp, "--------------------------------");
        fm5_text_append_padded(&stamp, now.wYear, 4);
        fm5_text_append_char(&stamp, '/');
        fm5_text_append_padded(&stamp, now.wMonth, 2);
        fm5_text_append_char(&stamp, '/');
        fm5_text_append_padded(&stamp, now.wDay, 2);
        fm5_text_append_char(&stamp, ' ');
        fm5_text_append_padded(&stamp, now.wHour, 2);
        fm5_text_append_char(&stamp, ':');
        fm5_text_append_padded(&stamp, now.wMinute, 2);
        fm5_text_append_char(&stamp, ':');
        fm5_text_append_padded(&stamp, now.wSecond, 2);
        fm5_text_append(&stamp, "--------------------------------\r\n");
        WriteFile(file, stamp.buffer, (DWORD)stamp.length, &written, NULL);
        WriteFile(file, text, (DWORD)lstrlenA(text), &written, NULL);
        WriteFile(file, "\r\n\r\n", 4, &written, NULL);
        CloseHandle(file);
    }
    fm5_unlock(&log_lock);
}

typedef int(WINAPI *message_box_fn)(HWND, LPCWSTR, LPCWSTR, UINT);

/* Through LoadLibrary: the DLL imports only kernel32, and most programs never show a box. */
static void show_message_box(const char *text)
{
    static WCHAR wide[16384];
    static fm5_lock box_lock;
    HMODULE user32 = LoadLibraryW(L"user32.dll");
    message_box_fn message_box = user32 ? (message_box_fn)(void (*)(void))GetProcAddress(user32, "MessageBoxW") : NULL;
    if (!message_box)
        return;
    fm5_lock_with_timeout(&box_lock, INFINITE);
    if (!MultiByteToWideChar(CP_UTF8, 0, text, -1, wide, 16384))
        lstrcpyW(wide, L"fm5: the event text could not be converted");
    wide[16383] = 0;
    message_box(NULL, wide, L"fm5 memory manager",
                MB_OK | MB_ICONERROR | MB_TASKMODAL | MB_DEFAULT_DESKTOP_ONLY);
    fm5_unlock(&box_lock);
}

void fm5_event_deliver(int kind, const void *pointer, size_t size, const char *text)
{
    FastMM_EventCallback callback = event_callback;
    if (callback) {
        FastMM_Event event = { kind, pointer, size, text };
        callback(&event, event_callback_user);
    }
    unsigned bit = 1u << (kind & 31);
    if (log_to_file_events & bit)
        write_log(text);
    if (output_debug_string_events & bit)
        OutputDebugStringA(text);
    if (message_box_events & bit)
        show_message_box(text);
}

void fm5_event_report(int kind, const void *pointer, size_t size, const char *detail)
{
    char buffer[MESSAGE_BYTES];
    fm5_text text;
    fm5_text_init(&text, buffer, sizeof buffer);
    fm5_text_append(&text, "fm5: ");
    fm5_text_append(&text, kind_name(kind));
    fm5_text_append(&text, ": ");
    fm5_text_append(&text, detail);
    if (pointer) {
        fm5_text_append(&text, ". Pointer: ");
        fm5_text_append_pointer(&text, pointer);
    }
    if (size) {
        fm5_text_append(&text, ". Size: ");
        fm5_text_append_unsigned(&text, size);
    }
    fm5_text_append(&text, ". Thread: ");
    fm5_text_append_unsigned(&text, GetCurrentThreadId());
    fm5_text_append_char(&text, '.');
    fm5_event_deliver(kind, pointer, size, text.buffer);
}

/* ---- public configuration --------------------------------------------------------------------- */

void FM5_CALL FastMM_SetEventCallback(FastMM_EventCallback callback, void *user)
{
    event_callback = NULL;
    event_callback_user = user;
    event_callback = callback;
}

void FM5_CALL FastMM_SetLogToFileEvents(unsigned mask)
{
    log_to_file_events = mask;
}

unsigned FM5_CALL FastMM_GetLogToFileEvents(void)
{
    return log_to_file_events;
}

void FM5_CALL FastMM_SetOutputDebugStringEvents(unsigned mask)
{
    output_debug_string_events = mask;
}

unsigned FM5_CALL FastMM_GetOutputDebugStringEvents(void)
{
    return output_debug_string_events;
}

void FM5_CALL FastMM_SetMessageBoxEvents(unsigned mask)
{
    message_box_events = mask;
}

unsigned FM5_CALL FastMM_GetMessageBoxEvents(void)
{
    return message_box_events;
}

int FM5_CALL FastMM_SetEventLogFilename(const char *utf8_path)
{
    if (utf8_path && lstrlenA(utf8_path) >= MAXIMUM_PATH_BYTES)
        return -1;
    fm5_lock_with_timeout(&log_lock, INFINITE);
    if (utf8_path)
        lstrcpyA(log_path, utf8_path);
    else
        log_path[0] = 0;
    fm5_unlock(&log_lock);
    return 0;
}

const char *FM5_CALL FastMM_GetEventLogFilename(void)
{
    fm5_lock_with_timeout(&log_lock, INFINITE);
    ensure_log_path();
    fm5_unlock(&log_lock);
    return log_path;
}

int FM5_CALL FastMM_DeleteEventLogFile(void)
{
    fm5_lock_with_timeout(&log_lock, INFINITE);
    ensure_log_path();
    WCHAR wide[MAXIMUM_PATH_BYTES];
    int deleted = MultiByteToWideChar(CP_UTF8, 0, log_path, -1, wide, MAXIMUM_PATH_BYTES) && DeleteFileW(wide);
    fm5_unlock(&log_lock);
    return deleted ? 1 : 0;
}
