# A MOGSERVE_WITH_TORCH=OFF build: `mogserve detect` must fail with exit code 3 (could not start)
# and say that this build has no CPU engine. Usage: cmake -DMOGSERVE=... -DPHOTO=... -P this.
execute_process(COMMAND ${MOGSERVE} detect ${PHOTO} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 3)
  message(FATAL_ERROR "mogserve detect exited ${rc}, expected 3; stderr: ${err}")
endif()
if(NOT err MATCHES "this build has no CPU engine" OR NOT err MATCHES "MOGSERVE_WITH_TORCH=OFF")
  message(FATAL_ERROR "mogserve detect did not say it has no CPU engine; stderr: ${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "mogserve detect wrote results without an engine: ${out}")
endif()
message(STATUS "ok: ${err}")
