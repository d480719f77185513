#include "environment_settings.h"
#include "fm5.h"
#include "platform.h"

/* Returns 1 and the value when the variable is set to a decimal number. */
static int read_number(const char *name, unsigned *value)
{
    char text[16];
    DWORD length = GetEnvironmentVariableA(name, text, sizeof text);
    if (length == 0 || length >= sizeof text)
        return 0;
    unsigned result = 0;
    for (DWORD i = 0; i < length; i++) {
        if (text[i] < '0' || text[i] > '9' || result > 100000000u)
            return 0;
        result = result * 10 + (unsigned)(text[i] - '0');
    }
    *value = result;
    return 1;
}

void fm5_apply_environment_settings(void)
{
    unsigned value;
    if (read_number("FM5_STACK_DEPTH", &value))
        FastMM_SetDebugModeStackTraceEntryCount(value);
    char path[1024];
    DWORD length = GetEnvironmentVariableA("FM5_LOG", path, sizeof path);
    if (length > 0 && length < sizeof path)
        FastMM_SetEventLogFilename(path);
    if (read_number("FM5_DEBUG", &value) && value) {
        FastMM_EnterDebugMode();
        FastMM_SetReportMemoryLeaksOnShutdown(1);
    }
    if (read_number("FM5_LEAK_REPORT", &value))
        FastMM_SetReportMemoryLeaksOnShutdown(value != 0);
}
