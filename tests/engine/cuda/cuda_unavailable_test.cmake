# `mogserve detect --device cuda` (and `serve`) on a machine without a usable GPU must exit 3 (could not start)
# and name the cause (no usable NVIDIA driver / no CUDA device); with a GPU it detects (the GPU
# checks are cuda_tests and scripts/gpu_check.sh). Usage: cmake -DMOGSERVE=... -DPHOTO=... -P this.
execute_process(COMMAND ${MOGSERVE} detect --device cuda ${PHOTO} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 AND err MATCHES "CUDA device: cuda:0" AND out MATCHES "\"faces\"")
  message(STATUS "a GPU is present and detected: ${out}")
  return()
endif()
if(NOT rc EQUAL 3)
  message(FATAL_ERROR "mogserve detect --device cuda exited ${rc}, expected 3; stderr: ${err}")
endif()
if(NOT err MATCHES "unavailable: (no usable NVIDIA driver|no CUDA device)")
  message(FATAL_ERROR "mogserve detect --device cuda did not name the cause; stderr: ${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "mogserve detect --device cuda wrote results: ${out}")
endif()
# `serve` too: it stops before listening.
execute_process(COMMAND ${MOGSERVE} serve --device cuda --port 0 TIMEOUT 60 RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE serve_err)
if(NOT rc EQUAL 3 OR NOT serve_err MATCHES "cannot start the engine: unavailable")
  message(FATAL_ERROR "mogserve serve --device cuda exited ${rc}; stderr: ${serve_err}")
endif()
# A malformed device is a usage error (exit 2) naming the allowed forms.
execute_process(COMMAND ${MOGSERVE} detect --device cuda:x ${PHOTO} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err2)
if(NOT rc EQUAL 2 OR NOT err2 MATCHES "--device: device 'cuda:x'.*allowed: cpu, cuda, cuda:N")
  message(FATAL_ERROR "mogserve detect --device cuda:x exited ${rc}; stderr: ${err2}")
endif()
message(STATUS "ok: ${err}")
