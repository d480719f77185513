/* Builds messages in a caller's buffer without allocating: the allocator cannot use itself, and the C
 * runtime's formatting may allocate. Output is always NUL-terminated and silently truncated. */
#ifndef FM5_TEXT_BUILDER_H
#define FM5_TEXT_BUILDER_H

#include <stddef.h>
#include <stdint.h>

typedef struct fm5_text {
    char *buffer;
    size_t capacity;
    size_t length;
} fm5_text;

void fm5_text_init(fm5_text *text, char *buffer, size_t capacity);
void fm5_text_append(fm5_text *text, const char *s);
void fm5_text_append_char(fm5_text *text, char c);
void fm5_text_append_unsigned(fm5_text *text, uint64_t value);
/* Decimal, with leading zeros up to `width` digits. */
void fm5_text_append_padded(fm5_text *text, uint64_t value, unsigned width);
/* 0x followed by the digits of a full pointer width. */
void fm5_text_append_pointer(fm5_text *text, const void *p);
void fm5_text_append_hex(fm5_text *text, uint64_t value, unsigned digits);

#endif
