/*
 * events.c — the event recorder of events.h.
 */
#include "events.h"

#include <stdio.h>
#include <string.h>

static struct {
    tu_atomic_long count[TU_EVENT_KINDS];
    tu_atomic_long total;
    /* The last event and the store are several fields each, so a spin lock keeps a reader from seeing
     * half of one. */
    tu_atomic_long lock;
    int last_kind;
    const void *last_pointer;
    size_t last_size;
    char last_text[TU_EVENT_TEXT];
    /* The store: allocated by the first install with TU_KEEP_ALL_EVENTS, used while keep_all is set. */
    int keep_all;
    tu_event *stored;
    char *text;
    tu_atomic_long stored_count;
    tu_atomic_long dropped; /* events that found the store full */
    size_t text_used;
} recorder;

/* Copies as much of `src` as fits, always terminated; NULL copies as "". */
static void copy_text(char *dst, size_t dst_size, const char *src)
{
    size_t n = src ? strnlen(src, dst_size - 1) : 0;
    if (n)
        memcpy(dst, src, n);
    dst[n] = 0;
}

static void recorder_lock(void)
{
    while (!tu_atomic_cas(&recorder.lock, 0, 1))
        tu_yield();
}

static void recorder_unlock(void)
{
    tu_atomic_exchange(&recorder.lock, 0);
}

/* Under the lock. */
static void store_event(const FastMM_Event *event)
{
    if ((unsigned long)recorder.stored_count >= TU_EVENTS_MAX_STORED) {
        tu_atomic_increment(&recorder.dropped);
        return;
    }
    tu_event *e = &recorder.stored[recorder.stored_count];
    e->kind = event->Kind;
    e->pointer = event->Pointer;
    e->size = event->Size;
    size_t room = TU_EVENTS_TEXT_BYTES - recorder.text_used;
    if (room > 0) {
        char *dst = recorder.text + recorder.text_used;
        copy_text(dst, room, event->Text);
        recorder.text_used += strlen(dst) + 1;
        e->text = dst;
    } else {
        e->text = "";
    }
    tu_atomic_increment(&recorder.stored_count);
}

/* Runs inside fm5, possibly with an arena lock held: it must not allocate from fm5, and does not
 * allocate at all. */
static void FM5_CALL recorder_callback(const FastMM_Event *event, void *user)
{
    (void)user;
    int kind = event->Kind;
    if (kind >= 0 && kind < TU_EVENT_KINDS)
        tu_atomic_increment(&recorder.count[kind]);
    else
        tu_atomic_increment(&recorder.count[0]); /* an unknown kind is itself worth a check */
    recorder_lock();
    recorder.last_kind = kind;
    recorder.last_pointer = event->Pointer;
    recorder.last_size = event->Size;
    copy_text(recorder.last_text, TU_EVENT_TEXT, event->Text);
    if (recorder.keep_all)
        store_event(event);
    recorder_unlock();
    tu_atomic_increment(&recorder.total);
}

void tu_disable_event_log(void)
{
    FastMM_SetLogToFileEvents(0);
    FastMM_SetOutputDebugStringEvents(0);
}

int tu_events_install(int keep)
{
    tu_disable_event_log();
    int ok = 1;
    if (keep == TU_KEEP_ALL_EVENTS) {
        if (!recorder.stored)
            recorder.stored = (tu_event *)tu_os_map(TU_EVENTS_MAX_STORED * sizeof(tu_event));
        if (!recorder.text)
            recorder.text = (char *)tu_os_map(TU_EVENTS_TEXT_BYTES);
        ok = recorder.stored && recorder.text;
    }
    tu_events_reset();
    recorder_lock();
    recorder.keep_all = keep == TU_KEEP_ALL_EVENTS && ok;
    recorder_unlock();
    FastMM_SetEventCallback(recorder_callback, NULL);
    return ok;
}

