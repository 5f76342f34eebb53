// Facts about the CPU this process runs on.
#pragma once

namespace mogserve {

// Number of CPU cores this process may run on (its affinity mask), at least 1.
int AvailableCores();

}  // namespace mogserve
