#include "kernels/one_openmp_thread.h"

#include <omp.h>

namespace weft::internal {

OneOpenMpThread::OneOpenMpThread() : previous_(omp_get_max_threads()) {
  if (previous_ != 1) omp_set_num_threads(1);
}

OneOpenMpThread::~OneOpenMpThread() {
  if (previous_ != 1) omp_set_num_threads(previous_);
}

}  // namespace weft::internal
