/* The routines that asm/ implements in NASM, and their C twins.
 *
 * Each routine has two bodies: the C twin below (fm5_c_...), always compiled, which is the reference for
 * behaviour and the slow path the NASM routine falls back to by a tail jump; and, when FM5_ASM is 1, the
 * NASM routine under the routine's ordinary name. When FM5_ASM is 0 the ordinary name is an alias of the
 * twin (one body, no extra jump), which gives the pure-C DLLs. tests/test_asm_twins.c runs both bodies on
 * the same inputs. */
#ifndef FM5_ASM_TWINS_H
#define FM5_ASM_TWINS_H

#include "fm5.h"
#include "base/platform.h"
#include "blocks/release_engine.h"  /* fm5_release_get_mem */
#include "blocks/small_blocks.h"    /* fm5_small_span */

/* Twins of FastMM_GetMem, FastMM_FreeMem and FastMM_ReallocMem: the complete C entry points. */
void *FM5_CALL fm5_c_get_mem(size_t size);
int FM5_CALL fm5_c_free_mem(void *p);
void *FM5_CALL fm5_c_realloc_mem(void *p, size_t new_size);

/* Where the NASM routines enter the twins past the tests they made themselves: GetMem of a size above
 * the small range outside debug and erase modes goes to fm5_release_get_mem (blocks/release_engine.h);
 * FreeMem of a pointer that is fm5's but whose status word is not a live small block's to the function
 * below; ReallocMem of a block proved a live small block, outside debug mode, that does not stay in
 * place to fm5_c_realloc_moving_small_block, which moves it by FastMM5's rules without identifying it
 * again. */
int fm5_c_free_mem_slow_path(void *p);
void *fm5_c_realloc_moving_small_block(void *p, size_t new_size);
/* The asm ReallocMem moves a small block through the thread cache itself (small_realloc_mem.asm of
 * asm/win64/ and asm/win32/): when the old block's bin refuses it after the new block was filled, it
 * ends here, which frees the old block with FreeMem and returns the new one. */
void *fm5_c_free_moved_small_block(void *old_block, void *new_block);

/* FreeMem of a block that its caller proved a live small block of `span` (whose manager is `manager`),
 * past the proof: ReallocMem's mover frees the block it moved from with it, after the one proof
 * ReallocMem made. The asm routine enters FastMM_FreeMem after its LIVE_SMALL_BLOCK; the twin is
 * fm5_c_free_mem past fm5_release_live_small_block_span. Anything but the thread cache's push (caches
 * off, a full bin, a lost claim, ...) goes where FreeMem's own would, to code that decides again from
 * scratch; so a block freed by another thread meanwhile (two threads that free one block, a program's
 * bug) is reported as FreeMem would report it. */
int fm5_free_proved_small_block(void *p, fm5_small_span *span, struct fm5_small_manager *manager);
int fm5_c_free_proved_small_block(void *p, fm5_small_span *span, struct fm5_small_manager *manager);

/* Twins of the debug fills and the zero fill (fm5_c_debug_fill_allocated, fm5_c_debug_fill_freed,
 * fm5_c_zero_fill: debug/debug_fill.h) and of the freed-pattern check (fm5_c_debug_freed_pattern_intact:
 * debug/debug_freed_check.h), declared there so that the debug layer needs nothing from this one. */
#include "debug/debug_fill.h"
#include "debug/debug_freed_check.h"

#endif
