// zlib, for gzip bodies in the test server (Debian: zlib1g-dev).
#include <zlib.h>
