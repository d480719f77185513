/* After fm5_redirect_crt, FreeLibrary cannot unload fm5: the program loads the DLL itself (it is not
 * linked against it), switches, calls FreeLibrary several times, and the DLL is still mapped and still
 * serves the program's malloc and free. Without the pin the first malloc after FreeLibrary would jump
 * into unmapped memory. */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*redirect_fn)(void);
typedef int (*owns_fn)(const void *);

int main(void)
{
    int failures = 0;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "line %d: CHECK failed: %s\n", __LINE__, #c); failures++; } } while (0)
    void *before = malloc(100);
    HMODULE fm5 = LoadLibraryA(FM5_DLL_NAME);
    CHECK(fm5 != NULL);
    if (!fm5)
        return 1;
    redirect_fn redirect = (redirect_fn)(void (*)(void))GetProcAddress(fm5, "fm5_redirect_crt");
    owns_fn owns = (owns_fn)(void (*)(void))GetProcAddress(fm5, "fm5_owns");
    CHECK(redirect && owns);
    CHECK(redirect() > 0);
    void *p = malloc(100);
    CHECK(owns(p));
    int freed = 0;
    for (int i = 0; i < 4; i++)
        freed += FreeLibrary(fm5) != 0;
    printf("FreeLibrary returned TRUE %d times of 4\n", freed);
    CHECK(GetModuleHandleA(FM5_DLL_NAME) == fm5);
    void *q = malloc(5000);
    CHECK(q && owns(q));
    free(p);
    free(q);
    free(before);
    printf("redirect_unload: %s\n", failures ? "FAILED" : "fm5 stayed loaded and kept serving malloc");
    return failures ? 1 : 0;
}
