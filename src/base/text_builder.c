#include "base/text_builder.h"

void fm5_text_init(fm5_text *text, char *buffer, size_t capacity)
{
    text->buffer = buffer;
    text->capacity = capacity;
    text->length = 0;
    if (capacity)
        buffer[0] = 0;
}

void fm5_text_append_char(fm5_text *text, char c)
{
    if (text->length + 1 < text->capacity) {
        text->buffer[text->length++] = c;
        text->buffer[text->length] = 0;
    }
}

void fm5_text_append(fm5_text *text, const char *s)
{
    while (*s)
        fm5_text_append_char(text, *s++);
}

void fm5_text_append_unsigned(fm5_text *text, uint64_t value)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    while (n)
        fm5_text_append_char(text, digits[--n]);
}

void fm5_text_append_padded(fm5_text *text, uint64_t value, unsigned width)
{
    uint64_t limit = 1;
    for (unsigned i = 1; i < width; i++) {
        limit *= 10;
        if (value < limit)
            fm5_text_append_char(text, '0');
    }
    fm5_text_append_unsigned(text, value);
}

void fm5_text_append_hex(fm5_text *text, uint64_t value, unsigned digits)
{
    static const char hex[] = "0123456789ABCDEF";
    for (unsigned i = digits; i-- > 0;)
        fm5_text_append_char(text, hex[(value >> (4 * i)) & 15]);
}

void fm5_text_append_pointer(fm5_text *text, const void *p)
{
    fm5_text_append(text, "0x");
    fm5_text_append_hex(text, (uintptr_t)p, 2 * sizeof(void *));
}
