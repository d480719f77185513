/* Calls through the import library's __imp_ pointers, as code compiled against fm5.h does. */
#define FM5_IMPORT_CHECKS_NAME fm5_checks_dllimport
#include "import_checks.h"
