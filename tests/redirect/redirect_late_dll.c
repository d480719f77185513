/* A DLL loaded after fm5_redirect_crt (redirect_helper.dll) is redirected as it loads: its malloc,
 * free, _strdup and operator new are fm5's, its static constructors already allocated from fm5, and
 * blocks passed between it and the program are freed correctly in both directions. Loaded, used and
 * unloaded twice, with no fm5 event. */
#include "redirect_util.h"
#include <windows.h>
#include <stdlib.h>
#include <string.h>

typedef void *(*malloc_fn)(size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);
typedef char *(*strdup_fn)(const char *);
typedef int (*string_ok_fn)(const void *, size_t);
typedef const void *(*data_fn)(void);

#define GET(type, name) ((type)(void (*)(void))GetProcAddress(helper, name))

static void use_helper(void)
{
    HMODULE helper = LoadLibraryA("redirect_helper.dll");
    CHECK(helper != NULL);
    if (!helper)
        return;
    malloc_fn helper_malloc = GET(malloc_fn, "helper_malloc");
    realloc_fn helper_realloc = GET(realloc_fn, "helper_realloc");
    free_fn helper_free = GET(free_fn, "helper_free");
    strdup_fn helper_strdup = GET(strdup_fn, "helper_strdup");
    malloc_fn helper_new_string = GET(malloc_fn, "helper_new_string");
    string_ok_fn helper_string_ok = GET(string_ok_fn, "helper_string_ok");
    free_fn helper_delete_string = GET(free_fn, "helper_delete_string");
    data_fn helper_constructed_data = GET(data_fn, "helper_constructed_data");
    CHECK(helper_malloc && helper_realloc && helper_free && helper_strdup && helper_new_string &&
          helper_string_ok && helper_delete_string && helper_constructed_data);

    /* Its static constructor ran after the patch. */
    CHECK(fm5_owns(helper_constructed_data()));

    /* DLL -> program */
    char *a = helper_malloc(3000);
    CHECK(a && fm5_owns(a));
    memset(a, 'a', 3000);
    a = realloc(a, 100000);
    CHECK(a && a[2999] == 'a');
    free(a);
    char *text = helper_strdup("from the DLL");
    CHECK(text && fm5_owns(text) && strcmp(text, "from the DLL") == 0);
    free(text);

    /* program -> DLL */
    char *b = malloc(200);
    CHECK(b && fm5_owns(b));
    memset(b, 'b', 200);
    b = helper_realloc(b, 700000);
    CHECK(b && fm5_owns(b) && b[199] == 'b');
    helper_free(b);
    helper_free(_strdup("from the program"));

    /* operator new in the DLL, the block checked and deleted there; blocks of many sizes both ways */
    void *s = helper_new_string(5000);
    CHECK(s && fm5_owns(s) && helper_string_ok(s, 5000));
    helper_delete_string(s);
    for (size_t size = 1; size < 2000000; size = size * 3 + 1) {
        void *x = helper_malloc(size), *y = malloc(size);
        CHECK(fm5_owns(x) && fm5_owns(y));
        helper_free(y);
        free(x);
    }
    CHECK(FreeLibrary(helper));
    CHECK(GetModuleHandleA("redirect_helper.dll") == NULL);
}

static size_t allocated_bytes(void)
{
    FastMM_UsageSummary summary;
    FastMM_GetUsageSummary(&summary);
    return summary.AllocatedBytes;
}

int main(void)
{
    redirect_watch_events();
    int patched = fm5_redirect_crt();
    printf("fm5_redirect_crt: %d import slots patched\n", patched);
    CHECK(patched > 0);
    size_t baseline = allocated_bytes();
    use_helper();
    size_t after_first = allocated_bytes();
    use_helper();
    size_t after_second = allocated_bytes();
    /* What each load leaves: libstdc++'s emergency exception pool (73 KB on Win64, 19 KB on
     * Win32), which GCC 12 allocates in a static constructor and never frees; everything the DLL and
     * the program allocated and freed is gone. */
    printf("fm5 allocated bytes: %zu before the DLL, %zu after one load and unload, %zu after two\n",
           baseline, after_first, after_second);
    CHECK(after_first - baseline < 96 * 1024);
    CHECK(after_second - after_first == after_first - baseline);
    CHECK(redirect_events == 0);
    return redirect_finish("redirect_late_dll");
}
