/*
 * system_common.c — the parts of system.h that need only its primitives, the same on every OS.
 */
#include "system.h"

#include <ctype.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

unsigned tu_thread_join_all(tu_thread *threads, unsigned count, unsigned timeout_ms)
{
    unsigned long long deadline = tu_ms() + timeout_ms;
    unsigned ended = 0;
    for (unsigned i = 0; i < count; i++) {
        if (!threads[i])
            continue;
        unsigned long long now = tu_ms();
        unsigned left = now < deadline ? (unsigned)(deadline - now) : 0;
        if (tu_thread_join(threads[i], left)) {
            threads[i] = NULL;
            ended++;
        }
    }
    return ended;
}

void tu_signal_raise(tu_signal *signal)
{
    tu_atomic_store(&signal->raised, 1);
}

int tu_signal_wait(tu_signal *signal, unsigned timeout_ms)
{
    unsigned long long deadline = tu_ms() + timeout_ms;
    for (unsigned spins = 0; !tu_atomic_load(&signal->raised); spins++) {
        if (tu_ms() >= deadline)
            return 0;
        if (spins < 64)
            tu_yield();
        else
            tu_sleep_ms(1);
    }
    return 1;
}

int tu_file_exists(const char *path)
{
    FILE *file = fopen(path, "rb");
    if (file)
        fclose(file);
    return file != NULL;
}

int tu_same_path(const char *a, const char *b)
{
    if (tu_path_separator() == '/')
        return strcmp(a, b) == 0;
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

char *tu_read_file(const char *path)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;
    char *text = NULL;
    long size = -1;
    if (fseek(file, 0, SEEK_END) == 0 && (size = ftell(file)) >= 0 && fseek(file, 0, SEEK_SET) == 0)
        text = (char *)malloc((size_t)size + 1);
    if (text && fread(text, 1, (size_t)size, file) != (size_t)size) {
        free(text);
        text = NULL;
    }
    fclose(file);
    if (text)
        text[size] = 0;
    return text;
}
