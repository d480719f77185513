/* Blocks from before the switch (malloc, _aligned_malloc, _strdup, new, a std::vector's and a
 * std::string's buffers) are freed, measured and resized after fm5_redirect_crt by the heap they came
 * from: fm5_owns is 0 for them, fm5 records no event, msvcrt's heap stays valid (HeapValidate and
 * _heapchk), and realloc moves one into fm5 with its content. */
#include "redirect_util.h"
#include <windows.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <vector>

static bool msvcrt_heap_intact()
{
    return HeapValidate(reinterpret_cast<HANDLE>(_get_heap_handle()), 0, NULL) && _heapchk() == _HEAPOK;
}

int main()
{
    redirect_watch_events();
    char *grown = static_cast<char *>(malloc(100));
    memset(grown, 'g', 100);
    char *measured = static_cast<char *>(malloc(777));
    char *emptied = static_cast<char *>(malloc(50));
    void *aligned = _aligned_malloc(100, 256);
    memset(aligned, 'A', 100);
    void *aligned_grown = _aligned_malloc(300, 32);
    memset(aligned_grown, 'B', 300);
    char *copy = _strdup("a copy from before");
    int *numbers = new int[50];
    for (int i = 0; i < 50; i++)
        numbers[i] = i;
    std::string *text = new std::string(3000, 't');
    std::vector<int> values(1000, 7);
    CHECK(!fm5_owns(grown) && !fm5_owns(aligned) && !fm5_owns(copy) && !fm5_owns(numbers) &&
          !fm5_owns(text) && !fm5_owns(text->data()) && !fm5_owns(values.data()));

    CHECK(fm5_redirect_crt() > 0);
    CHECK(msvcrt_heap_intact());

    CHECK(_msize(measured) == 777);
    free(measured);
    CHECK(realloc(emptied, 0) == NULL); /* freed by msvcrt */
    grown = static_cast<char *>(realloc(grown, 50000));
    CHECK(grown && fm5_owns(grown));
    bool kept = true;
    for (int i = 0; i < 100; i++)
        kept = kept && grown[i] == 'g';
    CHECK(kept);
    free(grown);
    CHECK(static_cast<char *>(aligned)[99] == 'A' && (reinterpret_cast<uintptr_t>(aligned) & 255) == 0);
    _aligned_free(aligned);
    aligned_grown = _aligned_realloc(aligned_grown, 5000, 32); /* stays with msvcrt */
    CHECK(aligned_grown && !fm5_owns(aligned_grown) && static_cast<char *>(aligned_grown)[299] == 'B');
    _aligned_free(aligned_grown);
    CHECK(strcmp(copy, "a copy from before") == 0);
    free(copy);
    CHECK(numbers[49] == 49);
    delete[] numbers;
    text->append(10000, 'u'); /* a new buffer from fm5; the old one back to msvcrt */
    CHECK(fm5_owns(text->data()) && !fm5_owns(text) && (*text)[2999] == 't' && (*text)[12999] == 'u');
    delete text;
    for (int i = 0; i < 5000; i++)
        values.push_back(i);
    CHECK(fm5_owns(values.data()) && values[999] == 7 && values[5999] == 4999);
    std::vector<int>().swap(values);

    CHECK(msvcrt_heap_intact());
    CHECK(redirect_events == 0);
    return redirect_finish("redirect_before");
}
