/* fm5 as Delphi code sees a memory manager: the TMemoryManagerEx record of the Delphi RTL, with entries
 * in Delphi's default calling convention, and calls the other way, into such a record.
 *
 * Delphi's default convention ("register") is not one C can declare on Win32: the first three
 * arguments in EAX, EDX and ECX, the rest pushed left to right, the callee removing them, Boolean
 * results in AL. So on Win32 the entries are NASM thunks (asm/delphi/register_convention_32.asm) that
 * call the C functions below, and calls into another manager's entries go through NASM callers; they
 * are interface glue, not fast paths, and exist in every Win32 build, pure C included. On Win64 Delphi
 * uses the Microsoft x64 convention and the entries are these C functions themselves.
 *
 * Users: BorlndMM.dll (its Sys* exports are these entries) and memory-manager sharing
 * (api/sharing_windows.c publishes fm5's record and forwards to another module's). */
#ifndef FM5_DELPHI_INTERFACE_H
#define FM5_DELPHI_INTERFACE_H

#include <stddef.h>
#include "fm5.h"

/* Delphi's TMemoryManagerEx: six code pointers, in this order (System.pas since Delphi 2006). */
typedef struct fm5_delphi_memory_manager {
    void *get_mem;                    /* function(Size: NativeInt): Pointer */
    void *free_mem;                   /* function(P: Pointer): Integer, 0 when freed */
    void *realloc_mem;                /* function(P: Pointer; Size: NativeInt): Pointer */
    void *alloc_mem;                  /* function(Size: NativeInt): Pointer, zero-filled */
    void *register_expected_leak;     /* function(P: Pointer): Boolean */
    void *unregister_expected_leak;   /* function(P: Pointer): Boolean */
} fm5_delphi_memory_manager;

/* fm5's own record: entries a Delphi module (or another fm5) may call with Delphi's convention. */
extern const fm5_delphi_memory_manager fm5_delphi_manager;

/* The C functions behind the entries: FastMM_GetMem and friends with Delphi's results (a Boolean, 1 or
 * 0, where fm5's C API answers 0 or -1). On Win64 they are the entries. */
void *FM5_CALL fm5_delphi_c_get_mem(size_t size);
int FM5_CALL fm5_delphi_c_free_mem(void *p);
void *FM5_CALL fm5_delphi_c_realloc_mem(void *p, size_t size);
void *FM5_CALL fm5_delphi_c_alloc_mem(size_t size);
int FM5_CALL fm5_delphi_c_register_expected_leak(void *p);
int FM5_CALL fm5_delphi_c_unregister_expected_leak(void *p);

/* Calls into a Delphi-convention function `code` with one or two pointer-sized arguments and returns
 * what it left in EAX/RAX (a Boolean result is its low byte). */
size_t FM5_CALL fm5_delphi_call1(const void *code, size_t a);
size_t FM5_CALL fm5_delphi_call2(const void *code, size_t a, size_t b);

#endif
