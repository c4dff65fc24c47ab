/* A shared library that is not a policy: it exports no descriptor. */
#include "plugin.h"

INFERSCALE_POLICY_EXPORT int some_other_function(void) {
  return 42;
}
