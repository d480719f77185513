/* The fill patterns of debug blocks: 0x90 over a block as it is handed out, so that code reading memory
 * it never wrote sees a recognisable value, and 0x80 over a block as it is freed (with the freed-object
 * marker in its first pointer), so that a later write through a dangling pointer can be detected when the
 * block is reused (debug_freed_check.h). And the zero fill of FastMM_AllocMem in every mode, which uses
 * the same bulk stores. */
#ifndef FM5_DEBUG_FILL_H
#define FM5_DEBUG_FILL_H

#include "base/platform.h"

/* Seed 000 (FastMM5 PR #96): from this many user bytes up, a bulk fill (memset) beats stores of our
 * own; below it the scalar stores win. */
#define FM5_DEBUG_BULK_FILL_MINIMUM_SIZE 40u

/* From this many user bytes up, the allocated fill runs from the end of the area down. It follows the
 * freed-block check of a reused block, which reads the area from its start up: the lines that check
 * read last are still in the first-level cache, and a fill from the end writes them first instead of
 * evicting them on its way from the start. Below it the whole area stays cached (48 KiB of L1 data per
 * core on the machines we measure) and memset's direction does not matter. Measured at 64 KiB, natively
 * on the 2-core Xeon: fill 0x80 + check + fill 0x90 took 3.9-4.2 us with memset, 3.0-3.6 us with the
 * descending fill. */
#define FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE 32768u
_Static_assert(FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE >= FM5_DEBUG_BULK_FILL_MINIMUM_SIZE,
               "the descending fill is a kind of bulk fill");

/* From this many user bytes up, the Win64 asm's freed fill is one `rep stosb` instead of memset (the
 * Win32 asm uses it from 256 bytes; the C twin keeps memset, which writes the same bytes). Measured at
 * 64 KiB under Wine 8 on the 2-core Xeon, the debug sequence fill 0x80 + check + descending fill 0x90:
 * 3.6-3.8 us with memset against 3.3-3.8 us with rep stosb, and 5.8-6.1 against 4.8-5.2 us in a busier
 * minute (three runs each); a bare 64 KiB fill 2.0-2.1 us with memset, 1.8 us with rep stosb. The same
 * size as the descending fill, so that test_asm_twins' large sizes cover both switches. */
#define FM5_DEBUG_STRING_FILL_MINIMUM_SIZE FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE

/* Both take the user data of a debug block: any address, `size` bytes, nothing outside is written. The
 * freed fill's marker slot is written with memcpy, so even it assumes no alignment (debug blocks give
 * pointer alignment, which keeps its 8-byte stores aligned). */
void fm5_debug_fill_allocated(void *user, size_t size);
void fm5_debug_fill_freed(void *user, size_t size);
/* Their C twins (api/asm_twins.h lists every twin): in the NASM build the two names above are asm/
 * routines, which tail-jump to these; in the pure-C build they are aliases of these. */
void fm5_c_debug_fill_allocated(void *user, size_t size);
void fm5_c_debug_fill_freed(void *user, size_t size);

/* Zeroes `size` bytes from `area` (any address; nothing outside is written): FastMM_AllocMem's fill.
 * The NASM routines store with `rep stosb` where the debug fills do (from 256 bytes on Win32, from
 * FM5_DEBUG_STRING_FILL_MINIMUM_SIZE on Win64) and call memset below that; the CRT's memset under Wine 8's
 * Win32 msvcrt stores four bytes at a time. Measured on the allocmem workload (zeroed blocks up to
 * 300,000 bytes), 11 pairs at scale 1 on the 2-core Xeon (2026-12-04) against memset for every size:
 * Win32 +4.3 % [+0.0, +5.9], Win64 +3.2 % [+1.4, +4.2]. The twin is memset. */
void fm5_zero_fill(void *area, size_t size);
void fm5_c_zero_fill(void *area, size_t size);

#endif