void tu_events_reset(void)
{
    recorder_lock();
    for (int i = 0; i < TU_EVENT_KINDS; i++)
        tu_atomic_exchange(&recorder.count[i], 0);
    tu_atomic_exchange(&recorder.total, 0);
    recorder.last_kind = 0;
    recorder.last_pointer = NULL;
    recorder.last_size = 0;
    recorder.last_text[0] = 0;
    tu_atomic_exchange(&recorder.stored_count, 0);
    tu_atomic_exchange(&recorder.dropped, 0);
    recorder.text_used = 0;
    recorder_unlock();
}

long tu_events_count(int kind)
{
    return (kind >= 0 && kind < TU_EVENT_KINDS) ? recorder.count[kind] : 0;
}

long tu_events_total(void)
{
    return recorder.total;
}

void tu_events_last(int *kind, const void **pointer, size_t *size, char *text, size_t text_size)
{
    recorder_lock();
    if (kind)
        *kind = recorder.last_kind;
    if (pointer)
        *pointer = recorder.last_pointer;
    if (size)
        *size = recorder.last_size;
    if (text && text_size)
        copy_text(text, text_size, recorder.last_text);
    recorder_unlock();
}

size_t tu_events_stored(void)
{
    return (size_t)recorder.stored_count;
}

long tu_events_dropped(void)
{
    return recorder.dropped;
}

const tu_event *tu_events_get(size_t i)
{
    return i < (size_t)recorder.stored_count ? &recorder.stored[i] : NULL;
}

const tu_event *tu_events_find(int kind, const void *pointer)
{
    for (size_t i = 0; i < (size_t)recorder.stored_count; i++) {
        const tu_event *e = &recorder.stored[i];
        if ((kind == 0 || e->kind == kind) && e->pointer == pointer)
            return e;
    }
    return NULL;
}

const char *tu_event_kind_name(int kind)
{
    switch (kind) {
    case FastMM_EventInvalidFree: return "InvalidFree";
    case FastMM_EventInvalidRealloc: return "InvalidRealloc";
    case FastMM_EventDoubleFree: return "DoubleFree";
    case FastMM_EventReallocOfFreedBlock: return "ReallocOfFreedBlock";
    case FastMM_EventInvalidQuery: return "InvalidQuery";
    case FastMM_EventOutOfMemory: return "OutOfMemory";
    case FastMM_EventMemoryLimitExceeded: return "MemoryLimitExceeded";
    case FastMM_EventInvalidArgument: return "InvalidArgument";
    case FastMM_EventDebugBlockHeaderCorrupted: return "DebugBlockHeaderCorrupted";
    case FastMM_EventDebugBlockFooterCorrupted: return "DebugBlockFooterCorrupted";
    case FastMM_EventFreedBlockModified: return "FreedBlockModified";
    case FastMM_EventVirtualCallOnFreedObject: return "VirtualCallOnFreedObject";
    case FastMM_EventMemoryLeak: return "MemoryLeak";
    case FastMM_EventDebugModeReport: return "DebugModeReport";
    default: return "?";
    }
}

int tu_text_mentions_hex(const char *text, uintptr_t value)
{
    char lower[2 * sizeof(uintptr_t) + 1], upper[2 * sizeof(uintptr_t) + 1];
    snprintf(lower, sizeof lower, "%llx", (unsigned long long)value);
    snprintf(upper, sizeof upper, "%llX", (unsigned long long)value);
    return strstr(text, lower) != NULL || strstr(text, upper) != NULL;
}

int tu_text_line_after(const char *text, const char *label, char *out, size_t out_size)
{
    const char *at = text ? strstr(text, label) : NULL;
    if (out_size)
        out[0] = 0;
    if (!at)
        return 0;
    at += strlen(label);
    size_t n = strcspn(at, "\r\n");
    if (out_size) {
        if (n >= out_size)
            n = out_size - 1;
        memcpy(out, at, n);
        out[n] = 0;
    }
    return 1;
}

int tu_modified_offsets(const char *text, char *out, size_t out_size)
{
    return tu_text_line_after(text, TU_MODIFIED_OFFSETS_LABEL, out, out_size);
}
