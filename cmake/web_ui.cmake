# The web UI (DESIGN.md §5): web/ and the chart library from node_modules/ (put there by
# scripts/setup.sh) become byte arrays in a generated .cpp that is compiled into mogserve_server,
# so the binary serves the UI with nothing to load from disk or the network at run time.
#
# Included from the top CMakeLists.txt after mogserve_server is defined.

set(MOGSERVE_WEB_DIR ${PROJECT_SOURCE_DIR}/web)
file(GLOB_RECURSE MOGSERVE_WEB_FILES CONFIGURE_DEPENDS ${MOGSERVE_WEB_DIR}/*)
list(FILTER MOGSERVE_WEB_FILES EXCLUDE REGEX "(~|\\.swp)$")

# Manifest lines: "<url path>\t<file>". URL paths are /ui/<path under web/>; vendor code lives
# under /ui/vendor/.
set(MOGSERVE_WEB_MANIFEST "")
set(MOGSERVE_WEB_INPUTS "")
foreach(file IN LISTS MOGSERVE_WEB_FILES)
  file(RELATIVE_PATH rel ${MOGSERVE_WEB_DIR} ${file})
  string(APPEND MOGSERVE_WEB_MANIFEST "/ui/${rel}\t${file}\n")
  list(APPEND MOGSERVE_WEB_INPUTS ${file})
endforeach()

# uPlot (MIT), pinned and integrity-checked by scripts/setup.sh. Globbed with CONFIGURE_DEPENDS so
# that running setup after configuring is noticed by the next build.
file(GLOB MOGSERVE_UPLOT_FILES CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/node_modules/uplot/dist/uPlot.iife.min.js
     ${PROJECT_SOURCE_DIR}/node_modules/uplot/dist/uPlot.min.css
     ${PROJECT_SOURCE_DIR}/node_modules/uplot/LICENSE)
if(MOGSERVE_UPLOT_FILES)
  foreach(file IN LISTS MOGSERVE_UPLOT_FILES)
    get_filename_component(name ${file} NAME)
    if(name STREQUAL "LICENSE")
      set(name "uPlot.LICENSE.txt")
    endif()
    string(APPEND MOGSERVE_WEB_MANIFEST "/ui/vendor/${name}\t${file}\n")
    list(APPEND MOGSERVE_WEB_INPUTS ${file})
  endforeach()
else()
  # Stand-ins with the same names, so that the page loads without 404s and the dashboard falls
  # back to numbers.
  message(WARNING "node_modules/uplot is missing: the web UI's dashboard will show numbers "
                  "without charts. Run scripts/setup.sh to fetch it.")
  set(stub_dir ${CMAKE_BINARY_DIR}/generated/web_stub)
  file(CONFIGURE OUTPUT ${stub_dir}/uPlot.iife.min.js
       CONTENT "// uPlot is missing from this build: run scripts/setup.sh and rebuild.\n")
  file(CONFIGURE OUTPUT ${stub_dir}/uPlot.min.css CONTENT "/* uPlot is missing. */\n")
  foreach(name uPlot.iife.min.js uPlot.min.css)
    string(APPEND MOGSERVE_WEB_MANIFEST "/ui/vendor/${name}\t${stub_dir}/${name}\n")
    list(APPEND MOGSERVE_WEB_INPUTS ${stub_dir}/${name})
  endforeach()
endif()

set(MOGSERVE_WEB_MANIFEST_FILE ${CMAKE_BINARY_DIR}/generated/web_assets.manifest)
set(MOGSERVE_WEB_ASSETS_CPP ${CMAKE_BINARY_DIR}/generated/web_assets.cpp)
file(CONFIGURE OUTPUT ${MOGSERVE_WEB_MANIFEST_FILE} CONTENT "${MOGSERVE_WEB_MANIFEST}")

add_custom_command(
  OUTPUT ${MOGSERVE_WEB_ASSETS_CPP}
  COMMAND ${CMAKE_COMMAND} -DMANIFEST=${MOGSERVE_WEB_MANIFEST_FILE}
          -DOUTPUT=${MOGSERVE_WEB_ASSETS_CPP} -P ${PROJECT_SOURCE_DIR}/cmake/embed_assets.cmake
  DEPENDS ${MOGSERVE_WEB_INPUTS} ${MOGSERVE_WEB_MANIFEST_FILE}
          ${PROJECT_SOURCE_DIR}/cmake/embed_assets.cmake
  COMMENT "Embedding the web UI (${PROJECT_SOURCE_DIR}/web) into web_assets.cpp"
  VERBATIM)
target_sources(mogserve_server PRIVATE ${MOGSERVE_WEB_ASSETS_CPP})
