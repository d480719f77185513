/* FM5_STATIC drops __declspec(dllimport), so these calls need the import library's jump thunks:
 * on i686 those are the cdecl symbols _FastMM_GetMem etc., which the .lib must define. */
#define FM5_STATIC
#define FM5_IMPORT_CHECKS_NAME fm5_checks_thunk
#include "import_checks.h"
