/*
 * Malloc redirection in a program that clang compiles for the MSVC ABI and lld-link links with no C
 * runtime of its own: it imports the heap functions from msvcrt.dll (msvcrt_NN.def) or, built with
 * REDIRECT_UCRT, from the Universal CRT's API sets api-ms-win-crt-heap-l1-1-0.dll and
 * api-ms-win-crt-string-l1-1-0.dll (ucrt_heap.def, ucrt_string.def), as an MSVC program does.
 * Blocks from before the switch stay with the runtime; after it every function serves fm5 blocks with
 * the runtime's semantics: _msize, _expand, _recalloc, _strdup, the _aligned_ family, calloc's
 * overflow, realloc(p, 0), errno, and (msvcrt) operator new and delete.
 */
#include "fm5.h"

#include <stddef.h>
#include <stdint.h>

#define ENOMEM 12
#define EINVAL 22

#define CRT __declspec(dllimport) __cdecl
CRT void *malloc(size_t size);
CRT void *calloc(size_t count, size_t size);
CRT void *realloc(void *p, size_t size);
CRT void free(void *p);
CRT size_t _msize(void *p);
CRT void *_expand(void *p, size_t size);
CRT char *_strdup(const char *s);
CRT void *_aligned_malloc(size_t size, size_t alignment);
CRT void _aligned_free(void *p);
CRT void *_aligned_realloc(void *p, size_t size, size_t alignment);
CRT int *_errno(void);
CRT uintptr_t _get_heap_handle(void);
#ifdef REDIRECT_UCRT
/* msvcrt.dll on Windows has _recalloc, Wine's has not; both UCRT sets have it, and these two. */
CRT void *_recalloc(void *p, size_t count, size_t size);
CRT void *_aligned_recalloc(void *p, size_t count, size_t size, size_t alignment);
CRT size_t _aligned_msize(void *p, size_t alignment, size_t offset);
#define NAME "redirect_ucrt"
#else
/* msvcrt.dll's C++ operators, by their mangled names. */
#  ifdef _WIN64
CRT void *crt_new(size_t size) __asm__("??2@YAPEAX_K@Z");
CRT void crt_delete(void *p) __asm__("??3@YAXPEAX@Z");
CRT void *crt_new_array(size_t size) __asm__("??_U@YAPEAX_K@Z");
CRT void crt_delete_array(void *p) __asm__("??_V@YAXPEAX@Z");
#  else
CRT void *crt_new(size_t size) __asm__("??2@YAPAXI@Z");
CRT void crt_delete(void *p) __asm__("??3@YAXPAX@Z");
CRT void *crt_new_array(size_t size) __asm__("??_U@YAPAXI@Z");
CRT void crt_delete_array(void *p) __asm__("??_V@YAXPAX@Z");
#  endif
#define NAME "redirect_msvcrt"
#endif

#define STD_OUTPUT_HANDLE ((unsigned long)-11)
__declspec(dllimport) __declspec(noreturn) void __stdcall ExitProcess(unsigned exit_code);
__declspec(dllimport) void *__stdcall GetStdHandle(unsigned long which);
__declspec(dllimport) int __stdcall WriteFile(void *file, const void *data, unsigned long size,
                                              unsigned long *written, void *overlapped);
__declspec(dllimport) int __stdcall HeapValidate(void *heap, unsigned long flags, const void *p);

/* ---- output and checks, without a C runtime ---- */

static void say(const char *s)
{
    unsigned long n = 0, written;
    while (s[n])
        n++;
    WriteFile(GetStdHandle(STD_OUTPUT_HANDLE), s, n, &written, 0);
}

