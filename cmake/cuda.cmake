# The CUDA backend's toolchain (specs/cuda_backend.md §2): decides MOGSERVE_CUDA from
# MOGSERVE_WITH_CUDA (OFF, ON, AUTO) and, when ON, enables the CUDA language, finds the toolkit
# and cuDNN (which has no CMake package: MOGSERVE_CUDNN_INCLUDE_DIR, MOGSERVE_CUDNN_LIBRARY).
# AUTO is ON where a working nvcc, a CUDA toolkit >= 12.8 with cuBLASLt, cudnn.h of cuDNN >= 9
# (cudnn_version.h) and libcudnn are found, except in sanitizer and fuzz builds (nvcc takes no
# -fsanitize, and those builds test the host code only). AUTO never fails the configuration:
# whatever is missing or too old is one STATUS line and a build without CUDA. ON fails naming it.
if(NOT MOGSERVE_WITH_CUDA MATCHES "^(OFF|ON|AUTO)$")
  message(FATAL_ERROR "MOGSERVE_WITH_CUDA must be OFF, ON or AUTO, not '${MOGSERVE_WITH_CUDA}'")
endif()

# Why the CUDA backend cannot be built here ("" when it can), checked before the CUDA language
# is enabled: enable_language and a REQUIRED find_package cannot be undone or fail softly.
function(_mogserve_find_cuda out)
  include(CheckLanguage)
  check_language(CUDA)
  # check_language keeps a CMAKE_CUDA_COMPILER given on the command line without trying it.
  if(NOT CMAKE_CUDA_COMPILER OR (IS_ABSOLUTE "${CMAKE_CUDA_COMPILER}" AND
                                 NOT EXISTS "${CMAKE_CUDA_COMPILER}"))
    set(${out} "no working CUDA compiler (nvcc) was found; put it on PATH or set CUDACXX"
        PARENT_SCOPE)
    return()
  endif()
  get_filename_component(cuda_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
  get_filename_component(cuda_root "${cuda_bin}" DIRECTORY)
  # The toolkit of that nvcc (FindCUDAToolkit searches CUDAToolkit_ROOT/bin first).
  if(NOT DEFINED CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT})
    set(CUDAToolkit_ROOT "${cuda_root}")
  endif()
  find_package(CUDAToolkit 12.8)
  if(NOT CUDAToolkit_FOUND)
    set(where "${CUDAToolkit_ROOT}")
    if(where STREQUAL "")
      set(where "$ENV{CUDAToolkit_ROOT}")
    endif()
    string(CONCAT why "no CUDA toolkit 12.8 or newer at ${where} (found: "
                      "'${CUDAToolkit_VERSION}'); nvcc: ${CMAKE_CUDA_COMPILER}")
    set(${out} "${why}" PARENT_SCOPE)
    return()
  endif()
  if(NOT TARGET CUDA::cublasLt OR NOT TARGET CUDA::cudart_static)
    string(CONCAT why "the CUDA toolkit ${CUDAToolkit_VERSION} at ${cuda_root} has no cuBLASLt "
                      "or no static cudart")
    set(${out} "${why}" PARENT_SCOPE)
    return()
  endif()
  # nvcc may be a wrapper script outside the toolkit (/usr/local/bin/nvcc exec'ing
  # /usr/local/cuda-13.0/bin/nvcc), so cuda_root is only one guess: FindCUDAToolkit asks nvcc
  # for the real toolkit root (CUDAToolkit_LIBRARY_ROOT), where the cuDNN tarball usually lands.
  set(cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_ROOT} ${cuda_root}
                  /usr/local/cuda)
  find_path(MOGSERVE_CUDNN_INCLUDE_DIR cudnn.h
            HINTS ${cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include include/x86_64-linux-gnu)
  find_library(MOGSERVE_CUDNN_LIBRARY NAMES cudnn
               HINTS ${cudnn_hints} ${CUDAToolkit_LIBRARY_DIR}
               PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu)
  if(NOT MOGSERVE_CUDNN_INCLUDE_DIR)
    set(${out} "cudnn.h was not found; set CUDNN_ROOT to the cuDNN 9 prefix" PARENT_SCOPE)
    return()
  endif()
  if(NOT MOGSERVE_CUDNN_LIBRARY)
    set(${out} "libcudnn was not found; set CUDNN_ROOT to the cuDNN 9 prefix" PARENT_SCOPE)
    return()
  endif()
  # cuDNN 8 and later keep the version in cudnn_version.h (cuDNN 7 and older: in cudnn.h).
  set(version_header "${MOGSERVE_CUDNN_INCLUDE_DIR}/cudnn_version.h")
  if(NOT EXISTS "${version_header}")
    string(CONCAT why "${MOGSERVE_CUDNN_INCLUDE_DIR} has cudnn.h but no cudnn_version.h "
                      "(cuDNN 7 or older?); the CUDA backend needs cuDNN 9")
    set(${out} "${why}" PARENT_SCOPE)
    return()
  endif()
  file(STRINGS "${version_header}" lines REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
  set(version "")
  foreach(part MAJOR MINOR PATCHLEVEL)
    if("${lines}" MATCHES "CUDNN_${part} ([0-9]+)")
      list(APPEND version "${CMAKE_MATCH_1}")
    else()
      list(APPEND version "?")
    endif()
  endforeach()
  list(JOIN version "." version)
  if(NOT version MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$" OR version VERSION_LESS 9.0)
    set(${out} "cuDNN ${version} at ${MOGSERVE_CUDNN_INCLUDE_DIR}: the CUDA backend needs cuDNN 9"
        PARENT_SCOPE)
    return()
  endif()
  set(MOGSERVE_CUDNN_VERSION "${version}" PARENT_SCOPE)
  set(${out} "" PARENT_SCOPE)
endfunction()

set(MOGSERVE_CUDA OFF)
if(MOGSERVE_WITH_CUDA STREQUAL "AUTO" AND (MOGSERVE_SANITIZE OR MOGSERVE_FUZZ))
  message(STATUS "MOGSERVE_WITH_CUDA=AUTO: no CUDA backend in sanitizer and fuzz builds")
elseif(NOT MOGSERVE_WITH_CUDA STREQUAL "OFF")
  # Before the language is enabled, which would otherwise pick the compiler's default.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80;86;89;90" CACHE STRING
        "CUDA architectures: SASS and PTX for each (A100, A10/RTX 30, L4/RTX 40, H100/H200)")
  endif()
  _mogserve_find_cuda(_mogserve_no_cuda)
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
  message(STATUS "CUDA backend: nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures "
                 "${CMAKE_CUDA_ARCHITECTURES}, cuDNN ${MOGSERVE_CUDNN_VERSION} "
                 "(${MOGSERVE_CUDNN_LIBRARY})")
endif()
