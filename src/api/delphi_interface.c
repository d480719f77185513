/* fm5's TMemoryManagerEx and calls into another module's (api/delphi_interface.h). */
#include "api/delphi_interface.h"
#include "base/platform.h"

void *FM5_CALL fm5_delphi_c_get_mem(size_t size)
{
    return FastMM_GetMem(size);
}

int FM5_CALL fm5_delphi_c_free_mem(void *p)
{
    return FastMM_FreeMem(p);
}

void *FM5_CALL fm5_delphi_c_realloc_mem(void *p, size_t size)
{
    return FastMM_ReallocMem(p, size);
}

void *FM5_CALL fm5_delphi_c_alloc_mem(size_t size)
{
    return FastMM_AllocMem(size);
}

int FM5_CALL fm5_delphi_c_register_expected_leak(void *p)
{
    return FastMM_RegisterExpectedMemoryLeak(p) == 0;
}

int FM5_CALL fm5_delphi_c_unregister_expected_leak(void *p)
{
    return FastMM_UnregisterExpectedMemoryLeak(p) == 0;
}

#if defined(FM5_WINDOWS) && defined(FM5_32BIT)
/* The register-convention thunks in front of the C functions (asm/delphi/register_convention_32.asm). */
extern char fm5_delphi_get_mem[], fm5_delphi_free_mem[], fm5_delphi_realloc_mem[], fm5_delphi_alloc_mem[],
    fm5_delphi_register_expected_leak[], fm5_delphi_unregister_expected_leak[];

const fm5_delphi_memory_manager fm5_delphi_manager = {
    fm5_delphi_get_mem, fm5_delphi_free_mem, fm5_delphi_realloc_mem, fm5_delphi_alloc_mem,
    fm5_delphi_register_expected_leak, fm5_delphi_unregister_expected_leak,
};
#else
/* Win64's Delphi convention is the platform's: the C functions are the entries. */
const fm5_delphi_memory_manager fm5_delphi_manager = {
    (void *)fm5_delphi_c_get_mem, (void *)fm5_delphi_c_free_mem, (void *)fm5_delphi_c_realloc_mem,
    (void *)fm5_delphi_c_alloc_mem, (void *)fm5_delphi_c_register_expected_leak,
    (void *)fm5_delphi_c_unregister_expected_leak,
};

size_t FM5_CALL fm5_delphi_call1(const void *code, size_t a)
{
    return ((size_t (*)(size_t))code)(a);
}

size_t FM5_CALL fm5_delphi_call2(const void *code, size_t a, size_t b)
{
    return ((size_t (*)(size_t, size_t))code)(a, b);
}
#endif