static void say_number(size_t value)
{
    char text[24];
    int i = 23;
    text[i] = 0;
    do {
        text[--i] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    say(text + i);
}

static int failures;
static volatile int events;

static void check(int ok, int line, const char *what)
{
    if (ok)
        return;
    failures++;
    say(NAME ": CHECK failed at line ");
    say_number((size_t)line);
    say(": ");
    say(what);
    say("\r\n");
}
#define CHECK(condition) check((condition) != 0, __LINE__, #condition)

static void FM5_CALL count_event(const FastMM_Event *event, void *user)
{
    (void)user;
    events++;
    say("fm5 event: ");
    say(event->Text);
    say("\r\n");
}

static void fill(void *p, size_t size, unsigned seed)
{
    for (size_t i = 0; i < size; i++)
        ((unsigned char *)p)[i] = (unsigned char)(seed + i * 31);
}

static int same(const void *p, size_t size, unsigned seed)
{
    for (size_t i = 0; i < size; i++)
        if (((const unsigned char *)p)[i] != (unsigned char)(seed + i * 31))
            return 0;
    return 1;
}

static int zero(const void *p, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (((const unsigned char *)p)[i] != 0)
            return 0;
    return 1;
}

static int heap_intact(void)
{
    return HeapValidate((void *)_get_heap_handle(), 0, NULL) != 0;
}

static int aligned(const void *p, size_t alignment)
{
    return ((uintptr_t)p & (alignment - 1)) == 0;
}

__declspec(noreturn) void fm5_entry(void);

void fm5_entry(void)
{
    FastMM_SetLogToFileEvents(0);
    FastMM_SetOutputDebugStringEvents(0);
    FastMM_SetEventCallback(count_event, NULL);

    /* ---- before the switch: the runtime's blocks ---- */
    char *old_block = malloc(1000);
    fill(old_block, 1000, 1);
    char *old_grown = malloc(300);
    fill(old_grown, 300, 2);
    char *old_text = _strdup("allocated before the switch");
    void *old_aligned = _aligned_malloc(200, 64);
    fill(old_aligned, 200, 3);
#ifdef REDIRECT_UCRT
    char *old_zeroed = calloc(10, 10);
#else
    void *old_object = crt_new(48);
#endif
    CHECK(old_block && !fm5_owns(old_block) && !fm5_owns(old_text) && !fm5_owns(old_aligned));

    int patched = fm5_redirect_crt();
    say(NAME ": fm5_redirect_crt patched ");
    say_number((size_t)patched);
    say(" import slots\r\n");
    CHECK(patched >= 12);
    CHECK(fm5_redirect_crt() == 0);

    /* ---- the runtime's blocks, after the switch ---- */
    CHECK(_msize(old_block) == 1000);
    CHECK(same(old_block, 1000, 1));
    free(old_block);
    char *moved = realloc(old_grown, 5000);
    CHECK(moved && fm5_owns(moved) && same(moved, 300, 2));
    free(moved);
    CHECK(old_text[0] == 'a');
    free(old_text);
    old_aligned = _aligned_realloc(old_aligned, 400, 64); /* stays in the runtime's heap */
    CHECK(old_aligned && !fm5_owns(old_aligned) && aligned(old_aligned, 64) && same(old_aligned, 200, 3));
    _aligned_free(old_aligned);
#ifdef REDIRECT_UCRT
    old_zeroed = _recalloc(old_zeroed, 20, 10);
    CHECK(old_zeroed && fm5_owns(old_zeroed) && zero(old_zeroed, 0, 200));
    free(old_zeroed);
#else
    crt_delete(old_object);
#endif
    CHECK(heap_intact());
    CHECK(events == 0);

    /* ---- fm5 blocks through the runtime's names ---- */
    char *p = malloc(100);
    CHECK(p && fm5_owns(p));
    CHECK(_msize(p) == fm5_usable_size(p) && _msize(p) >= 100);
    fill(p, 100, 4);
    CHECK(_expand(p, 50) == p);
    CHECK(_expand(p, _msize(p)) == p);
    *_errno() = 0;
    CHECK(_expand(p, 1000000) == NULL && *_errno() == ENOMEM);
    p = realloc(p, 100000);
    CHECK(p && fm5_owns(p) && same(p, 100, 4));
    CHECK(realloc(p, 0) == NULL); /* frees */
    *_errno() = 0;
    CHECK(calloc(SIZE_MAX / 8, 16) == NULL && *_errno() == ENOMEM);
    unsigned char *z = calloc(7, 13);
    CHECK(z && fm5_owns(z) && zero(z, 0, _msize(z)));
    free(z);
    char *copy = _strdup("fm5 redirect");
    CHECK(copy && fm5_owns(copy) && copy[0] == 'f' && copy[11] == 't' && copy[12] == 0);
    free(copy);
    CHECK(_strdup(NULL) == NULL);
    *_errno() = 0;
    CHECK(_msize(NULL) == (size_t)-1 && *_errno() == EINVAL);
    free(NULL);

    for (size_t alignment = 1; alignment <= 65536; alignment *= 2) {
        size_t size = 24 + alignment / 2;
        void *a = _aligned_malloc(size, alignment);
        CHECK(a && fm5_owns(a) && aligned(a, alignment));
        fill(a, size, 5);
        void *b = _aligned_realloc(a, size * 3, alignment);
        CHECK(b && fm5_owns(b) && aligned(b, alignment) && same(b, size, 5));
#ifdef REDIRECT_UCRT
        size_t old_size = _aligned_msize(b, alignment, 0);
        CHECK(old_size >= size * 3);
        /* As the CRT's own: zero from the old block's _aligned_msize on. */
        void *c = _aligned_recalloc(b, 4, size, alignment);
        CHECK(c && aligned(c, alignment) && same(c, size, 5) &&
              zero(c, old_size < size * 4 ? old_size : size * 4, size * 4));
        b = c;
#endif
        _aligned_free(b);
    }
    *_errno() = 0;
    CHECK(_aligned_malloc(10, 3) == NULL && *_errno() == EINVAL);

#ifdef REDIRECT_UCRT
    unsigned char *r = calloc(3, 10);
    fill(r, 30, 6);
    r = _recalloc(r, 300, 10);
    CHECK(r && fm5_owns(r) && same(r, 30, 6) && zero(r, 30, 3000));
    r = _recalloc(r, 1, 10); /* shrink: the rest is given up, then zero when grown again */
    r = _recalloc(r, 100, 10);
    CHECK(r && same(r, 10, 6) && zero(r, 10, 1000));
    *_errno() = 0;
    CHECK(_recalloc(r, SIZE_MAX / 4, 8) == NULL && *_errno() == ENOMEM);
    free(r);
#else
    void *object = crt_new(40);
    void *array = crt_new_array(4000);
    CHECK(object && fm5_owns(object) && array && fm5_owns(array));
    crt_delete(object);
    crt_delete_array(array);
    crt_delete(NULL);
#endif
    CHECK(events == 0);

    /* ---- bad pointers: an event each, no crash ---- */
    int local = 0;
    free(&local);
    CHECK(events == 1);
    char *block = malloc(64);
    free(block + 8);
    CHECK(events == 2);
    CHECK(realloc(block + 8, 100) == NULL && events == 3); /* one event, not two */
    _aligned_free(block); /* not from _aligned_malloc */
    CHECK(events == 4);
    free(block);
    free(block); /* double free */
    CHECK(events == 5);
    CHECK(_msize(&local) == (size_t)-1 && events == 6);
    CHECK(realloc(&local, 10) == NULL && events == 7);
    CHECK(heap_intact());

    say(NAME ": ");
    say(failures ? "FAILED\r\n" : "all checks passed\r\n");
    ExitProcess(failures ? 1 : 0);
}
