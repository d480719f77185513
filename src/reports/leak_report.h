/* Leak reports: on request, and when the DLL unloads if asked to. */
#ifndef FM5_LEAK_REPORT_H
#define FM5_LEAK_REPORT_H

#include "base/platform.h"

extern volatile int fm5_report_leaks_on_shutdown;

/* Called from DllMain when the process detaches: short lock timeouts, no DbgHelp loading. */
void fm5_report_leaks_at_shutdown(void);

#endif
