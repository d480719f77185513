/* The little harness the MinGW redirection tests share (C and C++): checks that count failures, and a
 * count of fm5's events. */
#ifndef REDIRECT_UTIL_H
#define REDIRECT_UTIL_H

#include "fm5.h"
#include <stdio.h>

static volatile long redirect_failures;
static volatile long redirect_events;

static void FM5_CALL redirect_count_event(const FastMM_Event *event, void *user)
{
    (void)user;
    __atomic_add_fetch(&redirect_events, 1, __ATOMIC_RELAXED);
    fprintf(stderr, "fm5 event: %s\n", event->Text);
}

#define CHECK(condition)                                                                     \
    do {                                                                                     \
        if (!(condition)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #condition);    \
            __atomic_add_fetch(&redirect_failures, 1, __ATOMIC_RELAXED);                     \
        }                                                                                    \
    } while (0)

/* Counts events from now on, quietly: no log file, no OutputDebugString. */
static void redirect_watch_events(void)
{
    FastMM_SetLogToFileEvents(0);
    FastMM_SetOutputDebugStringEvents(0);
    FastMM_SetEventCallback(redirect_count_event, NULL);
}

static int redirect_finish(const char *name)
{
    printf("%s: %ld failed checks, %ld fm5 events\n", name, (long)redirect_failures, (long)redirect_events);
    fflush(stdout);
    return redirect_failures ? 1 : 0;
}

#endif
