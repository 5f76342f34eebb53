// The umbrella header of the mogserve library: #include <mogserve/mogserve.h> and link
// mogserve::mogserve (CMake: find_package(mogserve)) or `pkg-config --libs mogserve`.
#pragma once

#include "mogserve/align.h"
#include "mogserve/anonymize.h"
#include "mogserve/detector.h"
#include "mogserve/options.h"
#include "mogserve/result.h"
#include "mogserve/status.h"
