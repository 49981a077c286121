# LibTorch for the CMake build: dtensor_torch (headers, libtorch_cpu, libc10)
# and, from a CUDA LibTorch, dtensor_torch_cuda (libtorch_cuda, libc10_cuda),
# as Bazel's @libtorch//:torch and :torch_cuda (Note [Which LibTorch] in
# third_party/system_libs.bzl). By hand rather than through TorchConfig.cmake,
# which a CPU build of a CUDA LibTorch does not need (it wants nvcc and the
# CUDA architectures). Both targets are exported with absolute paths: the
# installed package uses the LibTorch it was built with.
set(LIBTORCH "" CACHE PATH "LibTorch root: the directory with include/ and lib/ (a PyTorch package dir works)")
if(NOT LIBTORCH AND TORCH_INSTALL_PREFIX)
  set(LIBTORCH "${TORCH_INSTALL_PREFIX}")
endif()
if(NOT LIBTORCH)
  execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import os, torch; print(os.path.dirname(torch.__file__))"
                  OUTPUT_VARIABLE _torch_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(LIBTORCH "${_torch_dir}")
endif()
if(NOT EXISTS "${LIBTORCH}/include/torch/csrc/api/include")
  message(FATAL_ERROR "LIBTORCH='${LIBTORCH}' is not a LibTorch (no include/torch/csrc/api/include): "
          "set -DLIBTORCH=<dir with include/ and lib/>, e.g. "
          "$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))'), or /usr for Debian's libtorch-dev")
endif()
set(_hints "${LIBTORCH}/lib" "${LIBTORCH}/lib/x86_64-linux-gnu" "${LIBTORCH}/lib64")
find_library(DTENSOR_TORCH_CPU_LIBRARY torch_cpu HINTS ${_hints} NO_DEFAULT_PATH REQUIRED)
find_library(DTENSOR_C10_LIBRARY c10 HINTS ${_hints} NO_DEFAULT_PATH REQUIRED)
find_library(DTENSOR_TORCH_CUDA_LIBRARY torch_cuda HINTS ${_hints} NO_DEFAULT_PATH)
find_library(DTENSOR_C10_CUDA_LIBRARY c10_cuda HINTS ${_hints} NO_DEFAULT_PATH)
get_filename_component(DTENSOR_TORCH_LIBRARY_DIR "${DTENSOR_TORCH_CPU_LIBRARY}" DIRECTORY)
# 2.9+ keep the numbers in torch/headeronly/version.h, older in the API's.
set(_version_h "${LIBTORCH}/include/torch/headeronly/version.h")
if(NOT EXISTS "${_version_h}")
  set(_version_h "${LIBTORCH}/include/torch/csrc/api/include/torch/version.h")
endif()
file(STRINGS "${_version_h}" _v REGEX "#define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE "[^;]*_(MAJOR|MINOR|PATCH) +([0-9]+)" "\\2" _v "${_v}")
string(REPLACE ";" "." DTENSOR_LIBTORCH_VERSION "${_v}")
message(STATUS "dtensor: LibTorch ${DTENSOR_LIBTORCH_VERSION} at ${LIBTORCH}")

# The include dirs a LibTorch tree needs; Debian's are in /usr/include already.
set(_torch_includes "")
if(NOT LIBTORCH STREQUAL "/usr")
  set(_torch_includes "${LIBTORCH}/include")
endif()
list(APPEND _torch_includes "${LIBTORCH}/include/torch/csrc/api/include")

# -D_GLIBCXX_USE_CXX11_ABI must match LibTorch's (pip wheels before 2.7 used
# the old one): libc10 exports std::__cxx11 symbols only with the new ABI.
set(TORCH_CXX11_ABI "" CACHE STRING "0 or 1, as torch._C._GLIBCXX_USE_CXX11_ABI; empty: read off libc10")
if(TORCH_CXX11_ABI STREQUAL "")
  execute_process(COMMAND sh -c "nm -D --defined-only '${DTENSOR_C10_LIBRARY}' | grep -q __cxx11"
                  RESULT_VARIABLE _abi_grep)
  if(_abi_grep EQUAL 0)
    set(TORCH_CXX11_ABI 1)
  else()
    set(TORCH_CXX11_ABI 0)
  endif()
endif()

add_library(dtensor_torch INTERFACE)
target_include_directories(dtensor_torch SYSTEM INTERFACE ${_torch_includes})
target_compile_definitions(dtensor_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=${TORCH_CXX11_ABI})
# LibTorch is built with Gloo; its c10d Gloo headers need this define.
target_compile_definitions(dtensor_torch INTERFACE USE_C10D_GLOO)
# --no-as-needed: LibTorch registers its operators from static initialisers,
# so a library no symbol of ours names must still be loaded. One -Wl item per
# library: CMake de-duplicates repeated flags, so a second
# "-Wl,--no-as-needed" item vanished and libtorch_cuda was linked as-needed,
# that is not at all (every CUDA op then failed on a GPU host).
function(_dtensor_link_always target)
  foreach(_lib IN LISTS ARGN)
    target_link_libraries(${target} INTERFACE "-Wl,--no-as-needed,${_lib},--as-needed")
  endforeach()
endfunction()
_dtensor_link_always(dtensor_torch "${DTENSOR_TORCH_CPU_LIBRARY}" "${DTENSOR_C10_LIBRARY}")
target_link_libraries(dtensor_torch INTERFACE "-Wl,-rpath,${DTENSOR_TORCH_LIBRARY_DIR}" pthread)

set(_torch_cuda_target "")
if(DTENSOR_TORCH_CUDA_LIBRARY AND DTENSOR_C10_CUDA_LIBRARY)
  add_library(dtensor_torch_cuda INTERFACE)
  target_compile_definitions(dtensor_torch_cuda INTERFACE DTENSOR_TORCH_HAS_CUDA)
  target_link_libraries(dtensor_torch_cuda INTERFACE dtensor_torch)
  _dtensor_link_always(dtensor_torch_cuda "${DTENSOR_TORCH_CUDA_LIBRARY}" "${DTENSOR_C10_CUDA_LIBRARY}")
  set(_torch_cuda_target dtensor_torch_cuda)
endif()
