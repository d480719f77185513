/* FM5_REDIRECT=1 in the environment redirects when the DLL loads, before the program's C runtime
 * starts: run with "on" (the variable set) malloc's blocks are fm5's; with "off" (not set) they are
 * msvcrt's. The program never calls fm5_redirect_crt. */
#include "redirect_util.h"
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    redirect_watch_events();
    int expect_redirected = argc > 1 && strcmp(argv[1], "on") == 0;
    void *p = malloc(100);
    char *s = _strdup("environment");
    CHECK(p && fm5_owns(p) == expect_redirected);
    CHECK(s && fm5_owns(s) == expect_redirected);
    free(p);
    free(s);
    CHECK(redirect_events == 0);
    return redirect_finish(expect_redirected ? "redirect_env (FM5_REDIRECT=1)" : "redirect_env (not set)");
}
