/* Event delivery. Nothing here allocates: messages are built on the stack and files are written
 * through base/os.h directly. */
#include "base/events.h"
#include "base/os.h"
#include "base/text_builder.h"
#include <string.h>

#define MAXIMUM_PATH_BYTES 1024
#define MESSAGE_BYTES 4096
#define UTF8_BYTE_ORDER_MARK "\xEF\xBB\xBF"

static FastMM_EventCallback event_callback;
static void *event_callback_user;
static volatile unsigned log_to_file_events = ~0u;
static volatile unsigned output_debug_string_events = ~0u;

static volatile unsigned message_box_events;

static fm5_lock log_lock;
static char log_path[MAXIMUM_PATH_BYTES];   /* UTF-8; empty until first needed */

const char *fm5_event_kind_name(int kind)
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
    case FastMM_EventReleaseFailed: return "Memory release refused";
    case FastMM_EventCannotSwitchWithLivePointers: return "Cannot switch to the shared memory manager";
    default: return "Event";
    }
}

/* "<exe path without extension>_MemoryManager_EventLog.txt", or that file name in %FastMMLogFilePath%. */
static void build_default_log_path(char *out, size_t capacity)
{
    char stem[MAXIMUM_PATH_BYTES];
    fm5_os_program_path_stem(stem, sizeof stem);
    const char *name = stem;
    for (const char *c = stem; *c; c++)
        if (*c == '\\' || *c == '/')
            name = c + 1;
    fm5_text path;
    fm5_text_init(&path, out, capacity);
    char folder[MAXIMUM_PATH_BYTES];
    size_t folder_length = fm5_os_environment("FastMMLogFilePath", folder, sizeof folder);
    if (folder_length > 0) {
        fm5_text_append(&path, folder);
        if (folder[folder_length - 1] != '\\' && folder[folder_length - 1] != '/')
            fm5_text_append_char(&path, '\\');
        fm5_text_append(&path, name);
    } else {
        fm5_text_append(&path, stem);
    }
    fm5_text_append(&path, "_MemoryManager_EventLog.txt");
    if (path.length + 1 >= capacity)  /* truncated: no log rather than a wrong one */
        out[0] = 0;
}

static void ensure_log_path(void)
{
    if (!log_path[0])
        build_default_log_path(log_path, sizeof log_path);
}

/* A new log file starts with the UTF-8 byte-order mark; each event is preceded by a dated line. */
static void write_log(const char *text)
{
    fm5_os_local_time now;
    fm5_os_get_local_time(&now);
    char stamp_buffer[96];
    fm5_text stamp;
    fm5_text_init(&stamp, stamp_buffer, sizeof stamp_buffer);
    fm5_text_append(&stamp, "--------------------------------");
    fm5_text_append_padded(&stamp, now.year, 4);
    fm5_text_append_char(&stamp, '/');
    fm5_text_append_padded(&stamp, now.month, 2);
    fm5_text_append_char(&stamp, '/');
    fm5_text_append_padded(&stamp, now.day, 2);
    fm5_text_append_char(&stamp, ' ');
    fm5_text_append_padded(&stamp, now.hour, 2);
    fm5_text_append_char(&stamp, ':');
    fm5_text_append_padded(&stamp, now.minute, 2);
    fm5_text_append_char(&stamp, ':');
    fm5_text_append_padded(&stamp, now.second, 2);
    fm5_text_append(&stamp, "--------------------------------\r\n");

    fm5_lock_with_timeout(&log_lock, FM5_WAIT_FOREVER);
    ensure_log_path();
    if (log_path[0]) {
        const char *pieces[3] = { stamp.buffer, text, "\r\n\r\n" };
        size_t lengths[3] = { stamp.length, strlen(text), 4 };
        fm5_os_append_to_file(log_path, UTF8_BYTE_ORDER_MARK, pieces, lengths, 3);
    }
    fm5_unlock(&log_lock);
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
        fm5_os_debug_output(text);
    if (message_box_events & bit)
        fm5_os_message_box(text, "fm5 memory manager");
}

void fm5_event_report(int kind, const void *pointer, size_t size, const char *detail)
{
    char buffer[MESSAGE_BYTES];
    fm5_text text;
    fm5_text_init(&text, buffer, sizeof buffer);
    fm5_text_append(&text, "fm5: ");
    fm5_text_append(&text, fm5_event_kind_name(kind));
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
    fm5_text_append_unsigned(&text, fm5_os_thread_id());
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
    if (utf8_path && strlen(utf8_path) >= MAXIMUM_PATH_BYTES)
        return -1;
    fm5_lock_with_timeout(&log_lock, FM5_WAIT_FOREVER);
    if (utf8_path)
        memcpy(log_path, utf8_path, strlen(utf8_path) + 1);
    else
        log_path[0] = 0;
    fm5_unlock(&log_lock);
    return 0;
}

const char *FM5_CALL FastMM_GetEventLogFilename(void)
{
    fm5_lock_with_timeout(&log_lock, FM5_WAIT_FOREVER);
    ensure_log_path();
    fm5_unlock(&log_lock);
    return log_path;
}

int FM5_CALL FastMM_DeleteEventLogFile(void)
{
    fm5_lock_with_timeout(&log_lock, FM5_WAIT_FOREVER);
    ensure_log_path();
    int deleted = fm5_os_delete_file(log_path);
    fm5_unlock(&log_lock);
    return deleted ? 1 : 0;
}
