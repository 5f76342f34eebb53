# The CUDA backend's toolchain (specs/cuda_backend.md §2): decides MOGSERVE_CUDA from
# MOGSERVE_WITH_CUDA (OFF, ON, AUTO) and, when ON, enables the CUDA language, finds the toolkit
# and cuDNN (which has no CMake package: MOGSERVE_CUDNN_INCLUDE_DIR, MOGSERVE_CUDNN_LIBRARY).
# AUTO is ON where nvcc, cudnn.h and libcudnn are found, except in sanitizer and fuzz builds
# (nvcc takes no -fsanitize, and those builds test the host code only).
if(NOT MOGSERVE_WITH_CUDA MATCHES "^(OFF|ON|AUTO)$")
  message(FATAL_ERROR "MOGSERVE_WITH_CUDA must be OFF, ON or AUTO, not '${MOGSERVE_WITH_CUDA}'")
endif()

set(MOGSERVE_CUDA OFF)
if(MOGSERVE_WITH_CUDA STREQUAL "AUTO" AND (MOGSERVE_SANITIZE OR MOGSERVE_FUZZ))
  message(STATUS "MOGSERVE_WITH_CUDA=AUTO: no CUDA backend in sanitizer and fuzz builds")
elseif(NOT MOGSERVE_WITH_CUDA STREQUAL "OFF")
  # Before the language is enabled, which would otherwise pick the compiler's default.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80;86;89;90" CACHE STRING
        "CUDA architectures: SASS and PTX for each (A100, A10/RTX 30, L4/RTX 40, H100/H200)")
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  set(_mogserve_no_cuda "")
  if(NOT CMAKE_CUDA_COMPILER)
    set(_mogserve_no_cuda "no CUDA compiler (nvcc) was found; put it on PATH or set CUDACXX")
  else()
    get_filename_component(_mogserve_cuda_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
    get_filename_component(_mogserve_cuda_root "${_mogserve_cuda_bin}" DIRECTORY)
    find_path(MOGSERVE_CUDNN_INCLUDE_DIR cudnn.h
              HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${_mogserve_cuda_root}
              PATH_SUFFIXES include)
    find_library(MOGSERVE_CUDNN_LIBRARY NAMES cudnn
                 HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${_mogserve_cuda_root}
                 PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu)
    if(NOT MOGSERVE_CUDNN_INCLUDE_DIR)
      set(_mogserve_no_cuda "cudnn.h was not found; set CUDNN_ROOT to the cuDNN 9 prefix")
    elseif(NOT MOGSERVE_CUDNN_LIBRARY)
      set(_mogserve_no_cuda "libcudnn was not found; set CUDNN_ROOT to the cuDNN 9 prefix")
    endif()
  endif()
  if(_mogserve_no_cuda STREQUAL "")
    set(MOGSERVE_CUDA ON)
  elseif(MOGSERVE_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MOGSERVE_WITH_CUDA=ON: ${_mogserve_no_cuda}")
  else()
    message(STATUS "MOGSERVE_WITH_CUDA=AUTO: building without CUDA: ${_mogserve_no_cuda}")
  endif()
endif()

if(MOGSERVE_CUDA)
  enable_language(CUDA)
  find_package(CUDAToolkit 12.8 REQUIRED)
  # CMake 3.25 knows no C++20 flag for nvcc (it fails at generate time: "CUDA20 ... does not
  # support this"); nvcc >= 12 with GCC >= 10 takes -std=c++20.
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
  file(STRINGS "${MOGSERVE_CUDNN_INCLUDE_DIR}/cudnn_version.h" _mogserve_cudnn_version_lines
       REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
  set(MOGSERVE_CUDNN_VERSION "")
  foreach(_part MAJOR MINOR PATCHLEVEL)
    string(REGEX MATCH "CUDNN_${_part} ([0-9]+)" _m "${_mogserve_cudnn_version_lines}")
    list(APPEND MOGSERVE_CUDNN_VERSION "${CMAKE_MATCH_1}")
  endforeach()
  list(JOIN MOGSERVE_CUDNN_VERSION "." MOGSERVE_CUDNN_VERSION)
  if(MOGSERVE_CUDNN_VERSION VERSION_LESS 9.0)
    message(FATAL_ERROR "cuDNN ${MOGSERVE_CUDNN_VERSION} at ${MOGSERVE_CUDNN_INCLUDE_DIR}: "
                        "the CUDA backend needs cuDNN 9")
  endif()
  message(STATUS "CUDA backend: nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures "
                 "${CMAKE_CUDA_ARCHITECTURES}, cuDNN ${MOGSERVE_CUDNN_VERSION} "
                 "(${MOGSERVE_CUDNN_LIBRARY})")
endif()
