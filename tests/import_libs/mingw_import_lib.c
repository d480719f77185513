/* The checks, built with MinGW gcc and linked against libfm5_NN.dll.a given by its path. */
#include <stdio.h>

#include "checks.h"

static void report(const char *line)
{
    puts(line);
}

int main(void)
{
    int failures = fm5_checks_dllimport(report) + fm5_checks_thunk(report);
    printf("mingw_import_lib (%u-bit): %s\n", (unsigned)(8 * sizeof(void *)),
           failures == 0 ? "all checks passed" : "FAILED");
    return failures == 0 ? 0 : 1;
}
