#include "debug_options.h"

volatile unsigned fm5_active_debug_options;
