/*
 * The checks shared by the MSVC and MinGW import-library tests. Included by checks_dllimport.c and
 * checks_thunk.c, which differ only in how fm5.h declares the functions: through __imp_ pointers
 * (dllimport) or as plain calls that the import library's jump thunks must resolve.
 *
 * Freestanding on purpose: the MSVC build has no C library, so no memset, memcmp or printf here.
 */
#ifndef FM5_IMPORT_CHECKS_H
#define FM5_IMPORT_CHECKS_H

#include "fm5.h"
#include "checks.h"

#ifndef FM5_IMPORT_CHECKS_NAME
#error "define FM5_IMPORT_CHECKS_NAME before including import_checks.h"
#endif

/* fm5.h promises 8-byte alignment on Win32 and 16-byte alignment on Win64. */
#define FM5_MIN_ALIGN (2 * sizeof(void *))

#define CHECK(cond, what)           \
    do {                            \
        if (!(cond)) {              \
            report("FAIL: " what);  \
            ++failures;             \
        }                           \
    } while (0)

int FM5_IMPORT_CHECKS_NAME(fm5_report_fn report)
{
    int failures = 0;
    size_t i;

    unsigned char *p = fm5_malloc(100);
    CHECK(p != NULL, "fm5_malloc(100) returned NULL");
    if (p != NULL) {
        CHECK((size_t)p % FM5_MIN_ALIGN == 0, "fm5_malloc(100) is misaligned");
        CHECK(fm5_usable_size(p) >= 100, "fm5_usable_size < 100");
        CHECK(FastMM_BlockMaximumUserBytes(p) >= 100, "FastMM_BlockMaximumUserBytes < 100");
        for (i = 0; i < 100; ++i)
            p[i] = (unsigned char)(i * 7);
        for (i = 0; i < 100; ++i)
            if (p[i] != (unsigned char)(i * 7))
                break;
        CHECK(i == 100, "fm5_malloc block did not keep its contents");
        fm5_free(p);
    }

    unsigned char *q = FastMM_GetMem(1000);
    CHECK(q != NULL, "FastMM_GetMem(1000) returned NULL");
    if (q != NULL) {
        for (i = 0; i < 1000; ++i)
            q[i] = (unsigned char)(i ^ 0x5a);
        /* Large enough to leave the small-block range, so that the block really moves. */
        unsigned char *r = FastMM_ReallocMem(q, 100000);
        CHECK(r != NULL, "FastMM_ReallocMem(q, 100000) returned NULL");
        if (r == NULL) {
            CHECK(FastMM_FreeMem(q) == 0, "FastMM_FreeMem of the unmoved block failed");
        } else {
            for (i = 0; i < 1000; ++i)
                if (r[i] != (unsigned char)(i ^ 0x5a))
                    break;
            CHECK(i == 1000, "FastMM_ReallocMem lost the contents");
            CHECK(FastMM_BlockMaximumUserBytes(r) >= 100000,
                  "FastMM_BlockMaximumUserBytes < 100000 after FastMM_ReallocMem");
            CHECK(FastMM_FreeMem(r) == 0, "FastMM_FreeMem did not return 0");
        }
    }

    unsigned char *c = fm5_calloc(100, 37);
    CHECK(c != NULL, "fm5_calloc(100, 37) returned NULL");
    if (c != NULL) {
        for (i = 0; i < 3700; ++i)
            if (c[i] != 0)
                break;
        CHECK(i == 3700, "fm5_calloc block is not zeroed");
        fm5_free(c);
    }

    return failures;
}

#endif /* FM5_IMPORT_CHECKS_H */
